from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.tensor import (
    DataLengthMismatchError,
    NegativeExtentError,
    NonIntegerExtentError,
    ShapeOverflowError,
    ShapeTypeError,
    Tensor,
    TensorError,
    TensorValueTypeError,
    checked_row_major_layout,
)


def test_layout_gives_row_major_strides_and_count() -> None:
    assert checked_row_major_layout((2, 3, 4)) == ((12, 4, 1), 24)
    assert checked_row_major_layout([5]) == ((1,), 5)


def test_scalar_shape_has_one_element_and_zero_extent_has_none() -> None:
    assert checked_row_major_layout(()) == ((), 1)
    assert checked_row_major_layout((3, 0, 2))[1] == 0


def test_layout_rejects_a_count_past_the_signed_64_bit_limit() -> None:
    with pytest.raises(ShapeOverflowError) as caught:
        checked_row_major_layout((2**32, 2**31))
    assert str(caught.value) == "shape does not fit a row-major usize layout"
    assert caught.value.shape == (2**32, 2**31)


def test_layout_rejects_an_overflowing_suffix_even_when_a_zero_extent_follows_before_it() -> None:
    with pytest.raises(ShapeOverflowError):
        checked_row_major_layout((0, 2**40, 2**40))


def test_layout_accepts_the_largest_signed_64_bit_count() -> None:
    assert checked_row_major_layout((2**63 - 1,))[1] == 2**63 - 1


def test_layout_rejects_a_negative_extent_with_its_axis() -> None:
    with pytest.raises(NegativeExtentError) as caught:
        checked_row_major_layout((2, -1))
    assert (caught.value.axis, caught.value.extent) == (1, -1)


@pytest.mark.parametrize("extent", [True, 2.0, "3", None])
def test_layout_rejects_non_integer_extents_including_bool(extent: object) -> None:
    with pytest.raises(NonIntegerExtentError) as caught:
        checked_row_major_layout((1, extent))
    assert caught.value.axis == 1
    assert isinstance(caught.value, TypeError)


def test_layout_accepts_numpy_integer_extents() -> None:
    assert checked_row_major_layout((np.int64(2), np.uint8(3)))[1] == 6


def test_layout_rejects_a_shape_that_is_not_a_sequence() -> None:
    with pytest.raises(ShapeTypeError):
        checked_row_major_layout(3)
    with pytest.raises(ShapeTypeError):
        checked_row_major_layout("23")


def test_tensor_reports_expected_and_actual_value_counts() -> None:
    with pytest.raises(DataLengthMismatchError) as caught:
        Tensor((2, 2), [1.0, 2.0, 3.0])
    assert (caught.value.expected, caught.value.actual) == (4, 3)
    assert str(caught.value) == "shape needs 4 values, but data has 3"


def test_tensor_checks_the_layout_before_the_value_count() -> None:
    with pytest.raises(NegativeExtentError):
        Tensor((-1,), [1.0])


def test_tensor_rejects_non_real_values_with_their_position() -> None:
    with pytest.raises(TensorValueTypeError, match="flat position 1"):
        Tensor((2,), [1.0, "x"])  # type: ignore[list-item]


def test_tensor_copies_its_values_and_hands_out_read_only_arrays() -> None:
    source = np.array([1.0, 2.0])
    tensor = Tensor((2,), source)
    source[0] = 99.0
    assert tensor.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError):
        tensor.numpy()[0] = 5.0


def test_tensor_reads_a_numpy_array_in_row_major_order() -> None:
    tensor = Tensor((3, 2), np.arange(6).reshape(2, 3))
    assert tensor.flat_values() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_tensor_supports_float32_and_rejects_other_dtypes() -> None:
    assert Tensor((1,), [1.5], dtype=np.float32).dtype == np.float32
    with pytest.raises(TensorValueTypeError):
        Tensor((1,), [1], dtype=np.int64)


def test_scalar_and_empty_tensors() -> None:
    assert Tensor((), [7.0]).numpy().shape == ()
    assert Tensor((0, 2), []).element_count == 0


def test_tensor_errors_share_one_base_class() -> None:
    for error in (DataLengthMismatchError, ShapeOverflowError, NegativeExtentError):
        assert issubclass(error, TensorError)
