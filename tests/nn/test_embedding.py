from __future__ import annotations

import copy

import numpy as np
import pytest

from llm_from_scratch.autograd import (
    GraphRetention,
    ReleasedOperandError,
    StaleValueError,
    TensorValue,
)
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingError,
    EmbeddingInitializationError,
    EmptyVocabularyError,
    NamedParameter,
    SplitMix64,
    TableRankError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
    ZeroEmbeddingWidthError,
)
from llm_from_scratch.nn.init import InvalidNameByteError
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import NegativeExtentError, ShapeOverflowError, Tensor

UPSTREAM = np.array([1, 0, 0, 2, 3, 4], dtype=np.float64).reshape(1, 3, 2)


def test_known_fixture_forward_values(known_layer: Embedding) -> None:
    out = known_layer.forward([2, 1, 2], (1, 3))
    assert out.shape == (1, 3, 2)
    assert out.value.flat_values() == [30.0, 31.0, 20.0, 21.0, 30.0, 31.0]


def test_repeated_ids_sum_into_one_row_and_unused_rows_stay_zero(known_layer: Embedding) -> None:
    known_layer.forward([2, 1, 2], (1, 3)).backward_with_seed(UPSTREAM)
    gradient = known_layer.table.tensor.gradient_snapshot()
    assert gradient is not None
    assert gradient.flat_values() == [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 0.0, 0.0]


def test_ids_get_no_gradient_and_the_output_is_an_operation(known_layer: Embedding) -> None:
    out = known_layer.forward(np.array([2, 1, 2]), (1, 3))
    assert out.kind == "operation" and out.gradient is None


def test_forward_reports_shape_then_count_then_first_bad_id(known_layer: Embedding) -> None:
    with pytest.raises(TokenShapeError) as shape_error:
        known_layer.forward([9, 9, 9], (-1, 3))
    assert isinstance(shape_error.value.__cause__, NegativeExtentError)
    assert str(shape_error.value).startswith("invalid token-ID shape: ")
    with pytest.raises(TokenCountMismatchError) as count_error:
        known_layer.forward([9, 9, 9], (2, 2))
    assert (count_error.value.expected, count_error.value.actual) == (4, 3)
    assert str(count_error.value) == "token-ID shape needs 4 IDs, but received 3"
    with pytest.raises(TokenIdOutOfBoundsError) as id_error:
        known_layer.forward([1, 4, 9], (3,))
    assert (id_error.value.id, id_error.value.position, id_error.value.vocabulary_size) == (4, 1, 4)
    assert str(id_error.value) == (
        "token ID 4 at flat position 1 is out of bounds for vocabulary size 4"
    )


def test_an_overflowing_token_shape_is_a_shape_error(known_layer: Embedding) -> None:
    with pytest.raises(TokenShapeError) as caught:
        known_layer.forward([], (2**32, 2**32))
    assert isinstance(caught.value.__cause__, ShapeOverflowError)
    assert (
        str(caught.value) == "invalid token-ID shape: shape does not fit a row-major usize layout"
    )


def test_a_huge_valid_shape_fails_on_the_count_without_allocating(known_layer: Embedding) -> None:
    with pytest.raises(TokenCountMismatchError) as caught:
        known_layer.forward([1], (2**31, 2**31))
    assert caught.value.expected == 2**62


@pytest.mark.parametrize("bad", [-1, 4, 2**70])
def test_negative_and_large_ids_are_out_of_bounds(known_layer: Embedding, bad: int) -> None:
    with pytest.raises(TokenIdOutOfBoundsError) as caught:
        known_layer.forward([0, bad], (2,))
    assert (caught.value.id, caught.value.position) == (bad, 1)


@pytest.mark.parametrize("bad", [True, 1.0, "1", None, np.float64(1.0), np.bool_(True)])
def test_non_integer_ids_get_a_type_error_naming_the_position(
    known_layer: Embedding, bad: object
) -> None:
    with pytest.raises(TokenIdTypeError) as caught:
        known_layer.forward([0, bad, 7], (3,))  # type: ignore[list-item]
    assert caught.value.position == 1


def test_the_scan_reports_whichever_bad_id_comes_first(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdOutOfBoundsError):
        known_layer.forward([7, 1.5], (2,))  # type: ignore[list-item]
    with pytest.raises(TokenIdTypeError):
        known_layer.forward([1.5, 7], (2,))  # type: ignore[list-item]


@pytest.mark.parametrize(
    "dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
)
def test_every_numpy_integer_dtype_is_accepted(known_layer: Embedding, dtype: type) -> None:
    out = known_layer.forward(np.array([3, 0], dtype=dtype), (2,))
    assert out.value.flat_values() == [40.0, 41.0, 10.0, 11.0]


def test_float_and_bool_arrays_are_type_errors_at_position_zero(known_layer: Embedding) -> None:
    for ids in (np.array([1.0, 2.0]), np.array([True, False])):
        with pytest.raises(TokenIdTypeError) as caught:
            known_layer.forward(ids, (2,))
        assert caught.value.position == 0


def test_numpy_ids_report_the_first_out_of_bounds_position(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdOutOfBoundsError) as caught:
        known_layer.forward(np.array([0, 3, -2, 9], dtype=np.int32), (4,))
    assert (caught.value.id, caught.value.position) == (-2, 2)
    with pytest.raises(TokenIdOutOfBoundsError) as unsigned:
        known_layer.forward(np.array([0, 2**64 - 1], dtype=np.uint64), (2,))
    assert unsigned.value.id == 2**64 - 1


def test_forward_needs_flat_ids(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdContainerError):
        known_layer.forward(np.zeros((1, 3), dtype=np.int64), (1, 3))
    with pytest.raises(TokenIdContainerError):
        known_layer.forward(5, ())  # type: ignore[arg-type]


def test_scalar_shape_takes_one_id_and_gives_a_width_vector(known_layer: Embedding) -> None:
    out = known_layer.forward([3], ())
    assert out.shape == (2,) and out.value.flat_values() == [40.0, 41.0]
    with pytest.raises(TokenCountMismatchError):
        known_layer.forward([], ())


def test_empty_shape_takes_no_ids_and_gives_no_values(known_layer: Embedding) -> None:
    out = known_layer.forward([], (0,))
    assert out.shape == (0, 2) and out.value.element_count == 0
    out.backward_with_seed(np.zeros((0, 2)))
    assert not known_layer.table.tensor.gradient.numpy().any()  # type: ignore[union-attr]


def test_a_two_by_three_shape_keeps_its_leading_axes(known_layer: Embedding) -> None:
    out = known_layer.forward([0, 1, 2, 3, 2, 1], (2, 3))
    assert out.shape == (2, 3, 2)
    assert out.numpy()[1, 0].tolist() == [40.0, 41.0]


def test_call_takes_nested_lists_and_arrays_whose_shape_is_the_token_shape(
    known_layer: Embedding,
) -> None:
    assert known_layer([[2, 1, 2]]).shape == (1, 3, 2)
    assert known_layer(np.array([[2], [1]])).shape == (2, 1, 2)
    assert known_layer(3).shape == (2,)
    assert known_layer([]).shape == (0, 2)
    assert known_layer(np.array([[0, 1], [2, 3]]).T).numpy()[0, 1].tolist() == [30.0, 31.0]


def test_call_rejects_ragged_lists(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdContainerError, match="ragged"):
        known_layer([[1, 2], [3]])


def test_call_reports_flat_positions_of_nested_ids(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdOutOfBoundsError) as caught:
        known_layer([[0, 1], [5, 0]])
    assert caught.value.position == 2


def test_from_parameter_checks_rank_then_rows_then_width() -> None:
    def named(shape: tuple[int, ...]) -> NamedParameter:
        count = int(np.prod(shape))
        return NamedParameter.from_tensor("w", Tensor(shape, [0.0] * count))

    with pytest.raises(TableRankError) as rank:
        Embedding.from_parameter(named((0,)))
    assert rank.value.rank == 1
    assert str(rank.value) == "embedding table must have rank two, got rank 1"
    with pytest.raises(
        EmptyVocabularyError, match=r"^embedding vocabulary must contain at least one row$"
    ):
        Embedding.from_parameter(named((0, 0)))
    with pytest.raises(
        ZeroEmbeddingWidthError, match=r"^embedding width must be greater than zero$"
    ):
        Embedding.from_parameter(named((3, 0)))


def test_from_parameter_keeps_the_same_leaf(known_layer: Embedding) -> None:
    again = Embedding.from_parameter(known_layer.table)
    assert again.table.tensor.is_same_node(known_layer.table.tensor)


def test_new_maps_zero_sizes_and_wraps_other_initialization_errors() -> None:
    rng = SplitMix64.from_seed(5)
    before = rng.state
    with pytest.raises(EmptyVocabularyError):
        Embedding.new("token_embedding.weight", 0, 2, rng)
    with pytest.raises(ZeroEmbeddingWidthError):
        Embedding.new("token_embedding.weight", 4, 0, rng)
    with pytest.raises(EmbeddingInitializationError) as caught:
        Embedding.new("Token", 0, 0, rng)
    assert isinstance(caught.value.__cause__, InvalidNameByteError)
    with pytest.raises(EmbeddingInitializationError):
        Embedding.new("w", 2**40, 2**40, rng)
    assert rng.state == before


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


def test_an_sgd_step_after_forward_makes_that_graph_stale(known_layer: Embedding) -> None:
    out = known_layer([[2, 1, 2]])
    out.backward_with_seed(UPSTREAM)
    SGD(known_layer.parameters(), learning_rate=0.1).step()
    with pytest.raises(StaleValueError) as caught:
        out.backward_with_seed(UPSTREAM)
    assert (caught.value.operation, caught.value.operand) == ("gather_rows", "table")
    assert (caught.value.recorded_revision, caught.value.current_revision) == (0, 1)


def test_a_released_graph_reached_by_a_new_operation_passes_through_as_its_own_type(
    known_layer: Embedding,
) -> None:
    out = known_layer([[2, 1, 2]])
    out.backward_with_seed(UPSTREAM, GraphRetention.RELEASE)
    with pytest.raises(ReleasedOperandError):
        out.sum()
    assert known_layer([[0]]).kind == "operation"  # the parameter leaf itself is never released


def test_an_out_of_vocabulary_error_is_also_an_index_error(known_layer: Embedding) -> None:
    with pytest.raises(IndexError):
        known_layer([4])


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
