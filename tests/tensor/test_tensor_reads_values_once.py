"""``Tensor`` counts the values before it copies them, reads each once, and refuses a finite value
that overflows its dtype.

The reference is the values as the test built them: the memory an array holds, the first
answer of a real number whose answer changes; conversion and overflow follow the reference
model of ``Tensor``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.errors import AllocationError, NonFiniteError, ShapeError
from llm_from_scratch.tensor import (
    Tensor,
)

from adversarial_inputs import (
    ChangingReal,
    LiesAboutItsLayout,
    ShowsOtherValues,
    array_layouts,
    masks,
)
from checks import check_outcome, raises_rule, within_seconds
from reference import Returns, expected_tensor

FLOAT32_MAX = float(np.finfo(np.float32).max)
VALUES = st.one_of(
    st.floats(-4, 4),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([3.5e38, -3.5e38, 1e300, FLOAT32_MAX, 1e39, 2.0**128]),
    st.integers(-(2**70), 2**70),
)


@given(st.lists(VALUES, max_size=8), st.sampled_from([np.float64, np.float32]))
def test_a_list_converts_each_value_or_names_the_first_that_overflows_the_dtype(
    values: list[float], dtype: type
) -> None:
    expected = expected_tensor((len(values),), values, dtype)
    tensor = check_outcome(lambda: Tensor((len(values),), values, dtype=dtype), expected)
    if isinstance(expected, Returns):
        assert tensor.numpy().tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=8), st.data())
def test_a_float64_array_converted_to_float32_names_the_first_value_that_overflows(
    values: list[float], data: st.DataObject
) -> None:
    base = np.array(values, dtype=np.float64)
    array = data.draw(array_layouts(base), label="layout")
    expected = expected_tensor((base.size,), array, np.float32)
    tensor = check_outcome(lambda: Tensor((base.size,), array, dtype=np.float32), expected)
    if isinstance(expected, Returns):
        assert tensor.numpy().tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]


def test_the_overflow_examples_are_refused_and_an_int_beyond_float64_too() -> None:
    for values in ([1e300], np.array([1e300])):
        with raises_rule(NonFiniteError, "tensor.overflow") as caught:
            Tensor((1,), values, dtype=np.float32)
        assert (caught.value.position, caught.value.value, caught.value.dtype) == (
            0,
            1e300,
            "float32",
        )
    with raises_rule(NonFiniteError, "tensor.overflow") as huge:
        Tensor((2,), [1, 10**400])
    assert (huge.value.position, huge.value.value, huge.value.dtype) == (1, 10**400, "float64")
    assert np.isinf(Tensor((1,), [float("inf")], dtype=np.float32).numpy()).all()


@st.composite
def values_with_changing_reals(draw: st.DrawFn) -> tuple[list[object], list[float]]:
    first = draw(st.lists(st.floats(-4, 4), min_size=1, max_size=6))
    items: list[object] = []
    for value in first:
        if draw(st.booleans()):
            items.append(ChangingReal([value, *draw(st.lists(VALUES.map(float), min_size=1))]))
        else:
            items.append(value)
    return items, first


@given(values_with_changing_reals())
def test_a_real_whose_answer_changes_is_read_once_and_that_answer_is_stored(
    case: tuple[list[object], list[float]],
) -> None:
    items, first = case
    tensor = Tensor((len(items),), items)
    assert tensor.flat_values() == first
    for item in items:
        if isinstance(item, ChangingReal):
            assert item.reads == 1


@given(st.lists(st.floats(-4, 4), max_size=8), st.data())
def test_an_array_subclass_gives_the_values_its_memory_holds(
    values: list[float], data: st.DataObject
) -> None:
    base = np.array(values)
    array = data.draw(array_layouts(base), label="layout").view(ShowsOtherValues)
    assert Tensor((base.size,), array).numpy().tobytes() == base.tobytes()
    masked = np.ma.array(base, mask=data.draw(masks(base.size), label="mask"))
    with raises_rule(ShapeError, "tensor.value-type", match="masked"):
        Tensor((base.size,), masked)


@pytest.mark.parametrize(
    "values",
    [
        np.rec.array([(1.0, 2.0)], dtype=[("a", float), ("b", float)]),
        np.array([1 + 1j]),
        np.array(["1.0"]),
    ],
    ids=["structured", "complex", "str"],
)
def test_an_array_of_a_non_real_dtype_is_a_value_type_error(values: Any) -> None:
    with raises_rule(ShapeError, "tensor.value-type"):
        Tensor((1,), values)


def test_a_sized_input_is_counted_before_any_value_is_read() -> None:
    with within_seconds(1.0), raises_rule(ShapeError, "tensor.data-length") as caught:
        Tensor((2,), range(2**62))
    assert (caught.value.expected, caught.value.actual) == (2, 2**62)


@pytest.mark.parametrize(
    ("values", "actual"),
    [
        (itertools.repeat(1.0), 4),
        (itertools.count(), 4),
        (iter([1.0, 2.0]), 2),
        ((float(v) for v in range(10)), 4),
    ],
    ids=["repeat", "count", "short", "long-generator"],
)
def test_an_iterator_is_read_at_most_one_value_past_the_count(values: Any, actual: int) -> None:
    with within_seconds(1.0), raises_rule(ShapeError, "tensor.data-length") as caught:
        Tensor((3,), values)
    assert (caught.value.expected, caught.value.actual) == (3, actual)


def test_an_iterator_of_the_right_length_is_read_once() -> None:
    assert Tensor((2, 2), iter([1, 2, 3, 4.5])).flat_values() == [1.0, 2.0, 3.0, 4.5]


def test_a_huge_broadcast_array_is_an_allocation_error_not_a_raw_numpy_error() -> None:
    values = np.broadcast_to(np.int8(0), (2**31, 2**31))
    with within_seconds(1.0), raises_rule(AllocationError, "tensor.allocation") as caught:
        Tensor((2**31, 2**31), values)
    assert caught.value.elements == 2**62


@given(st.lists(st.floats(-4, 4), min_size=1, max_size=5), st.integers(0, 4), st.data())
def test_the_first_bad_value_in_flat_order_wins_between_a_type_error_and_an_overflow(
    values: list[float], bad_at: int, data: st.DataObject
) -> None:
    items: list[object] = list(values)
    overflow_at = data.draw(st.integers(0, len(items)), label="overflow_at")
    bad_at = min(bad_at, len(items))
    items.insert(overflow_at, 1e300)
    items.insert(bad_at, None)
    with pytest.raises((ShapeError, NonFiniteError)) as caught:
        Tensor((len(items),), items, dtype=np.float32)
    first = items.index(None) if items.index(None) < items.index(1e300) else items.index(1e300)
    if items[first] is None:
        assert type(caught.value) is ShapeError and caught.value.rule == "tensor.value-type"
        assert f"flat position {first} " in str(caught.value)
    else:
        assert type(caught.value) is NonFiniteError and caught.value.rule == "tensor.overflow"
        assert caught.value.position == first


def test_an_array_subclass_that_lies_about_its_layout_gives_its_real_values() -> None:
    values = np.array([[1.5, 2.5], [3.5, 4.5]]).view(LiesAboutItsLayout)
    assert Tensor((4,), values).flat_values() == [1.5, 2.5, 3.5, 4.5]
    assert Tensor(np.array([2, 2]).view(LiesAboutItsLayout), values).shape == (2, 2)
