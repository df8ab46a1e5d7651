"""``Tensor`` and ``Tensor.zeros``: checked construction in the contract's order, copied values,
read-only arrays, and a typed error for every shape NumPy cannot hold.

The properties compare any shape, values and dtype with the reference model; values handed out
are read-only and independent of the caller's arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from llm_from_scratch.errors import RULES, AllocationError, LlmError, ShapeError
from llm_from_scratch.tensor import (
    Tensor,
    checked_row_major_layout,
)

from checks import check_outcome, raises_rule, within_seconds
from reference import (
    Raises,
    Returns,
    element_count,
    expected_tensor,
    expected_zeros,
)
from strategies import HUGE_EXTENTS, INTEGER_DTYPES, shapes

HUGE_SHAPE = (2**31, 2**31)


def test_tensor_reports_expected_and_actual_value_counts() -> None:
    with raises_rule(ShapeError, "tensor.data-length") as caught:
        Tensor((2, 2), [1.0, 2.0, 3.0])
    assert (caught.value.expected, caught.value.actual) == (4, 3)
    assert str(caught.value) == "shape needs 4 values, but data has 3"


def test_tensor_checks_the_layout_before_the_value_count() -> None:
    with raises_rule(ShapeError, "shape.negative-extent"):
        Tensor((-1,), [1.0])


def test_tensor_rejects_non_real_values_with_their_position() -> None:
    with raises_rule(ShapeError, "tensor.value-type", match="flat position 1"):
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
    with raises_rule(ShapeError, "tensor.value-type"):
        Tensor((1,), [1], dtype=np.int64)


def test_scalar_and_empty_tensors() -> None:
    assert Tensor((), [7.0]).numpy().shape == ()
    assert Tensor((0, 2), []).element_count == 0


def test_tensor_errors_share_one_base_class() -> None:
    for rule in ("tensor.data-length", "shape.overflow", "shape.negative-extent"):
        assert issubclass(RULES[rule].family, LlmError)


def test_huge_tensors_fail_fast_with_typed_errors() -> None:
    with within_seconds(1.0):
        assert checked_row_major_layout(HUGE_SHAPE) == ((2**31, 1), 2**62)  # never allocates
        with raises_rule(AllocationError, "tensor.allocation") as zeros:
            Tensor.zeros(HUGE_SHAPE)
        with raises_rule(ShapeError, "tensor.data-length"):
            Tensor(HUGE_SHAPE, [1.0])
        with raises_rule(ShapeError, "shape.overflow"):
            Tensor((2**62, 0), [])  # no elements, but NumPy cannot describe the shape
    assert zeros.value.elements == 2**62


# Properties ----------------------------------------------------------------------------------


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


@given(shapes(), st.data(), st.sampled_from([np.float64, np.float32, np.int64, None, None]))
def test_a_tensor_raises_the_documented_error_or_holds_a_read_only_copy_of_the_values(
    shape: object, data: st.DataObject, dtype: object
) -> None:
    count = element_count(shape)
    size = count if count is not None and count <= 12 else 2
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
    expected = expected_zeros(shape)
    if isinstance(expected, Returns):  # never ask the OS for a real large block
        assume((element_count(expected.value) or 0) <= 4096)
    zeros = check_outcome(lambda: Tensor.zeros(shape), expected)  # type: ignore[arg-type]
    if isinstance(expected, Raises):
        return
    assert zeros.shape == expected.value and not zeros.numpy().any()
