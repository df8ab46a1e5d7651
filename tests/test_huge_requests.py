"""Huge requests fail fast with a typed error, before any large allocation, and change nothing.

Allocation failures that real memory cannot trigger cheaply are injected by replacing the
``np`` a module imported with one whose named function raises ``MemoryError``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import pytest

import llm_from_scratch.autograd.gradient as gradient_module
import llm_from_scratch.autograd.ops as ops_module
import llm_from_scratch.autograd.tape as tape_module
from llm_from_scratch.autograd import (
    GatherIndexCountError,
    InvalidShapeError,
    OutputAllocationError,
    TensorValue,
)
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingInitializationError,
    IndexAllocationError,
    SplitMix64,
    TokenCountMismatchError,
    TokenShapeError,
)
from llm_from_scratch.nn.init import ParameterTableError
from llm_from_scratch.tensor import (
    DataLengthMismatchError,
    ShapeOverflowError,
    Tensor,
    TensorAllocationError,
    checked_row_major_layout,
)

from fuzz_support import Raises, check_error, failing_numpy, leaf_state, within_seconds

HUGE_SHAPE = (2**31, 2**31)
FITTING_HUGE_SHAPE = (2**30, 2**31)  # with the known table's d = 2 the output still fits
MEBIBYTE = 1 << 20


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


def test_an_overflowing_token_shape_is_rejected_before_the_ids_are_looked_at(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(TokenShapeError) as caught:
        known_layer.forward(UnreadableIds(3), (2**32, 2**32))
    check_error(caught.value.__cause__, Raises(ShapeOverflowError, {"shape": (2**32, 2**32)}))  # type: ignore[arg-type]


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


def test_gather_rows_of_a_huge_lazy_sequence_is_a_typed_allocation_error(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(OutputAllocationError):
        known_layer.table.tensor.gather_rows(range(2**61), FITTING_HUGE_SHAPE)


def test_a_huge_lazy_sequence_whose_output_overflows_is_a_shape_error_before_any_id_is_read(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), pytest.raises(TokenShapeError) as caught:
        known_layer.forward(range(2**62), HUGE_SHAPE)  # [2**31, 2**31, 2] overflows
    check_error(caught.value.__cause__, Raises(ShapeOverflowError, {"shape": (*HUGE_SHAPE, 2)}))  # type: ignore[arg-type]


def test_gather_rows_with_a_huge_index_shape_fails_on_the_count(known_layer: Embedding) -> None:
    with within_seconds(1.0), pytest.raises(GatherIndexCountError) as caught:
        known_layer.table.tensor.gather_rows([0], HUGE_SHAPE)
    assert (caught.value.expected, caught.value.actual) == (2**62, 1)


@pytest.mark.parametrize(
    ("rows", "width"), [(2**31, 2**31), (2**30, 2**30), (2**28, 2**30), (2**62, 2), (2**64, 1)]
)
def test_a_huge_table_fails_fast_with_a_typed_error_and_leaves_the_generator_alone(
    rows: int, width: int
) -> None:
    rng = SplitMix64.from_seed(18)
    with within_seconds(1.0), pytest.raises(EmbeddingInitializationError) as caught:
        Embedding.new("w", rows, width, rng)
    assert isinstance(caught.value.__cause__, ParameterTableError)
    assert rng == SplitMix64.from_seed(18)


def test_huge_tensors_fail_fast_with_typed_errors() -> None:
    with within_seconds(1.0):
        assert checked_row_major_layout(HUGE_SHAPE) == ((2**31, 1), 2**62)  # never allocates
        with pytest.raises(TensorAllocationError) as zeros:
            Tensor.zeros(HUGE_SHAPE)
        with pytest.raises(DataLengthMismatchError):
            Tensor(HUGE_SHAPE, [1.0])
        with pytest.raises(ShapeOverflowError):
            Tensor((2**62, 0), [])  # no elements, but NumPy cannot describe the shape
    assert zeros.value.elements == 2**62


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


# Injected allocation failures -----------------------------------------------------------------


def test_a_dense_gradient_view_that_cannot_be_allocated_is_a_typed_error_and_changes_nothing(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.ones((1, 3, 2)))
    before = leaf_state(leaf)
    with failing_numpy(monkeypatch, gradient_module, "zeros"):
        for read in (lambda: leaf.gradient, leaf.gradient_snapshot):
            with pytest.raises(OutputAllocationError) as caught:
                read()
            assert caught.value.elements == 8
        sparse = leaf.sparse_gradient  # the row-sparse form needs no new memory
        assert sparse is not None and sparse.rows.tolist() == [1, 2]
    assert leaf_state(leaf) == before


def test_a_parameter_whose_gradient_cannot_be_allocated_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = Tensor((3,), [1.0, 2.0, 3.0])
    with (
        failing_numpy(monkeypatch, tape_module, "zeros"),
        pytest.raises(OutputAllocationError) as caught,
    ):
        TensorValue.parameter(values)
    assert (caught.value.operation, caught.value.elements) == ("parameter gradient", 3)


def test_an_operation_output_that_cannot_be_allocated_records_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weight = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
    with (
        failing_numpy(monkeypatch, ops_module, "add"),
        pytest.raises(OutputAllocationError) as caught,
    ):
        weight.add(weight)
    assert (caught.value.operation, caught.value.elements) == ("add", 2)


def test_a_backward_that_runs_out_of_memory_changes_no_stored_gradient(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.ones((1, 3, 2)))
    shifted = leaf.add(Tensor((4, 2), [0.0] * 8))  # an operation table: its gradient is densified
    output = shifted.gather_rows([3, 3], (2,))
    before = leaf_state(leaf)
    with failing_numpy(monkeypatch, gradient_module, "zeros"), pytest.raises(MemoryError):
        output.backward_with_seed(np.ones((2, 2)))
    assert leaf_state(leaf) == before


def test_a_backward_that_runs_out_of_memory_raises_a_typed_error(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    shifted = known_layer.table.tensor.add(Tensor((4, 2), [0.0] * 8))
    output = shifted.gather_rows([3, 3], (2,))
    with failing_numpy(monkeypatch, gradient_module, "zeros"), pytest.raises(OutputAllocationError):
        output.backward_with_seed(np.ones((2, 2)))
