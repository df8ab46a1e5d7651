"""Property tests: shapes and tensors either raise the documented error or equal the reference.

``checked_row_major_layout`` is compared with a plain loop over the extents; ``Tensor`` with the
contract's order (shape, dtype, container, value count, then each value); values handed out are
read-only and independent of the caller's arrays.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from llm_from_scratch.tensor import (
    DataLengthMismatchError,
    ShapeOverflowError,
    Tensor,
    TensorAllocationError,
    TensorValueOverflowError,
    TensorValueTypeError,
    checked_row_major_layout,
)

from fuzz_support import (
    HUGE_EXTENTS,
    INTEGER_DTYPES,
    Outcome,
    Raises,
    Returns,
    check_outcome,
    numpy_cannot_hold,
    reference_layout,
    shapes,
)


@given(st.one_of(shapes(), st.lists(st.sampled_from([0, 1, 3, *HUGE_EXTENTS]), max_size=4)))
def test_the_layout_raises_the_documented_error_or_equals_the_plain_loop(shape: object) -> None:
    expected = reference_layout(shape)
    check_outcome(
        lambda: checked_row_major_layout(shape),
        expected if isinstance(expected, Raises) else Returns(),
    )
    if not isinstance(expected, Raises):
        assert checked_row_major_layout(shape) == expected


def real_items() -> st.SearchStrategy[object]:
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(2**70), 2**70),
        st.booleans(),
        st.sampled_from(INTEGER_DTYPES).map(lambda dtype: dtype(1)),
        st.just(np.float32(0.5)),
    )


def value_containers(count: int) -> st.SearchStrategy[object]:
    """Flat values: lists of real numbers (sometimes with a bad item), arrays of every dtype
    (sometimes non-contiguous, read-only or multi-dimensional), and non-sequences."""
    bad_item = st.sampled_from([None, "1", 1j, [1.0]])
    lists = st.lists(real_items(), min_size=count, max_size=count)
    spoiled = st.tuples(lists, bad_item, st.integers(0, max(count, 1))).map(
        lambda t: [*t[0][: t[2]], t[1], *t[0][t[2] :]]
    )
    dtypes = st.sampled_from(
        [np.float64, np.float32, np.int16, np.uint64, np.bool_, np.complex128, np.str_, object]
    )

    @st.composite
    def numpy_values(draw: st.DrawFn) -> np.ndarray[Any, Any]:
        dtype = draw(dtypes)
        array = draw(arrays(dtype, draw(st.sampled_from([(count,), (1, count), (2 * count,)]))))
        if array.ndim == 1 and array.size == 2 * count:
            array = array[::2]  # non-contiguous
        if draw(st.booleans()):
            array.flags.writeable = False
        return array

    others = st.sampled_from(["12", b"\x01", 3.0, None, np.float64(2.0)])
    return st.one_of(lists, lists, spoiled, numpy_values(), others)


def expected_tensor(shape: object, values: object, dtype: object) -> Outcome:
    """Shape, dtype, container, value count, a NumPy-representable shape, then each value in
    flat order (a non-real one, or one whose conversion to ``dtype`` overflows)."""
    layout = reference_layout(shape)
    if isinstance(layout, Raises):
        return layout
    if dtype not in (np.float64, np.float32):
        return Raises(TensorValueTypeError)
    if isinstance(values, str | bytes):
        return Raises(TensorValueTypeError)
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "biuf":
            return Raises(TensorValueTypeError)
        items: list[object] = values.reshape(-1).tolist()
    elif not isinstance(values, list | tuple):
        return Raises(TensorValueTypeError)
    else:
        items = list(values)
    if len(items) != layout[1]:
        return Raises(DataLengthMismatchError, {"expected": layout[1], "actual": len(items)})
    extents = tuple(int(extent) for extent in shape)  # type: ignore[attr-defined]
    if numpy_cannot_hold(extents, np.dtype(dtype).itemsize):  # type: ignore[arg-type]
        return Raises(ShapeOverflowError, {"shape": extents})
    converted = []
    for position, value in enumerate(items):
        if not isinstance(value, numbers.Real):
            return Raises(TensorValueTypeError)
        try:
            wide = float(value)
        except OverflowError:
            return Raises(TensorValueOverflowError, {"position": position, "value": value})
        with np.errstate(over="ignore"):
            narrow = np.array(wide, dtype=dtype)  # type: ignore[call-overload]
        if math.isfinite(wide) and not np.isfinite(narrow):
            return Raises(TensorValueOverflowError, {"position": position, "value": value})
        converted.append(narrow)
    return Returns(np.array(converted, dtype=dtype).reshape(extents))  # type: ignore[call-overload]


@given(shapes(), st.data(), st.sampled_from([np.float64, np.float64, np.float32, np.int64]))
def test_a_tensor_raises_the_documented_error_or_holds_a_read_only_copy_of_the_values(
    shape: object, data: st.DataObject, dtype: object
) -> None:
    count = reference_layout(shape)
    size = count[1] if not isinstance(count, Raises) and count[1] <= 12 else 2
    values = data.draw(value_containers(size), label="values")
    expected = expected_tensor(shape, values, dtype)
    tensor = check_outcome(lambda: Tensor(shape, values, dtype=dtype), expected)  # type: ignore[arg-type]
    if isinstance(expected, Returns):
        reference = expected.value
        assert tensor.shape == reference.shape  # type: ignore[attr-defined]
        assert tensor.numpy().tobytes() == reference.tobytes()  # type: ignore[attr-defined]
        if isinstance(values, np.ndarray) and values.flags.writeable and values.size:
            values.reshape(-1)[0] = 0 if values.dtype.kind != "b" else not values.flat[0]
            assert tensor.numpy().tobytes() == reference.tobytes()  # type: ignore[attr-defined]
        handed_out = tensor.numpy()
        if handed_out.size:
            with pytest.raises(ValueError, match="read-only"):
                handed_out.reshape(-1)[0] = 1.0
        with pytest.raises(ValueError):
            handed_out.flags.writeable = True


@given(st.one_of(shapes(), st.lists(st.sampled_from([0, 2, *HUGE_EXTENTS]), max_size=3)))
def test_zeros_raises_a_typed_error_for_any_shape_it_cannot_hold(shape: object) -> None:
    layout = reference_layout(shape)
    expected: Outcome
    if isinstance(layout, Raises):
        expected = layout
    else:
        extents = tuple(int(extent) for extent in shape)  # type: ignore[attr-defined]
        too_big = numpy_cannot_hold(extents, 8)
        assume(too_big or layout[1] <= 4096)  # never ask the OS for a real large block
        if too_big:
            error = ShapeOverflowError if layout[1] == 0 else TensorAllocationError
            expected = Raises(error)
        else:
            expected = Returns()
    zeros = check_outcome(lambda: Tensor.zeros(shape), expected)  # type: ignore[arg-type]
    if zeros is not None:
        assert not zeros.numpy().any() and zeros.shape == tuple(shape)  # type: ignore[arg-type]
