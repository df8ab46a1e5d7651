"""A shape is read once, extent by extent, and never beyond ``MAX_AXES + 1`` extents.

The reference is the first answer of each extent whose answer changes, and NumPy's own limit
on axes (an array of ``MAX_AXES + 1`` axes cannot exist).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import ShapeError
from llm_from_scratch.tensor import (
    MAX_AXES,
    Tensor,
    checked_row_major_layout,
)

from adversarial_inputs import ChangingInteger, FailingInteger
from checks import leaf_state, raises_rule, within_seconds
from reference import row_major_layout


def test_max_axes_is_numpys_own_limit() -> None:
    assert np.empty((1,) * MAX_AXES).ndim == MAX_AXES
    with pytest.raises(ValueError):
        np.empty((1,) * (MAX_AXES + 1))


@st.composite
def changing_shapes(draw: st.DrawFn) -> tuple[list[object], list[int]]:
    """A shape where some extents change their answer on every read; and the first answers."""
    first = draw(st.lists(st.integers(-1, 3), max_size=4))
    shape: list[object] = []
    for extent in first:
        if draw(st.booleans()):
            later = draw(st.lists(st.integers(-(2**64), 2**64), min_size=1, max_size=3))
            shape.append(ChangingInteger([extent, *later]))
        else:
            shape.append(extent)
    return shape, first


@given(changing_shapes())
def test_an_extent_whose_answer_changes_is_read_once_and_that_answer_is_the_extent(
    case: tuple[list[object], list[int]],
) -> None:
    shape, first = case
    expected = row_major_layout(tuple(first))
    try:
        result: Any = checked_row_major_layout(shape)
    except Exception as error:
        result = error
    if isinstance(expected, tuple):
        assert result == expected
        fresh = [ChangingInteger(e.answers) if isinstance(e, ChangingInteger) else e for e in shape]
        assert Tensor.zeros(fresh).shape == tuple(first)  # type: ignore[arg-type]
    else:
        assert type(result) is expected.error
    stop = next((axis for axis, extent in enumerate(first) if extent < 0), len(first))
    for axis, extent in enumerate(shape):
        if isinstance(extent, ChangingInteger):
            assert extent.reads == (1 if axis <= stop else 0)


def test_an_extent_that_cannot_be_read_is_a_non_integer_extent() -> None:
    failing = FailingInteger()
    with raises_rule(ShapeError, "shape.extent-type") as caught:
        checked_row_major_layout((2, failing))
    assert (caught.value.axis, caught.value.extent) == (1, failing)
    assert isinstance(caught.value.__cause__, TypeError)


@pytest.mark.parametrize("extra", [1, 6, 1000])
def test_a_shape_with_more_than_max_axes_is_too_many_axes(extra: int) -> None:
    shape = (1,) * (MAX_AXES + extra)
    for call in (
        lambda: checked_row_major_layout(shape),
        lambda: Tensor(shape, [1.0]),
        lambda: Tensor.zeros(shape),
    ):
        with raises_rule(ShapeError, "shape.too-many-axes") as caught:
            call()
        assert caught.value.limit == MAX_AXES
    assert Tensor((1,) * MAX_AXES, [1.0]).shape == (1,) * MAX_AXES


def test_a_seventy_axis_one_element_tensor_is_a_shape_error_not_an_allocation_error() -> None:
    with raises_rule(ShapeError, "shape.too-many-axes"):
        Tensor((1,) * 70, [1.0])


class CountingExtents:
    """An endless iterable of extents 1 that counts how many were read."""

    def __init__(self) -> None:
        self.read = 0

    def __iter__(self) -> Any:
        for _ in itertools.count():
            self.read += 1
            yield 1


def test_at_most_max_axes_plus_one_extents_are_read_from_an_endless_shape() -> None:
    extents = CountingExtents()
    with within_seconds(1.0), raises_rule(ShapeError, "shape.too-many-axes"):
        checked_row_major_layout(extents)
    assert extents.read == MAX_AXES + 1


@given(st.lists(st.sampled_from([-1, 1.5, None, "2"]), max_size=1), st.integers(0, 70))
def test_a_bad_extent_before_the_limit_is_reported_before_too_many_axes(
    bad: list[object], at: int
) -> None:
    shape = itertools.chain(itertools.repeat(1, at), bad, itertools.repeat(1))
    with within_seconds(1.0), pytest.raises(ShapeError) as caught:
        checked_row_major_layout(shape)
    if bad and at < MAX_AXES:
        expected = "shape.negative-extent" if bad[0] == -1 else "shape.extent-type"
        assert caught.value.rule == expected and caught.value.axis == at
    else:
        assert caught.value.rule == "shape.too-many-axes"


@pytest.mark.parametrize(
    "shape",
    [np.array(3), np.array([[2, 2]]), np.ma.array([2, 2], mask=[0, 1])],
    ids=["zero-d", "two-d", "masked"],
)
def test_a_zero_d_two_d_or_masked_array_is_no_shape(shape: Any) -> None:
    leaf = TensorValue.parameter(Tensor((4,), [1.0, 2.0, 3.0, 4.0]))
    before = leaf_state(leaf)
    for call in (lambda: Tensor(shape, [1.0]), lambda: Tensor.zeros(shape)):
        with raises_rule(ShapeError, "shape.type"):
            call()
    with raises_rule(ShapeError, "shape.invalid") as caught:
        leaf.reshape(shape)
    assert caught.value.__cause__.rule == "shape.type"
    assert leaf_state(leaf) == before


def test_a_one_d_integer_array_is_a_shape() -> None:
    assert Tensor(np.array([2, 1], dtype=np.uint8), [1.0, 2.0]).shape == (2, 1)


def test_reshape_to_too_many_axes_or_to_an_empty_shape_numpy_cannot_hold_is_typed() -> None:
    leaf = TensorValue.parameter(Tensor((1,), [1.0]))
    with raises_rule(ShapeError, "shape.invalid") as axes:
        leaf.reshape((1,) * 70)
    assert axes.value.__cause__.rule == "shape.too-many-axes"
    assert axes.value.what == "reshape target shape"
    empty = TensorValue.parameter(Tensor((0,), []))
    before = leaf_state(empty)
    with raises_rule(ShapeError, "shape.invalid") as overflow:
        empty.reshape((2**62, 0))
    assert overflow.value.__cause__.rule == "shape.overflow"
    assert overflow.value.__cause__.shape == (2**62, 0)
    assert empty.reshape((2**59, 0)).shape == (2**59, 0)  # NumPy can describe this one
    assert leaf_state(empty) == before
