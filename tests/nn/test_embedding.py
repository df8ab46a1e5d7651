"""The ``Embedding`` layer itself: built from a named parameter or by Xavier initialization,
checked rank, rows and width, one shared parameter leaf (a clone shares it, a deep copy does
not), fixed fields, and a backward that sums repeated IDs into one row.

The properties compare every name, size, generator and dtype with the reference model: the
documented error (with the generator left alone) or the Xavier table drawn from a plain
SplitMix64, and every table shape with the rank-rows-width rule.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    EmbeddingError,
    GraphRetention,
    ReleasedOperandError,
    TensorValue,
)
from llm_from_scratch.errors import TableError
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.tensor import Tensor

from checks import check_outcome, leaf_state, raises_rule, within_seconds
from conftest import KNOWN_UPSTREAM
from reference import Returns, element_count, expected_from_parameter, expected_new
from strategies import HUGE_EXTENTS, INTEGER_DTYPES, numpy_integers

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def test_repeated_ids_sum_into_one_row_and_unused_rows_stay_zero(known_layer: Embedding) -> None:
    known_layer.forward([2, 1, 2], (1, 3)).backward_with_seed(UPSTREAM)
    gradient = known_layer.table.tensor.gradient_snapshot()
    assert gradient is not None
    assert gradient.flat_values() == [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 0.0, 0.0]


def test_ids_get_no_gradient_and_the_output_is_an_operation(known_layer: Embedding) -> None:
    out = known_layer.forward(np.array([2, 1, 2]), (1, 3))
    assert out.kind == "operation" and out.gradient is None


def test_from_parameter_checks_rank_then_rows_then_width() -> None:
    def named(shape: tuple[int, ...]) -> NamedParameter:
        count = int(np.prod(shape))
        return NamedParameter.from_tensor("w", Tensor(shape, [0.0] * count))

    with raises_rule(TableError, "table.rank", rank=1) as rank:
        Embedding.from_parameter(named((0,)))
    assert str(rank.value) == "embedding table must have rank two, got rank 1"
    with raises_rule(TableError, "table.empty-vocabulary") as rows:
        Embedding.from_parameter(named((0, 0)))
    assert str(rows.value) == "embedding vocabulary must contain at least one row"
    with raises_rule(TableError, "table.zero-width") as width:
        Embedding.from_parameter(named((3, 0)))
    assert str(width.value) == "embedding width must be greater than zero"


def test_new_maps_zero_sizes_and_wraps_other_initialization_errors() -> None:
    rng = SplitMix64.from_seed(5)
    before = rng.state
    with raises_rule(TableError, "table.empty-vocabulary"):
        Embedding.new("token_embedding.weight", 0, 2, rng)
    with raises_rule(TableError, "table.zero-width"):
        Embedding.new("token_embedding.weight", 4, 0, rng)
    with raises_rule(TableError, "table.initialization") as caught:
        Embedding.new("Token", 0, 0, rng)
    assert caught.value.__cause__.rule == "name.byte"
    with raises_rule(TableError, "table.initialization"):
        Embedding.new("w", 2**40, 2**40, rng)
    assert rng.state == before


@pytest.mark.parametrize(
    ("rows", "width"), [(2**31, 2**31), (2**30, 2**30), (2**28, 2**30), (2**62, 2), (2**64, 1)]
)
def test_a_huge_table_fails_fast_with_a_typed_error_and_leaves_the_generator_alone(
    rows: int, width: int
) -> None:
    rng = SplitMix64.from_seed(18)
    with within_seconds(1.0), raises_rule(TableError, "table.initialization") as caught:
        Embedding.new("w", rows, width, rng)
    assert caught.value.__cause__.rule == "table.build"
    assert rng == SplitMix64.from_seed(18)


def test_layers_from_equal_seeds_have_equal_values_but_different_leaves() -> None:
    a = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
    b = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
    assert a.table.tensor.value.equals(b.table.tensor.value)
    assert not a.table.tensor.is_same_node(b.table.tensor)


def test_a_clone_holds_the_same_leaf(known_layer: Embedding) -> None:
    for twin in (known_layer.clone(), copy.copy(known_layer)):
        assert twin is not known_layer
        assert twin.table.tensor.is_same_node(known_layer.table.tensor)


def test_a_deep_copy_holds_an_independent_leaf_with_equal_values(known_layer: Embedding) -> None:
    twin = copy.deepcopy(known_layer)
    assert not twin.table.tensor.is_same_node(known_layer.table.tensor)
    assert twin.table.tensor.value.equals(known_layer.table.tensor.value)


def test_the_layer_exposes_its_table_sizes_and_parameters(known_layer: Embedding) -> None:
    assert (known_layer.vocabulary_size, known_layer.embedding_width) == (4, 2)
    assert known_layer.table.name == "token_embedding.weight"
    (only,) = known_layer.parameters()
    assert only is known_layer.table


def test_layer_fields_cannot_be_replaced(known_layer: Embedding) -> None:
    with pytest.raises(AttributeError):
        known_layer._table = known_layer.table  # type: ignore[misc]
    with pytest.raises(AttributeError):
        known_layer.vocabulary_size = 9  # type: ignore[misc]


def test_a_failed_forward_changes_neither_values_nor_gradient(known_layer: Embedding) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(UPSTREAM)
    values, gradient = leaf.value_snapshot(), leaf.gradient_snapshot()
    for bad in ([[9]], [[1.5]], [[1], [2, 3]]):
        with pytest.raises(EmbeddingError):
            known_layer(bad)
    assert leaf.value.equals(values) and leaf.gradient.equals(gradient)  # type: ignore[union-attr, arg-type]


def test_a_released_graph_reached_by_a_new_operation_passes_through_as_its_own_type(
    known_layer: Embedding,
) -> None:
    out = known_layer([[2, 1, 2]])
    out.backward_with_seed(UPSTREAM, GraphRetention.RELEASE)
    with pytest.raises(ReleasedOperandError):
        out.sum()
    assert known_layer([[0]]).kind == "operation"  # the parameter leaf itself is never released


def test_float32_tables_look_up_and_accumulate_in_float32() -> None:
    layer = Embedding.new("w", 5, 3, SplitMix64.from_seed(1), dtype=np.float32)
    out = layer([1, 1, 4])
    assert out.dtype == np.float32
    out.backward_with_seed(np.ones((3, 3)))  # a float64 seed is converted explicitly
    gradient = layer.table.tensor.gradient
    assert gradient is not None and gradient.dtype == np.float32
    assert gradient.numpy()[1].tolist() == [2.0, 2.0, 2.0]


def test_embedding_of_a_constant_table_is_refused_by_type() -> None:
    with pytest.raises(TypeError):
        Embedding.from_parameter(TensorValue.constant(Tensor((1, 1), [1.0])))  # type: ignore[arg-type]


# Properties ----------------------------------------------------------------------------------


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
        *[st.integers(0, 2**64 - 1).map(SplitMix64.from_seed)] * 4,
        st.sampled_from([None, 7.0, 7, -1, 2**64]),  # an int is SplitMix64.from_seed(int)
    ),
    st.sampled_from([np.float64, np.float64, np.float32, np.float32, np.int32, "garbage"]),
)
def test_new_raises_the_documented_error_or_builds_the_xavier_table_and_advances_the_generator(
    name: object, rows: object, width: object, rng: object, dtype: object
) -> None:
    state = rng.state if isinstance(rng, SplitMix64) else rng if isinstance(rng, int) else None
    expected = expected_new(name, rows, width, state, type(rng).__name__, dtype)
    layer = check_outcome(
        lambda: Embedding.new(name, rows, width, rng, dtype),  # type: ignore[arg-type]
        expected,
    )
    if isinstance(expected, Returns):
        table, advanced_state = expected.value  # type: ignore[misc]
        assert layer.table.name == name
        assert layer.table.tensor.numpy().tobytes() == table.tobytes()
        if isinstance(rng, SplitMix64):
            assert rng.state == advanced_state
    elif isinstance(rng, SplitMix64):
        assert rng.state == state


@given(st.lists(st.integers(0, 3), max_size=3).map(tuple))
def test_from_parameter_checks_rank_then_rows_then_width_and_keeps_the_same_leaf(
    shape: tuple[int, ...],
) -> None:
    count = element_count(shape) or 0
    table = NamedParameter.from_tensor("w", Tensor(shape, np.arange(count, dtype=float)))
    before = leaf_state(table.tensor)
    layer = check_outcome(lambda: Embedding.from_parameter(table), expected_from_parameter(shape))
    if layer is not None:
        assert layer.table is table and layer.table.tensor.is_same_node(table.tensor)
        assert (layer.vocabulary_size, layer.embedding_width) == shape
    assert leaf_state(table.tensor) == before
