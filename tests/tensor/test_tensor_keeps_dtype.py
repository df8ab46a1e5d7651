"""``Tensor(shape, values)`` without ``dtype`` keeps a float32 or float64 array's dtype, as NumPy
does; every other input becomes float64 as before, and an explicit ``dtype`` always wins."""

from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.errors import NonFiniteError, ShapeError
from llm_from_scratch.tensor import (
    Tensor,
)

from adversarial_inputs import LiesAboutItsLayout
from checks import raises_rule


@pytest.mark.parametrize(
    ("dtype", "kept"),
    [("<f4", np.float32), (">f4", np.float32), ("<f8", np.float64), (">f8", np.float64)],
)
def test_a_float32_or_float64_array_keeps_its_dtype(dtype: str, kept: type) -> None:
    values = np.array([0.1, -2.5, 3.75], dtype=dtype)
    tensor = Tensor((3,), values)
    assert tensor.dtype == kept
    assert tensor.numpy().tobytes() == values.astype(kept).tobytes()


@pytest.mark.parametrize("dtype", ["f2", "g", "i1", "u8", "?"])
def test_any_other_array_becomes_float64(dtype: str) -> None:
    assert Tensor((2,), np.ones(2, dtype=dtype)).dtype == np.float64


@pytest.mark.parametrize(
    "values",
    [[1.0, 2.0], (1, 2), range(2), iter([0.5, 1.5]), [np.float32(1), np.float32(2)]],
    ids=repr,
)
def test_sequences_become_float64_even_of_float32_scalars(values: object) -> None:
    assert Tensor((2,), values).dtype == np.float64  # type: ignore[arg-type]


def test_none_is_the_same_as_leaving_dtype_out() -> None:
    values = np.array([1.5, 2.5], dtype=np.float32)
    assert Tensor((2,), values, dtype=None).dtype == np.float32
    assert Tensor((2,), [1.5, 2.5], dtype=None).dtype == np.float64


def test_an_explicit_dtype_converts_in_either_direction() -> None:
    narrow = np.array([0.1, 2.0], dtype=np.float32)
    wide = Tensor((2,), narrow, dtype=np.float64)
    assert wide.dtype == np.float64 and wide.flat_values() == [float(narrow[0]), 2.0]
    assert Tensor((2,), np.array([0.1, 2.0]), dtype=np.float32).dtype == np.float32
    with raises_rule(NonFiniteError, "tensor.overflow"):
        Tensor((1,), np.array([1e300]), dtype=np.float32)


def test_a_kept_dtype_is_read_from_the_memory_of_a_subclass() -> None:
    values = np.array([[1.5, 2.5]], dtype=np.float32).view(LiesAboutItsLayout)
    tensor = Tensor((2,), values)
    assert tensor.dtype == np.float32 and tensor.flat_values() == [1.5, 2.5]


def test_the_shape_is_still_checked_first_then_an_explicit_dtype_then_the_values() -> None:
    with raises_rule(ShapeError, "shape.negative-extent"):
        Tensor((-1,), "not values", dtype="int8")  # type: ignore[arg-type]
    with raises_rule(ShapeError, "tensor.value-type", match="dtype must be float64 or float32"):
        Tensor((2,), "not values", dtype=np.int8)  # type: ignore[arg-type]
    with raises_rule(ShapeError, "tensor.value-type", match="got str"):
        Tensor((2,), "12")  # type: ignore[arg-type]
