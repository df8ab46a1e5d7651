"""Property tests: the lookup boundaries either raise the documented error or equal the plain loop.

Every case is generated from valid and invalid inputs alike (IDs of every kind and dtype, token
shapes with bad, zero and huge extents, ragged nests, non-contiguous and read-only arrays). The
expected outcome comes from the reference models in ``fuzz_support``; in both outcomes the
table values, the stored gradient (dense and row-sparse) and its revision stay as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from llm_from_scratch.autograd import (
    GatherIndexCountError,
    GatherIndexDtypeError,
    GatherIndexOutOfBoundsError,
    GatherIndexTypeError,
    GatherTableRankError,
    IndexContainerError,
    InvalidShapeError,
    TensorValue,
)
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingInitializationError,
    EmptyVocabularyError,
    NamedParameter,
    SplitMix64,
    TableRankError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdDtypeError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
    ZeroEmbeddingWidthError,
)
from llm_from_scratch.nn.init import (
    EmptyNameSegmentError,
    EmptyParameterNameError,
    FanValueError,
    GeneratorTypeError,
    InvalidNameByteError,
    ParameterNameTypeError,
    ParameterTableError,
    ZeroFanInError,
    ZeroFanOutError,
)
from llm_from_scratch.tensor import ShapeOverflowError, Tensor, TensorValueTypeError

from fuzz_support import (
    HUGE_EXTENTS,
    INTEGER_DTYPES,
    Outcome,
    Raises,
    ReferenceSplitMix64,
    Returns,
    check_outcome,
    element_count,
    id_arrays,
    id_items,
    leaf_state,
    numpy_cannot_hold,
    numpy_integers,
    plain_lookup_array,
    reference_layout,
    reference_nested,
    reference_scan,
    shapes,
)

# The layer under test, in one of three stored-gradient states ------------------------------------


@st.composite
def layers(draw: st.DrawFn) -> Embedding:
    """A small layer whose stored gradient is all-zero, row-sparse, or dense."""
    rows, width = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    layer = Embedding.new("token_embedding.weight", rows, width, SplitMix64.from_seed(7), dtype)
    leaf = layer.table.tensor
    history = draw(st.sampled_from(["untouched", "row-sparse", "dense"]))
    if history != "untouched":
        ids = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=5))
        seed = np.arange(len(ids) * width, dtype=dtype).reshape(len(ids), width) - 1.5
        layer.forward(ids, (len(ids),)).backward_with_seed(seed)
    if history == "dense":  # a dense operation on the table turns its stored gradient dense
        leaf.mul(Tensor(leaf.shape, np.full(leaf.shape, 0.5), dtype=dtype)).sum().backward()
        assert leaf.sparse_gradient is None
    return layer


def expected_lookup(
    table: np.ndarray[Any, Any], ids: object, shape: object, boundary: str
) -> Outcome:
    """The contract's checks, in order, for ``Embedding.forward`` or ``gather_rows``."""
    rows, width = table.shape
    forward = boundary == "forward"
    layout = reference_layout(shape)
    if isinstance(layout, Raises):
        if forward:
            return Raises(TokenShapeError, {"token_shape": shape}, cause=layout)
        return Raises(InvalidShapeError, {"what": "gather index shape"}, cause=layout)
    scan = reference_scan(ids, rows)
    if scan.container_problem:
        return Raises(TokenIdContainerError if forward else IndexContainerError)
    if scan.count != layout[1]:
        attributes = {"expected": layout[1], "actual": scan.count}
        return Raises(TokenCountMismatchError if forward else GatherIndexCountError, attributes)
    extents = tuple(int(extent) for extent in shape)  # type: ignore[attr-defined]
    output_layout = reference_layout((*extents, width))
    if not isinstance(output_layout, Raises) and numpy_cannot_hold(
        (*extents, width), table.dtype.itemsize
    ):  # only a zero-count shape can get this far
        output_layout = Raises(ShapeOverflowError, {"shape": (*extents, width)})
    if isinstance(output_layout, Raises):  # found before any ID is read
        if forward:
            return Raises(TokenShapeError, {"token_shape": shape}, cause=output_layout)
        return Raises(InvalidShapeError, {"what": "row gather output shape"}, output_layout)
    if scan.bad_kind == "dtype":
        error = TokenIdDtypeError if forward else GatherIndexDtypeError
        return Raises(error, {"position": None, "value": None, "dtype": scan.bad_value})
    if scan.bad_kind == "type":
        where = {"position": scan.bad_position, "value": scan.bad_value}
        return Raises(TokenIdTypeError if forward else GatherIndexTypeError, where)
    if scan.bad_kind == "bounds":
        if forward:
            return Raises(
                TokenIdOutOfBoundsError,
                {"id": scan.bad_value, "position": scan.bad_position, "vocabulary_size": rows},
            )
        return Raises(
            GatherIndexOutOfBoundsError,
            {"index": scan.bad_value, "position": scan.bad_position, "rows": rows},
        )
    return Returns(plain_lookup_array(table, scan.ids).reshape((*extents, width)))


@st.composite
def flat_id_containers(draw: st.DrawFn, rows: int, shape: object) -> object:
    """Flat IDs for ``shape``: usually its element count of them, sometimes one off or none."""
    count = element_count(shape)
    if count is None or count > 24:
        count = draw(st.integers(0, 4))
    else:
        count = max(0, count + draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
    form = draw(st.sampled_from(["list", "list", "tuple", "array", "array", "other"]))
    if form == "array":
        return draw(id_arrays(rows, count))
    if form == "other":
        return draw(
            st.sampled_from(
                [None, 3, "012", b"\x00", {0: 1}, {0}, np.zeros((1, count), dtype=np.int64)]
            )
        )
    items = draw(st.lists(id_items(rows), min_size=count, max_size=count))
    return items if form == "list" else tuple(items)


def check_lookup(call: Any, table: np.ndarray[Any, Any], expected: Outcome) -> None:
    result = check_outcome(call, expected)
    if isinstance(expected, Returns):
        assert isinstance(result, TensorValue) and result.kind == "operation"
        assert result.dtype == table.dtype
        assert result.shape == expected.value.shape  # type: ignore[attr-defined]
        assert result.numpy().tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]


@given(layers(), st.data())
def test_forward_raises_the_first_documented_error_or_equals_the_plain_loop(
    layer: Embedding, data: st.DataObject
) -> None:
    shape = data.draw(shapes(), label="token_shape")
    ids = data.draw(flat_id_containers(layer.vocabulary_size, shape), label="token_ids")
    leaf = layer.table.tensor
    before, table = leaf_state(leaf), leaf.value_snapshot().numpy()
    expected = expected_lookup(table, ids, shape, "forward")
    check_lookup(lambda: layer.forward(ids, shape), table, expected)  # type: ignore[arg-type]
    assert leaf_state(leaf) == before


@given(layers(), st.data())
def test_gather_rows_raises_the_first_documented_error_or_equals_the_plain_loop(
    layer: Embedding, data: st.DataObject
) -> None:
    shape = data.draw(shapes(), label="index_shape")
    ids = data.draw(flat_id_containers(layer.vocabulary_size, shape), label="indices")
    leaf = layer.table.tensor
    before, table = leaf_state(leaf), leaf.value_snapshot().numpy()
    expected = expected_lookup(table, ids, shape, "gather")
    check_lookup(lambda: leaf.gather_rows(ids, shape), table, expected)  # type: ignore[arg-type]
    assert leaf_state(leaf) == before


@given(
    st.lists(st.integers(0, 2), max_size=3).map(tuple).filter(lambda shape: len(shape) != 2),
    st.data(),
)
def test_gather_rows_on_a_table_of_another_rank_reports_the_rank_before_anything_else(
    table_shape: tuple[int, ...], data: st.DataObject
) -> None:
    count = element_count(table_shape) or 0
    leaf = TensorValue.parameter(Tensor(table_shape, np.arange(count, dtype=float)))
    shape = data.draw(shapes(), label="index_shape")
    ids = data.draw(flat_id_containers(3, shape), label="indices")
    before = leaf_state(leaf)
    check_outcome(
        lambda: leaf.gather_rows(ids, shape),  # type: ignore[arg-type]
        Raises(GatherTableRankError, {"rank": len(table_shape)}),
    )
    assert leaf_state(leaf) == before


# The shaped call: nested lists and arrays of any shape -----------------------------------------


def nested_ids(rows: int) -> st.SearchStrategy[object]:
    """Nested lists and tuples of IDs, regular or ragged, up to three levels deep."""
    return st.recursive(
        id_items(rows) | st.integers(0, rows - 1),
        lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
        max_leaves=12,
    )


@st.composite
def regular_nests(draw: st.DrawFn, rows: int) -> object:
    """A regular nest of valid IDs (so that most calls succeed)."""
    shape = draw(st.lists(st.integers(1, 3), max_size=3))
    flat = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=1)) * int(
        np.prod(shape, dtype=np.int64)
    )
    return np.array(flat, dtype=np.int64).reshape(shape).tolist()


@st.composite
def id_ndarrays(draw: st.DrawFn, rows: int) -> np.ndarray[Any, Any]:
    """IDs as an N-d array of any dtype, possibly transposed, reversed or read-only."""
    dtype = draw(st.sampled_from([*INTEGER_DTYPES, np.bool_, np.float64, np.object_]))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    if dtype is np.object_:
        elements: st.SearchStrategy[Any] = id_items(rows)
    elif dtype is np.bool_:
        elements = st.booleans()
    elif dtype is np.float64:
        elements = st.integers(0, rows - 1).map(float)
    else:
        elements = numpy_integers(dtype, -1, rows)
    array = draw(arrays(dtype, shape, elements=elements))
    if array.ndim >= 2 and draw(st.booleans()):
        array = array.T
    if array.ndim >= 1 and draw(st.booleans()):
        array = array[::-1]
    if draw(st.booleans()):
        array.flags.writeable = False
    return array


def expected_call(table: np.ndarray[Any, Any], ids: object) -> Outcome:
    """``layer(ids)``: an array's own shape is the token shape; nested lists must be regular."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind != "O":
        return expected_lookup(table, np.ravel(ids, order="C"), ids.shape, "forward")
    try:
        flat, shape = reference_nested(ids)
    except Exception:
        return Raises(TokenIdContainerError)
    return expected_lookup(table, flat, shape, "forward")


@given(layers(), st.data())
def test_calling_the_layer_raises_the_documented_error_or_equals_the_plain_loop(
    layer: Embedding, data: st.DataObject
) -> None:
    rows = layer.vocabulary_size
    ids = data.draw(
        st.one_of(nested_ids(rows), regular_nests(rows), id_ndarrays(rows)), label="ids"
    )
    leaf = layer.table.tensor
    before, table = leaf_state(leaf), leaf.value_snapshot().numpy()
    expected = expected_call(table, ids)
    check_lookup(lambda: layer(ids), table, expected)
    assert leaf_state(leaf) == before


# Construction: Embedding.new and Embedding.from_parameter -------------------------------------


def reference_name_error(name: object) -> Raises | None:
    """The contract's name rules, reported at the first bad byte."""
    if not isinstance(name, str):
        return Raises(ParameterNameTypeError, {"name_type": type(name).__name__})
    encoded = name.encode("utf-8", errors="surrogatepass")
    if not encoded:
        return Raises(EmptyParameterNameError, {"name": name})
    segment_start = 0
    for index, byte in enumerate(encoded):
        if byte == ord("."):
            if index == segment_start:
                return Raises(EmptyNameSegmentError, {"name": name, "index": index})
            segment_start = index + 1
        elif not (
            (chr(byte).islower() and chr(byte).isascii())
            or (chr(byte).isdigit() and byte < 128)
            or byte == ord("_")
        ):
            return Raises(InvalidNameByteError, {"name": name, "index": index, "byte": byte})
    if segment_start == len(encoded):
        return Raises(EmptyNameSegmentError, {"name": name, "index": len(encoded)})
    return None


def reference_fan_error(which: str, value: object) -> Raises | None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < 0:
        return Raises(FanValueError, {"which": which, "value": value})
    return None


def expected_new(name: object, rows: object, width: object, rng: object, dtype: object) -> Outcome:
    """Name, fans (type, then zero), generator, dtype, layout, memory; then the Xavier table."""
    name_error = reference_name_error(name)
    if name_error is not None:
        return Raises(EmbeddingInitializationError, cause=name_error)
    for which, value in (("fan-in", rows), ("fan-out", width)):
        fan_error = reference_fan_error(which, value)
        if fan_error is not None:
            return Raises(EmbeddingInitializationError, cause=fan_error)
    rows_, width_ = int(rows), int(width)  # type: ignore[call-overload]
    if rows_ == 0:
        return Raises(EmptyVocabularyError, {"vocabulary_size": 0}, cause=Raises(ZeroFanInError))
    if width_ == 0:
        return Raises(
            ZeroEmbeddingWidthError, {"embedding_width": 0}, cause=Raises(ZeroFanOutError)
        )
    if not isinstance(rng, SplitMix64):
        return Raises(
            EmbeddingInitializationError,
            cause=Raises(GeneratorTypeError, {"rng_type": type(rng).__name__}),
        )
    if dtype not in (np.float64, np.float32):
        return Raises(
            EmbeddingInitializationError,
            cause=Raises(ParameterTableError, cause=Raises(TensorValueTypeError)),
        )
    layout = reference_layout((rows_, width_))
    if isinstance(layout, Raises):
        return Raises(EmbeddingInitializationError, cause=Raises(ParameterTableError, cause=layout))
    if rows_ * width_ * np.dtype(dtype).itemsize > 2**63 - 1:  # NumPy cannot even ask for it
        return Raises(EmbeddingInitializationError, cause=Raises(ParameterTableError))
    reference = ReferenceSplitMix64(rng.state)
    limit = (6.0 / (rows_ + width_)) ** 0.5
    values = [limit * (2.0 * reference.next_unit() - 1.0) for _ in range(rows_ * width_)]
    table = np.array(values, dtype=np.float64).astype(dtype).reshape(rows_, width_)
    return Returns((table, reference.state))


def fans() -> st.SearchStrategy[object]:
    """Small fans, zero, and bad or huge ones (huge ones fail before any allocation)."""
    valid = st.integers(1, 4)
    return st.one_of(
        st.integers(0, 4),
        valid,
        valid,
        valid,
        valid,
        valid,
        st.sampled_from(INTEGER_DTYPES).flatmap(lambda d: numpy_integers(d, 0, 4)),
        st.integers(-3, -1),
        st.sampled_from([h for h in HUGE_EXTENTS if h >= 2**61]),
        st.booleans(),
        st.floats(0, 4),
        st.none(),
        st.just("3"),
    )


names = st.one_of(
    st.sampled_from(["token_embedding.weight", "w", "a.b_1"]),
    st.sampled_from(["token_embedding.weight", "w", "a.b_1"]),
    st.sampled_from(["token_embedding.weight", "w", "a.b_1"]),
    st.sampled_from(["", ".", "a.", "a..b", "Token"]),
    st.text(alphabet="ab._Z9 é\ud800", max_size=6),
    st.sampled_from([None, 7, b"w"]),
)


@given(
    names,
    fans(),
    fans(),
    st.one_of(
        *[st.integers(0, 2**64 - 1).map(SplitMix64.from_seed)] * 4, st.sampled_from([None, 7])
    ),
    st.sampled_from([np.float64, np.float64, np.float32, np.float32, np.int32, "garbage"]),
)
def test_new_raises_the_documented_error_or_builds_the_xavier_table_and_advances_the_generator(
    name: object, rows: object, width: object, rng: object, dtype: object
) -> None:
    state = rng.state if isinstance(rng, SplitMix64) else None
    expected = expected_new(name, rows, width, rng, dtype)
    layer = check_outcome(
        lambda: Embedding.new(name, rows, width, rng, dtype),  # type: ignore[arg-type]
        expected,
    )
    if isinstance(expected, Returns):
        table, advanced_state = expected.value  # type: ignore[misc]
        assert layer.table.name == name
        assert layer.table.tensor.numpy().tobytes() == table.tobytes()
        assert rng.state == advanced_state  # type: ignore[union-attr]
    elif state is not None:
        assert rng.state == state  # type: ignore[union-attr]


@given(st.lists(st.integers(0, 3), max_size=3).map(tuple))
def test_from_parameter_checks_rank_then_rows_then_width_and_keeps_the_same_leaf(
    shape: tuple[int, ...],
) -> None:
    count = element_count(shape) or 0
    table = NamedParameter.from_tensor("w", Tensor(shape, np.arange(count, dtype=float)))
    before = leaf_state(table.tensor)
    expected: Outcome
    if len(shape) != 2:
        expected = Raises(TableRankError, {"rank": len(shape)})
    elif shape[0] == 0:
        expected = Raises(EmptyVocabularyError, {"vocabulary_size": 0})
    elif shape[1] == 0:
        expected = Raises(ZeroEmbeddingWidthError, {"embedding_width": 0})
    else:
        expected = Returns()
    layer = check_outcome(lambda: Embedding.from_parameter(table), expected)
    if layer is not None:
        assert layer.table is table and layer.table.tensor.is_same_node(table.tensor)
        assert (layer.vocabulary_size, layer.embedding_width) == shape
    assert leaf_state(table.tensor) == before


def test_the_reference_models_agree_with_the_chapter_fixture() -> None:
    table = np.array([[10, 11], [20, 21], [30, 31], [40, 41]], dtype=float)
    expected = expected_lookup(table, [2, 1, 2], (1, 3), "forward")
    assert isinstance(expected, Returns)
    assert expected.value.tolist() == [[[30, 31], [20, 21], [30, 31]]]  # type: ignore[attr-defined]
    assert reference_nested([[1, 2], [3, 4]]) == ([1, 2, 3, 4], (2, 2))
    assert reference_scan(np.array([0, 9]), 4).bad_position == 1
