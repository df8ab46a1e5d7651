"""Property tests across the input classes of ``docs/errors.md`` ("Input classes"): arrays and
their views, numbers at their limits, crafted pickles and warnings, at the public entry points
that read them.

Every outcome is compared with a reference: a view's outcome with its plain copy's (or with the
reference models of ``tests/reference.py``), a crafted pickle's with the public construction of
the same data, a frozen ``max_norm`` lookup with the trainable one, which PyTorch's kernel
writes. Warnings are errors (``pyproject.toml``), so a warning that escapes fails the test.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    TensorValue,
)
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.autograd.value import restore_value
from llm_from_scratch.errors import (
    AllocationError,
    FormatError,
    IdError,
    LlmError,
    NonFiniteError,
    ShapeError,
    TableError,
    TapeError,
)
from llm_from_scratch.nn import (
    BagOptions,
    Embedding,
    EmbeddingBag,
    FrozenTable,
    LookupOptions,
    NamedParameter,
    functional,
)
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.tensor.storage import restore_tensor

from checks import (
    PicklePayload,
    check_outcome,
    outcome_of,
    raises_rule,
    unpickled,
    within_seconds,
)
from reference import (
    Raises,
    Returns,
    expected_bag_starts,
    expected_call,
    expected_from_numpy,
    expected_lookup,
    expected_tensor,
    plain_bag,
    pytorch_renorm,
)
from strategies import INTEGER_DTYPES, array_views

ROWS, WIDTH = 6, 3
ID_DTYPES = (*INTEGER_DTYPES, np.bool_, np.float64)
LIMIT = 2**63 - 1


def table_values(dtype: Any) -> np.ndarray[Any, Any]:
    return (np.arange(ROWS * WIDTH, dtype=np.float64).reshape(ROWS, WIDTH) * 0.75 - 5).astype(dtype)


def id_elements(dtype: Any) -> st.SearchStrategy[Any]:
    """Values of ``dtype``: mostly valid IDs, some out of range on either side."""
    if dtype is np.bool_:
        return st.booleans()
    if dtype is np.float64:
        return st.integers(0, ROWS - 1).map(float)
    info = np.iinfo(dtype)
    return st.integers(max(-2, int(info.min)), min(ROWS + 1, int(info.max)))


@st.composite
def id_views(draw: st.DrawFn, max_axes: int = 3, **options: Any) -> np.ndarray[Any, Any]:
    dtype = draw(st.sampled_from(ID_DTYPES))
    return draw(array_views(id_elements(dtype), dtype, max_axes, **options))


def same_outcome(first: Callable[[], Any], second: Callable[[], Any]) -> Any:
    """Both calls raise the same class with the same message, or both return; the two results."""
    one, one_error = outcome_of(first)
    two, two_error = outcome_of(second)
    event(f"outcome: {type(one_error).__name__ if one_error is not None else 'result'}")
    assert type(one_error) is type(two_error), (one_error, two_error)
    if one_error is not None:
        assert str(one_error) == str(two_error)
    return one, two


def same_values(ours: TensorValue, expected: np.ndarray[Any, Any]) -> None:
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    assert ours.numpy().tobytes() == expected.tobytes()


# IDs, offsets and per-sample weights as views -----------------------------------------------


@given(ids=id_views(), dtype=st.sampled_from([np.float64, np.float32]))
def test_the_layer_call_reads_a_view_as_its_plain_copy(ids: Any, dtype: Any) -> None:
    values = table_values(dtype)
    layer = Embedding.from_pretrained(values, freeze=False)
    expected = expected_call(values, np.array(ids, copy=True))
    result = check_outcome(lambda: layer(ids), expected)
    if isinstance(expected, Returns):
        same_values(result, expected.value)  # type: ignore[arg-type]


FLAT_KINDS = ("plain", "steps", "broadcast", "reversed")


@given(
    ids=id_views(max_axes=1, kinds=FLAT_KINDS),
    reshape=st.one_of(st.none(), st.lists(st.integers(0, 4), max_size=3).map(tuple)),
    boundary=st.sampled_from(["forward", "gather"]),
)
def test_forward_and_gather_rows_read_a_flat_view_as_its_plain_copy(
    ids: Any, reshape: tuple[int, ...] | None, boundary: str
) -> None:
    values = table_values(np.float64)
    shape = ids.shape if reshape is None else reshape
    expected = expected_lookup(values, np.array(ids, copy=True), shape, boundary)
    table = TensorValue.parameter(Tensor(values.shape, values))
    if boundary == "forward":
        layer = Embedding.from_parameter(NamedParameter.from_value("w", table))
        result = check_outcome(lambda: layer.forward(ids, shape), expected)
    else:
        result = check_outcome(lambda: table.gather_rows(ids, shape), expected)
    if isinstance(expected, Returns):
        same_values(result, expected.value)  # type: ignore[arg-type]


@given(
    ids=id_views(max_axes=2),
    offsets=st.one_of(
        st.none(),
        array_views(st.integers(-1, 8), np.int64, max_axes=1),
        array_views(st.integers(0, 3), np.uint8, max_axes=1),
    ),
    mode=st.sampled_from(["sum", "mean", "max"]),
    include_last=st.booleans(),
    padding=st.one_of(st.none(), st.integers(0, ROWS - 1)),
)
def test_a_bag_reads_view_ids_and_view_offsets_as_their_plain_copies(
    ids: Any, offsets: Any, mode: str, include_last: bool, padding: int | None
) -> None:
    values = table_values(np.float64)
    layer = EmbeddingBag.from_pretrained(values, freeze=False, mode=mode, padding_idx=padding)
    plain_ids = np.array(ids, copy=True)
    plain_offsets = None if offsets is None else np.array(offsets, copy=True)
    expected_ids = expected_call(values, plain_ids)
    expected: Any = expected_ids
    if isinstance(expected_ids, Returns):
        starts = expected_bag_starts(plain_ids.shape, plain_offsets, include_last)
        expected = starts
        if isinstance(starts, Returns):
            flat = [int(value) for value in plain_ids.reshape(-1).tolist()]
            bagged = plain_bag(values, flat, starts.value, mode, padding)  # type: ignore[arg-type]
            expected = Returns(bagged.output)
    result = check_outcome(lambda: layer(ids, offsets, include_last_offset=include_last), expected)
    if isinstance(expected, Returns):
        same_values(result, expected.value)  # type: ignore[arg-type]


@given(data=st.data(), ids=st.sampled_from([(2, 3), (6,), (0, 2)]))
def test_per_sample_weights_read_a_view_as_its_plain_copy(
    data: st.DataObject, ids: tuple[int, ...]
) -> None:
    shape = ids if data.draw(st.integers(0, 3)) else None  # mostly the IDs' shape
    weights = data.draw(
        st.one_of(
            array_views(st.floats(-4, 4, width=32), np.float32, max_axes=2, shape=shape),
            array_views(st.integers(-3, 3), np.int16, max_axes=2, shape=shape),
            array_views(st.booleans(), np.bool_, max_axes=2, shape=shape),
            array_views(st.floats(-1e300, 1e300), np.float64, max_axes=2, shape=shape),
        )
    )
    values = table_values(np.float32)
    layer = EmbeddingBag.from_pretrained(values, mode="sum")
    token_ids = (np.arange(int(np.prod(ids))) % ROWS).reshape(ids)
    offsets = None if len(ids) == 2 else [0, 2]
    plain = np.array(weights, copy=True)
    ours, theirs = same_outcome(
        lambda: layer(token_ids, offsets, per_sample_weights=weights),
        lambda: layer(token_ids, offsets, per_sample_weights=plain),
    )
    if plain.shape != ids:
        with raises_rule(IdError, "weights.shape"):
            layer(token_ids, offsets, per_sample_weights=weights)
    elif ours is not None:
        assert ours.numpy().tobytes() == theirs.numpy().tobytes()


# Tensors and seeds as views ------------------------------------------------------------------


@given(
    values=st.one_of(
        array_views(st.floats(allow_nan=True, width=64), np.float64),
        array_views(st.floats(-1e30, 1e30).map(lambda value: float(np.float32(value))), np.float32),
        array_views(st.integers(-(2**62), 2**62), np.int64),
        array_views(st.booleans(), np.bool_),
    ),
    dtype=st.sampled_from([None, np.float64, np.float32]),
    shape=st.one_of(st.none(), st.lists(st.integers(0, 4), max_size=3).map(tuple)),
)
def test_tensor_and_from_numpy_read_a_view_as_its_plain_copy(
    values: Any, dtype: Any, shape: tuple[int, ...] | None
) -> None:
    plain = np.array(values, copy=True)
    target = plain.shape if shape is None else shape
    expected = expected_tensor(target, plain, dtype)
    result = check_outcome(lambda: Tensor(target, values, dtype=dtype), expected)
    if isinstance(expected, Returns):
        assert result.numpy().tobytes() == Tensor(target, plain, dtype=dtype).numpy().tobytes()
    expected_numpy = expected_from_numpy(plain)
    converted = check_outcome(lambda: Tensor.from_numpy(values), expected_numpy)
    if isinstance(expected_numpy, Returns):
        assert converted.numpy().tobytes() == expected_numpy.value.tobytes()  # type: ignore[attr-defined]


@given(
    ids=st.lists(st.integers(0, ROWS - 1), min_size=1, max_size=6),
    seed=st.data(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_a_seed_view_gives_the_gradient_of_its_plain_copy(
    ids: list[int], seed: st.DataObject, dtype: Any
) -> None:
    values = table_values(dtype)
    shape = (len(ids), WIDTH)
    seed_dtype = seed.draw(st.sampled_from([np.float64, np.float32, np.int32, np.uint8]))
    elements = (
        st.integers(0, 9)
        if np.dtype(seed_dtype).kind in "iu"
        else st.floats(-1e3, 1e3, width=np.dtype(seed_dtype).itemsize * 8)
    )
    view = seed.draw(array_views(elements, seed_dtype, max_axes=2))
    assume(view.shape == shape or seed.draw(st.booleans()))
    gradients = []
    for given_seed in (view, np.array(view, copy=True)):
        layer = Embedding.from_pretrained(values, freeze=False)
        output = layer(ids)
        outcome = outcome_of(
            lambda output=output, given_seed=given_seed: output.backward_with_seed(given_seed)
        )
        gradient = layer.table.tensor.gradient_snapshot()
        assert gradient is not None
        gradients.append((type(outcome[1]), gradient.numpy().tobytes()))
    assert gradients[0] == gradients[1]


# Views no array can hold, at every entry ------------------------------------------------------

HUGE_DTYPES = {np.int8: 62, np.uint8: 62, np.bool_: 62, np.int16: 61, np.int32: 60, np.float32: 60}


@st.composite
def huge_views(draw: st.DrawFn) -> tuple[Any, int]:
    """A stride-0 view of ``2**k`` elements (``k`` from 49 up to what the dtype allows, so that
    no copy of it can be allocated anywhere) and its element count."""
    dtype = draw(st.sampled_from([*HUGE_DTYPES, object]))
    top = HUGE_DTYPES.get(dtype, 59)
    k = draw(st.integers(49, top))
    axes = draw(st.integers(1, 3))
    cuts = sorted(draw(st.lists(st.integers(0, k), min_size=axes - 1, max_size=axes - 1)))
    exponents = [b - a for a, b in zip([0, *cuts], [*cuts, k], strict=True)]
    shape = tuple(2**e for e in exponents)
    value = np.array(1, dtype=dtype)
    return np.broadcast_to(value, shape), 2**k


Expected = tuple[type[BaseException], str | None]
IDS_ALLOCATION: Expected = (AllocationError, "ids.allocation")
VALUE_TYPE: Expected = (ShapeError, "tensor.value-type")
TENSOR_ALLOCATION: Expected = (AllocationError, "tensor.allocation")


def expected_huge(entry: str, view: Any, count: int, width: int) -> Expected:
    """The error class (and rule) of a huge view at ``entry``, by the order of that boundary's
    checks (the flat entries get 1-D views, ``pretrained`` and ``bag`` 2-D ones)."""
    kind = view.dtype.kind
    if entry in ("call", "functional", "bag"):
        if kind == "O":
            return IDS_ALLOCATION  # room for the elements, before the nest is walked
        if count * width > LIMIT:
            return IdError, "ids.shape"  # the output shape, before any ID is read
        return (IdError, "ids.type") if kind not in "iu" else IDS_ALLOCATION
    if entry in ("forward", "gather"):
        forward = entry == "forward"
        if count * width > LIMIT:
            return (IdError, "ids.shape") if forward else (ShapeError, "shape.invalid")
        if kind not in "iuO":
            return IdError, "ids.type" if forward else "gather.type"
        return IDS_ALLOCATION if forward else (AllocationError, "output.allocation")
    if entry == "offsets":
        return (IdError, None) if kind not in "iuO" else IDS_ALLOCATION
    if entry == "weights":
        return IdError, None  # the type (object) or the shape, before any copy
    if entry == "tensor":
        return VALUE_TYPE if kind == "O" else TENSOR_ALLOCATION
    if entry == "from_numpy":
        return VALUE_TYPE if kind in "bO" else TENSOR_ALLOCATION
    if entry == "pretrained":
        if kind in "bO":
            return TableError, None
        return AllocationError, "output.allocation"
    if entry == "state":
        return FormatError, None  # the shape, before any copy
    return VALUE_TYPE if kind != "f" else TENSOR_ALLOCATION  # a pickled Tensor


ENTRIES = (
    "call",
    "functional",
    "bag",
    "forward",
    "gather",
    "offsets",
    "weights",
    "tensor",
    "from_numpy",
    "pretrained",
    "state",
    "pickle",
)


@given(case=huge_views(), entry=st.sampled_from(ENTRIES), width=st.sampled_from([1, 2]))
def test_a_view_no_copy_of_which_fits_gets_its_typed_error_at_once(
    case: tuple[Any, int], entry: str, width: int
) -> None:
    view, count = case
    assume(not (entry in ("forward", "gather", "offsets") and view.ndim != 1))
    assume(not (entry == "pretrained" and view.ndim != 2))
    assume(not (entry == "bag" and view.ndim != 2))
    table = NamedParameter.from_tensor("w", Tensor((4, width), [1.0] * (4 * width)))
    calls: dict[str, Callable[[], object]] = {
        "call": lambda: Embedding.from_parameter(table)(view),
        "functional": lambda: functional.embedding(view, table.tensor),
        "bag": lambda: EmbeddingBag.from_parameter(table)(view),
        "forward": lambda: Embedding.from_parameter(table).forward(view, (count,)),
        "gather": lambda: table.tensor.gather_rows(view, (count,)),
        "offsets": lambda: EmbeddingBag.from_parameter(table)([0, 1], view),
        "weights": lambda: EmbeddingBag.from_parameter(table, mode="sum")(
            [[0, 1]], per_sample_weights=view
        ),
        "tensor": lambda: Tensor(view.shape, view),
        "from_numpy": lambda: Tensor.from_numpy(view),
        "pretrained": lambda: Embedding.from_pretrained(view),
        "state": lambda: Adam([table], 0.1).load_state_dict(
            {"step": np.array(0), "w.exp_avg": view, "w.exp_avg_sq": view}
        ),
        "pickle": lambda: restore_tensor(view),
    }
    expected = expected_huge(entry, view, count, width)
    before = table.tensor.numpy().tobytes()
    with within_seconds(2.0), pytest.raises(Exception) as caught:
        calls[entry]()
    event(f"outcome: {type(caught.value).__name__}")
    family, rule = expected
    assert type(caught.value) is family, (entry, view.shape, view.dtype, caught.value)
    assert rule is None or caught.value.rule == rule, (entry, caught.value)
    assert table.tensor.numpy().tobytes() == before


# Numbers at their limits ---------------------------------------------------------------------

OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "SGD": lambda parameters: SGD(parameters, 0.1),
    "Adagrad": lambda parameters: Adagrad(parameters, 0.1),
    "Adam": lambda parameters: Adam(parameters, 0.1),
    "AdamW": lambda parameters: AdamW(parameters, 0.1),
}
STEPS = st.one_of(
    st.sampled_from([0, 1, LIMIT - 1, LIMIT, -1, LIMIT + 1, 2**64 - 1]),
    st.integers(-(2**64), 2**65),
)


@given(
    kind=st.sampled_from(sorted(OPTIMIZERS)),
    step=STEPS,
    step_dtype=st.sampled_from([np.int64, np.int64, np.uint64, np.int32, np.float64, object]),
    stride_zero=st.booleans(),
    steps_after=st.integers(0, 2),
    fused=st.booleans(),
)
def test_a_state_dict_at_its_limits_loads_steps_and_saves_exactly(
    kind: str, step: int, step_dtype: Any, stride_zero: bool, steps_after: int, fused: bool
) -> None:
    table = NamedParameter.from_tensor("w", Tensor((3, 2), [1.0, -2.0, 0.5, 4.0, -1.0, 2.0]))
    optimizer = OPTIMIZERS[kind]([table])
    state = optimizer.state_dict()
    try:
        given_step = np.array(step, dtype=step_dtype)
    except (OverflowError, ValueError):
        assume(False)
    arrays = {
        key: np.broadcast_to(np.abs(value).max(initial=0.0), value.shape)
        if stride_zero and value.ndim
        else value
        for key, value in state.items()
        if key != "step"
    }
    valid = given_step.dtype == np.int64 and 0 <= step <= LIMIT
    event(f"outcome: {'loaded' if valid else 'StateError'}")
    if not valid:
        with pytest.raises(FormatError):
            optimizer.load_state_dict({**arrays, "step": given_step})
        assert optimizer.step_count == 0
        return
    optimizer.load_state_dict({**arrays, "step": given_step})
    assert optimizer.step_count == step and type(optimizer.step_count) is int
    for _ in range(steps_after):
        before = table.tensor.numpy().tobytes()
        output = table.tensor.gather_rows([0, 2], (2,)).sum()
        counted = optimizer.step_count
        if counted == LIMIT:
            with pytest.raises(FormatError):
                optimizer.backward_step(output) if fused else optimizer.step()
            assert table.tensor.numpy().tobytes() == before and optimizer.step_count == LIMIT
        else:
            if not fused:
                output.backward()
            optimizer.backward_step(output) if fused else optimizer.step()
            assert optimizer.step_count == counted + 1
    saved = optimizer.state_dict()
    assert saved["step"].dtype == np.int64 and int(saved["step"]) == optimizer.step_count


# Crafted pickles -----------------------------------------------------------------------------

FLOATS = st.floats(allow_nan=True, allow_infinity=True)


@st.composite
def leaf_states(draw: st.DrawFn) -> object:
    """A leaf's pickled state, valid or broken in one or more of its parts."""
    dtype = draw(st.sampled_from([np.float64, np.float32, np.float16, np.int64, object]))
    shape = draw(st.sampled_from([(3, 2), (2,), (), (0, 2)]))
    count = int(np.prod(shape))
    values = np.array(draw(st.lists(FLOATS, min_size=count, max_size=count))).reshape(shape)
    with np.errstate(all="ignore"):
        values = values.astype(dtype) if dtype is not object else values.astype(object)
    kind = draw(st.sampled_from(["parameter", "parameter", "constant", "operation", 3]))
    state: dict[str, object] = {"kind": kind, "values": values}
    if kind != "constant":
        form = draw(st.sampled_from(["dense", "row_sparse", "other"]))
        if form == "row_sparse":
            rows = np.array(draw(st.lists(st.integers(-1, 3), max_size=3)), dtype=np.int64)
            width = shape[1] if len(shape) == 2 else 2
            row_values = np.array(
                draw(st.lists(FLOATS, min_size=rows.size * width, max_size=rows.size * width)),
                dtype=np.float64,
            ).reshape(rows.size, width)
            summed = draw(st.sampled_from([None, np.array([0]), np.array([5]), np.array([[0]])]))
            gradient: object = {"form": form, "rows": rows, "values": row_values, "summed": summed}
        elif form == "dense":
            dense = np.array(draw(st.lists(FLOATS, min_size=count, max_size=count)))
            gradient = {"form": form, "values": dense.reshape(shape).astype(np.float64)}
        else:
            gradient = draw(st.sampled_from([None, {}, {"form": "sparse"}]))
        state["gradient"] = gradient
    if draw(st.integers(0, 9)) == 0:
        state["extra"] = 1
    return state


@given(state=leaf_states())
def test_a_crafted_leaf_rebuilds_checked_or_gets_a_typed_error(state: object) -> None:
    restored, error = outcome_of(
        lambda: unpickled(PicklePayload(restore_value, PicklePayload(restore_node, state)))
    )
    event(f"outcome: {type(error).__name__ if error is not None else 'result'}")
    if error is not None:
        assert (type(error), getattr(error, "rule", None)) in (
            (TapeError, "tape.leaf-state"),
            (NonFiniteError, "parameter.non-finite"),
            (NonFiniteError, "gradient.non-finite"),
        ), repr(error)
        return
    assert isinstance(restored, TensorValue) and restored.kind == state["kind"]  # type: ignore[index]
    values = restored.numpy()
    assert values.dtype in (np.float64, np.float32) and values.flags.c_contiguous
    if restored.kind == "parameter":
        # A rebuilt parameter is what TensorValue.parameter builds from its values.
        same_outcome(lambda: restored, lambda: TensorValue.parameter(Tensor.from_numpy(values)))
        gradient = restored.gradient_snapshot()
        assert gradient is not None and gradient.shape == values.shape
        assert np.isfinite(gradient.numpy()).all()
        assert gradient.dtype == values.dtype


@given(
    rows=st.one_of(
        st.integers(0, 6), st.integers(-2, 6), st.sampled_from([True, 4.0, None, np.int8(3), "4"])
    ),
    mode=st.sampled_from(["sum", "mean", "max", "sum", "min", None]),
    padding=st.one_of(st.none(), st.integers(-7, 7), st.sampled_from([True, 1.5])),
    max_norm=st.one_of(st.none(), st.floats(1e-3, 1e3), FLOATS, st.sampled_from([0, True, "1"])),
    norm_type=st.one_of(st.floats(0.5, 4.0), FLOATS, st.sampled_from([2, 0, None])),
    scale=st.sampled_from([False, True, False, 0, None, np.bool_(True)]),
    bag=st.booleans(),
)
def test_crafted_options_unpickle_as_their_constructor_builds_them(
    rows: object,
    mode: object,
    padding: object,
    max_norm: object,
    norm_type: object,
    scale: object,
    bag: bool,
) -> None:
    if bag:
        fields: tuple[object, ...] = (rows, mode, padding, max_norm, norm_type)
        record: Callable[..., Any] = BagOptions
    else:
        fields = (rows, padding, max_norm, norm_type, scale)
        record = LookupOptions
    crafted, built = same_outcome(
        lambda: unpickled(PicklePayload(record, *fields)), lambda: record(*fields)
    )
    if built is not None:
        assert crafted == built and type(crafted.vocabulary_size) is int
        assert crafted.vocabulary_size >= 0
        assert unpickled(crafted) == built


@given(
    values=st.lists(st.floats(-1e3, 1e3), min_size=8, max_size=8),
    poison=st.one_of(
        st.none(), st.none(), st.tuples(st.integers(0, 7), st.sampled_from([np.nan, np.inf]))
    ),
    dtype=st.sampled_from([np.float64, np.float32]),
    name=st.sampled_from(["token_embedding.weight", "w", "a.b_1", "W", "", "a..b"]),
    max_norm=st.one_of(st.none(), st.floats(0.1, 10.0)),
)
def test_a_crafted_frozen_table_and_layer_unpickle_as_from_pretrained_builds_them(
    values: list[float],
    poison: tuple[int, float] | None,
    dtype: Any,
    name: str,
    max_norm: float | None,
) -> None:
    if poison is not None:
        values[poison[0]] = poison[1]
    array = np.array(values, dtype=dtype).reshape(4, 2)
    constant = PicklePayload(
        restore_value, PicklePayload(restore_node, {"kind": "constant", "values": array})
    )
    crafted_table = PicklePayload(FrozenTable, name, constant)
    crafted, _ = same_outcome(
        lambda: unpickled(crafted_table),
        lambda: FrozenTable(name, TensorValue.constant(Tensor.from_numpy(array))),
    )
    layer, error = outcome_of(
        lambda: unpickled(PicklePayload(Embedding, crafted_table, LookupOptions(4, None, max_norm)))
    )
    pretrained, refused = outcome_of(
        lambda: Embedding.from_pretrained(array, name=name, max_norm=max_norm)
    )
    assert (error is None) == (refused is None)
    if error is not None:
        assert isinstance(error, NonFiniteError) == isinstance(refused, NonFiniteError)
        return
    ids = [3, 0, 3, 1]
    assert layer(ids).numpy().tobytes() == pretrained(ids).numpy().tobytes()
    assert crafted.tensor.numpy().tobytes() == array.tobytes()


ERRORS = [
    IdError("ids.out-of-range", id=4, position=1, vocabulary_size=4),
    IdError("offsets.range", offset=9, position=2, bound=4),
    FormatError(
        "optimizer.state", optimizer="Adam", key="step", requirement="be an integer", actual="x"
    ),
    IdError("weights.shape", expected=(3,), value=(2,)),
]


@given(
    error=st.sampled_from(ERRORS),
    replaced=st.dictionaries(
        st.sampled_from(["position", "id", "rule", "key", "actual", "value", "expected"]),
        st.one_of(st.integers(-2, 9), st.text(max_size=2), st.none()),
        max_size=2,
    ),
    notes=st.lists(st.text(max_size=3), max_size=2),
    extra=st.dictionaries(st.sampled_from(["x", "note"]), st.integers(), max_size=1),
)
def test_a_crafted_error_state_may_add_but_never_replace_a_field(
    error: LlmError,
    replaced: dict[str, object],
    notes: list[str],
    extra: dict[str, int],
) -> None:
    names = tuple(error.fields)
    fields = tuple(error.fields.values())
    state: dict[str, object] = {**replaced, **extra}
    if notes:
        state["__notes__"] = notes
    reduced = error.__reduce__()[:2]

    class Crafted:
        def __reduce__(self) -> tuple[Any, ...]:
            return (*reduced, state)

    rebuilt, raised = outcome_of(lambda: pickle.loads(pickle.dumps(Crafted())))
    event(f"outcome: {type(raised).__name__ if raised is not None else 'result'}")
    # the state may add attributes and notes, but never name a field or the rule
    replaces = any(name in (*names, "rule") for name in replaced)
    if replaces:
        assert type(raised) is TypeError
        return
    assert raised is None and type(rebuilt) is type(error)
    assert rebuilt.args == error.args
    assert [getattr(rebuilt, name) for name in names] == list(fields)
    assert getattr(rebuilt, "__notes__", []) == notes


# max_norm on tables that never change, and reals at their limits ----------------------------


@given(
    values=st.lists(st.floats(-50, 50), min_size=ROWS * WIDTH, max_size=ROWS * WIDTH),
    dtype=st.sampled_from([np.float64, np.float32]),
    ids=id_views(),
    max_norm=st.one_of(st.floats(1e-3, 100.0), st.sampled_from([1e-300, 1e300, 5e-324])),
    norm_type=st.one_of(
        st.sampled_from([1.0, 2.0, 3.5, 0.5]),
        st.floats(1e-320, 1e300, exclude_min=False),
    ),
    bag_mode=st.sampled_from([None, "sum", "mean", "max"]),
)
def test_a_frozen_max_norm_lookup_returns_the_rows_the_trainable_one_writes(
    values: list[float],
    dtype: Any,
    ids: Any,
    max_norm: float,
    norm_type: float,
    bag_mode: str | None,
) -> None:
    table = np.array(values, dtype=dtype).reshape(ROWS, WIDTH)
    options: dict[str, Any] = {"max_norm": max_norm, "norm_type": norm_type}
    if bag_mode is None:
        frozen = Embedding.from_pretrained(table, **options)
        trainable = Embedding.from_pretrained(table, freeze=False, **options)
    else:
        frozen = EmbeddingBag.from_pretrained(table, mode=bag_mode, **options)
        trainable = EmbeddingBag.from_pretrained(table, freeze=False, mode=bag_mode, **options)
    ours, theirs = same_outcome(lambda: frozen(ids), lambda: trainable(ids))
    assert frozen.table.tensor.numpy().tobytes() == table.tobytes()
    assert frozen.table.tensor.value_revision == 0
    if ours is None:
        return
    assert ours.kind == "constant"
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()
    again = frozen(ids)  # the table was not written: the same rows again
    assert again.numpy().tobytes() == ours.numpy().tobytes()
    if bag_mode is None:
        flat = [int(value) for value in np.array(ids, copy=True).reshape(-1).tolist()]
        with np.errstate(all="ignore"):  # the reference's own scalar arithmetic
            expected = pytorch_renorm(table, flat, max_norm, norm_type)[flat]
        if norm_type in (1.0, 2.0):
            assert ours.numpy().reshape(-1, WIDTH).tobytes() == expected.tobytes()
        else:
            np.testing.assert_allclose(
                ours.numpy().reshape(-1, WIDTH), expected, rtol=8 * np.finfo(dtype).eps
            )


@given(
    dtype=st.sampled_from([np.float64, np.float32]),
    magnitude=st.sampled_from([1e-45, 1e-30, 1.0, 1e30, 3e38, 1e300]),
    norm_type=st.floats(min_value=5e-324, max_value=1.7e308),
    max_norm=st.floats(min_value=5e-324, max_value=1.7e308),
    learning_rate=st.floats(min_value=5e-324, max_value=1.7e308),
    seed=st.floats(-1.7e308, 1.7e308),
)
def test_reals_at_the_dtypes_limits_give_results_or_typed_errors_and_no_warning(
    dtype: Any,
    magnitude: float,
    norm_type: float,
    max_norm: float,
    learning_rate: float,
    seed: float,
) -> None:
    with np.errstate(over="ignore"):
        values = (np.array([[1.0, -2.0], [0.0, 3.0]]) * magnitude).astype(dtype)
    assume(np.isfinite(values).all())
    for freeze in (True, False):
        layer = Embedding.from_pretrained(
            values, freeze=freeze, max_norm=max_norm, norm_type=norm_type
        )
        output = layer([0, 1, 0])
        assert output.shape == (3, 2)
    trainable = Embedding.from_pretrained(values, freeze=False)
    optimizer = SGD(trainable.parameters(), learning_rate)
    output = trainable([0, 1, 0])
    before = trainable.table.tensor.numpy().tobytes()
    _, error = outcome_of(lambda: optimizer.backward_step(output, np.full((3, 2), seed)))
    event(f"outcome: {type(error).__name__ if error is not None else 'result'}")
    if error is not None:
        assert isinstance(error, LlmError), repr(error)
        assert trainable.table.tensor.numpy().tobytes() == before
    assert np.isfinite(trainable.table.tensor.numpy()).all()


@given(offsets=array_views(st.integers(0, 2**63 - 1), np.int64, max_axes=1))
def test_offsets_at_the_int64_limit_are_range_errors_or_bags(offsets: Any) -> None:
    layer = EmbeddingBag.from_pretrained(table_values(np.float64), mode="sum")
    expected = expected_bag_starts((4,), np.array(offsets, copy=True), False)
    result = check_outcome(lambda: layer([0, 1, 2, 3], offsets), expected)
    if isinstance(expected, Returns):
        assert result.shape == (len(expected.value) - 1, WIDTH)  # type: ignore[arg-type]
    else:
        assert isinstance(expected, Raises)
