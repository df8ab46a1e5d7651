"""``Tensor.from_numpy``: a copy with the array's shape and dtype, read like every other array."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import llm_from_scratch.tensor.storage as storage_module
from llm_from_scratch.errors import AllocationError, ShapeError
from llm_from_scratch.tensor import (
    MAX_AXES,
    Tensor,
)

from adversarial_inputs import LiesAboutItsLayout, ShowsOtherValues
from checks import check_outcome, failing_numpy, raises_rule
from reference import Returns, expected_from_numpy

FLOAT_DTYPES = ["<f4", ">f4", "<f8", ">f8"]
INTEGER_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", ">i8", ">u4"]
REFUSED_DTYPES = ["?", "f2", "g", "c8", "c16", "O", "U3", "S2", "M8[s]", "m8[s]"]


def same_bits(tensor: Tensor, expected: np.ndarray[Any, Any]) -> bool:
    return (
        tensor.shape == expected.shape
        and tensor.dtype == expected.dtype
        and tensor.numpy().tobytes() == expected.tobytes()
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_a_float_array_keeps_its_shape_and_dtype_in_native_byte_order(dtype: str) -> None:
    array = np.array([[0.5, -1.25, 3.0], [np.nan, np.inf, -0.0]], dtype=dtype)
    tensor = Tensor.from_numpy(array)
    native = np.dtype(dtype).newbyteorder("=")
    assert tensor.shape == (2, 3) and tensor.dtype == native
    assert tensor.numpy().tobytes() == array.astype(native).tobytes()


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_an_integer_array_becomes_float64_with_exact_small_values(dtype: str) -> None:
    info = np.iinfo(np.dtype(dtype))
    array = np.array([[info.min, 0], [1, info.max]], dtype=dtype)
    tensor = Tensor.from_numpy(array)
    assert tensor.dtype == np.float64 and tensor.shape == (2, 2)
    assert tensor.tolist() == [[float(int(info.min)), 0.0], [1.0, float(int(info.max))]]


def test_integers_beyond_two_to_the_53_round_to_nearest() -> None:
    tensor = Tensor.from_numpy(np.array([2**53 + 1, 2**63 - 1], dtype=np.int64))
    assert tensor.flat_values() == [float(2**53), float(2**63)]


@pytest.mark.parametrize("dtype", REFUSED_DTYPES)
def test_bool_and_every_other_dtype_are_refused_by_name(dtype: str) -> None:
    array = np.zeros(3, dtype=dtype)
    with raises_rule(ShapeError, "tensor.value-type") as caught:
        Tensor.from_numpy(array)
    assert caught.value.detail == (
        f"from_numpy takes a float32, float64 or integer array, got {array.dtype}"
    )


def test_a_structured_array_is_refused() -> None:
    with raises_rule(ShapeError, "tensor.value-type"):
        Tensor.from_numpy(np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]))


@pytest.mark.parametrize(
    "value",
    [[1.0, 2.0], (1, 2), np.float32(1.5), np.int64(3), 2.0, None, "1.0", b"\x00"],
    ids=repr,
)
def test_anything_but_an_ndarray_is_refused_with_its_type(value: object) -> None:
    with raises_rule(ShapeError, "tensor.value-type") as caught:
        Tensor.from_numpy(value)  # type: ignore[arg-type]
    assert caught.value.detail == f"from_numpy needs a NumPy array, got {type(value).__name__}"


def test_a_tensor_is_not_a_numpy_array() -> None:
    with raises_rule(ShapeError, "tensor.value-type"):
        Tensor.from_numpy(Tensor((1,), [1.0]))  # type: ignore[arg-type]


def test_the_tensor_is_a_copy_that_later_writes_to_the_array_do_not_change() -> None:
    array = np.array([1.0, 2.0], dtype=np.float32)
    tensor = Tensor.from_numpy(array)
    array[0] = 9.0
    assert tensor.flat_values() == [1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        tensor.numpy()[0] = 5.0


def test_a_scalar_array_and_zero_size_arrays_keep_their_shapes() -> None:
    assert Tensor.from_numpy(np.array(2.5, dtype=np.float32)).shape == ()
    for shape in [(0,), (3, 0), (0, 0, 4)]:
        tensor = Tensor.from_numpy(np.zeros(shape, dtype=np.float32))
        assert tensor.shape == shape and tensor.dtype == np.float32 and tensor.element_count == 0


def test_non_contiguous_arrays_are_read_in_row_major_order() -> None:
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    for view in (base.T, base[:, ::2], base[::-1], np.asfortranarray(base)):
        tensor = Tensor.from_numpy(view)
        assert tensor.shape == view.shape
        assert tensor.numpy().tobytes() == np.ascontiguousarray(view).tobytes()


def test_an_array_with_as_many_axes_as_numpy_allows_is_accepted() -> None:
    tensor = Tensor.from_numpy(np.zeros((1,) * MAX_AXES, dtype=np.float32))
    assert tensor.shape == (1,) * MAX_AXES


def test_a_subclass_is_read_as_the_memory_it_holds() -> None:
    base = np.array([[1.5, 2.5], [3.5, 4.5]], dtype=np.float32)
    for subclass in (ShowsOtherValues, LiesAboutItsLayout):
        tensor = Tensor.from_numpy(base.view(subclass))
        assert same_bits(tensor, base)


def test_a_masked_array_is_refused_whatever_its_mask() -> None:
    for mask in (np.ma.nomask, [False, False], [True, False]):
        with raises_rule(ShapeError, "tensor.value-type", match="masked"):
            Tensor.from_numpy(np.ma.array([1.0, 2.0], mask=mask))


def test_a_copy_that_cannot_be_allocated_is_a_tensor_allocation_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with (
        failing_numpy(monkeypatch, storage_module, "empty"),
        raises_rule(AllocationError, "tensor.allocation") as caught,
    ):
        Tensor.from_numpy(np.zeros((3, 2), dtype=np.float32))
    assert caught.value.elements == 6


ANY_DTYPE = st.sampled_from([*FLOAT_DTYPES, *INTEGER_DTYPES, "?", "f2", "c16"])


@st.composite
def numpy_inputs(draw: st.DrawFn) -> object:
    """Arrays of every dtype family and layout, masked arrays, subclasses and non-arrays."""
    array = draw(arrays(ANY_DTYPE, array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)))
    layout = draw(st.sampled_from(["plain", "transposed", "read-only", "subclass", "masked"]))
    if layout == "transposed":
        return array.T
    if layout == "read-only":
        array.flags.writeable = False
    if layout == "subclass":
        return array.view(ShowsOtherValues)
    if layout == "masked":
        return np.ma.array(array)
    return array if draw(st.integers(0, 9)) else array.tolist()


@given(numpy_inputs())
def test_from_numpy_returns_the_reference_copy_or_raises_the_documented_error(
    array: object,
) -> None:
    expected = expected_from_numpy(array)
    tensor = check_outcome(lambda: Tensor.from_numpy(array), expected)  # type: ignore[arg-type]
    if isinstance(expected, Returns):
        assert same_bits(tensor, expected.value)  # type: ignore[arg-type]
