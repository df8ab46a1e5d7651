"""``Embedding.forward(token_ids, token_shape)``: flat IDs and a token shape, checked in the
contract's order (shape, container, count, then the first bad ID in flat order), then the row
lookup; a huge request fails fast with a typed error, before any large allocation and before
any ID is read.

The properties compare any IDs and shape with the reference model's first error or plain loop,
and the gradient of valid lookups with the plain-loop scatter, bit for bit.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    IndexAllocationError,
    InvalidShapeError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
)
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.tensor import NegativeExtentError, ShapeOverflowError

from checks import check_error, check_lookup, leaf_state, within_seconds
from reference import Raises, expected_lookup, plain_lookup, plain_scatter
from strategies import LookupCase, flat_id_containers, layers, lookup_cases, shapes

HUGE_SHAPE = (2**31, 2**31)
FITTING_HUGE_SHAPE = (2**30, 2**31)  # with the known table's d = 2 the output still fits
MEBIBYTE = 1 << 20


def test_known_fixture_forward_values(known_layer: Embedding) -> None:
    out = known_layer.forward([2, 1, 2], (1, 3))
    assert out.shape == (1, 3, 2)
    assert out.value.flat_values() == [30.0, 31.0, 20.0, 21.0, 30.0, 31.0]


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


def test_an_out_of_vocabulary_error_is_also_an_index_error(known_layer: Embedding) -> None:
    with pytest.raises(IndexError):
        known_layer([4])


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


# Huge requests -------------------------------------------------------------------------------


class UnreadableIds(Sequence[int]):
    """A sequence that knows its length but fails the test if any element is read."""

    def __init__(self, length: int) -> None:
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        raise AssertionError("an ID was read before the count was checked")

    def __iter__(self) -> Iterator[int]:
        raise AssertionError("the IDs were scanned before the count was checked")


def peak_traced_bytes(call: object) -> tuple[BaseException | None, int]:
    """Run ``call`` under tracemalloc (NumPy reports its buffers to it); return error and peak."""
    tracemalloc.start()
    try:
        call()  # type: ignore[operator]
    except Exception as error:
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return None, 0


def test_a_huge_token_shape_with_a_few_ids_fails_on_the_count_without_allocating(
    known_layer: Embedding,
) -> None:
    before = leaf_state(known_layer.table.tensor)
    with within_seconds(1.0):
        error, peak = peak_traced_bytes(lambda: known_layer.forward([1, 2, 3], HUGE_SHAPE))
    assert error is not None
    check_error(error, Raises(TokenCountMismatchError, {"expected": 2**62, "actual": 3}))
    assert peak < MEBIBYTE
    assert leaf_state(known_layer.table.tensor) == before


def test_a_huge_nested_call_is_a_count_error_too(known_layer: Embedding) -> None:
    with within_seconds(1.0), pytest.raises(TokenCountMismatchError):
        known_layer.forward(np.arange(3), HUGE_SHAPE)


def test_an_overflowing_token_shape_is_a_shape_error_reported_before_the_ids_are_looked_at(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(TokenShapeError) as caught:
        known_layer.forward(UnreadableIds(3), (2**32, 2**32))
    check_error(caught.value.__cause__, Raises(ShapeOverflowError, {"shape": (2**32, 2**32)}))  # type: ignore[arg-type]
    assert (
        str(caught.value) == "invalid token-ID shape: shape does not fit a row-major usize layout"
    )


def test_a_count_mismatch_is_reported_before_any_id_is_read(known_layer: Embedding) -> None:
    with pytest.raises(TokenCountMismatchError):
        known_layer.forward(UnreadableIds(3), HUGE_SHAPE)


def test_a_huge_lazy_sequence_of_the_wrong_length_is_a_count_error(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(TokenCountMismatchError):
        known_layer.forward(range(2**40), HUGE_SHAPE)


def test_a_huge_lazy_sequence_of_the_right_length_is_an_index_allocation_error(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(IndexAllocationError) as caught:
        known_layer.forward(range(2**61), FITTING_HUGE_SHAPE)
    assert caught.value.elements == 2**61
    assert isinstance(caught.value.__cause__, MemoryError)


def test_a_huge_lazy_sequence_whose_output_overflows_is_a_shape_error_before_any_id_is_read(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(TokenShapeError) as caught:
        known_layer.forward(range(2**62), HUGE_SHAPE)  # [2**31, 2**31, 2] overflows
    check_error(caught.value.__cause__, Raises(ShapeOverflowError, {"shape": (*HUGE_SHAPE, 2)}))  # type: ignore[arg-type]


def test_a_zero_element_output_that_overflows_the_layout_is_a_shape_error(
    known_layer: Embedding,
) -> None:
    with pytest.raises(TokenShapeError) as caught:
        known_layer.forward([], (0, 2**62))
    assert isinstance(caught.value.__cause__, ShapeOverflowError)
    with pytest.raises(InvalidShapeError) as gathered:
        known_layer.table.tensor.gather_rows([], (0, 2**62))
    assert gathered.value.what == "row gather output shape"
    assert isinstance(gathered.value.__cause__, ShapeOverflowError)


def test_a_zero_element_output_numpy_cannot_describe_is_a_typed_error(
    known_layer: Embedding,
) -> None:
    with pytest.raises(TokenShapeError):
        known_layer.forward([], (2**62, 0))


# Properties ----------------------------------------------------------------------------------


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


@given(lookup_cases(), st.integers(0, 2**32 - 1))
def test_lookup_and_gradient_equal_the_plain_loop_bit_for_bit(
    case: LookupCase, upstream_seed: int
) -> None:
    rows, width, seed, shape, ids, dtype = case
    layer = Embedding.new("token_embedding.weight", rows, width, SplitMix64.from_seed(seed), dtype)
    table = layer.table.tensor.numpy()
    out = layer.forward(ids, shape)
    assert out.shape == (*shape, width)
    assert out.numpy().tobytes() == plain_lookup(table, ids).tobytes()
    upstream = np.random.default_rng(upstream_seed).normal(size=(*shape, width)).astype(dtype)
    out.backward_with_seed(upstream)
    expected = plain_scatter(ids, upstream, rows, width)
    gradient = layer.table.tensor.gradient
    assert gradient is not None
    assert gradient.numpy().tobytes() == expected.tobytes()
