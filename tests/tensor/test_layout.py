"""``checked_row_major_layout``: strides and element count of a shape, or the documented error.

The examples pin messages and edge cases; the property compares every shape, valid or not, with
the reference model's plain loop over the extents.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.errors import ShapeError
from llm_from_scratch.tensor import (
    checked_row_major_layout,
)

from checks import check_outcome, raises_rule
from reference import MAX_AXES, Raises, Returns, row_major_layout
from strategies import HUGE_EXTENTS, shapes


def test_layout_gives_row_major_strides_and_count() -> None:
    assert checked_row_major_layout((2, 3, 4)) == ((12, 4, 1), 24)
    assert checked_row_major_layout([5]) == ((1,), 5)


def test_scalar_shape_has_one_element_and_zero_extent_has_none() -> None:
    assert checked_row_major_layout(()) == ((), 1)
    assert checked_row_major_layout((3, 0, 2))[1] == 0


def test_layout_rejects_a_count_past_the_signed_64_bit_limit() -> None:
    with raises_rule(ShapeError, "shape.overflow") as caught:
        checked_row_major_layout((2**32, 2**31))
    assert str(caught.value) == "shape does not fit a row-major usize layout"
    assert caught.value.shape == (2**32, 2**31)


def test_layout_rejects_an_overflowing_suffix_even_when_a_zero_extent_follows_before_it() -> None:
    with raises_rule(ShapeError, "shape.overflow"):
        checked_row_major_layout((0, 2**40, 2**40))


def test_layout_accepts_the_largest_signed_64_bit_count() -> None:
    assert checked_row_major_layout((2**63 - 1,))[1] == 2**63 - 1


def test_layout_rejects_a_negative_extent_with_its_axis() -> None:
    with raises_rule(ShapeError, "shape.negative-extent") as caught:
        checked_row_major_layout((2, -1))
    assert (caught.value.axis, caught.value.extent) == (1, -1)


@pytest.mark.parametrize("extent", [True, 2.0, "3", None])
def test_layout_rejects_non_integer_extents_including_bool(extent: object) -> None:
    with raises_rule(ShapeError, "shape.extent-type") as caught:
        checked_row_major_layout((1, extent))
    assert caught.value.axis == 1
    assert isinstance(caught.value, TypeError)


def test_layout_accepts_numpy_integer_extents() -> None:
    assert checked_row_major_layout((np.int64(2), np.uint8(3)))[1] == 6


def test_layout_rejects_a_shape_that_is_not_a_sequence() -> None:
    with raises_rule(ShapeError, "shape.type"):
        checked_row_major_layout(3)
    with raises_rule(ShapeError, "shape.type"):
        checked_row_major_layout("23")


@st.composite
def long_shapes(draw: st.DrawFn) -> list[object]:
    """Shapes of about ``MAX_AXES`` extents, sometimes with one bad extent somewhere."""
    extent = st.sampled_from([1, 1, 1, 1, 1, 2, 0])
    shape: list[object] = draw(st.lists(extent, min_size=MAX_AXES - 2, max_size=MAX_AXES + 2))
    bad = draw(st.sampled_from([None, None, -1, 1.5]))
    if bad is not None:
        shape.insert(draw(st.integers(0, len(shape))), bad)
    return shape


@given(
    st.one_of(
        shapes(),
        st.lists(st.sampled_from([0, 1, 3, *HUGE_EXTENTS]), max_size=4),
        long_shapes(),
    )
)
def test_the_layout_raises_the_documented_error_or_equals_the_plain_loop(shape: object) -> None:
    expected = row_major_layout(shape)
    check_outcome(
        lambda: checked_row_major_layout(shape),
        expected if isinstance(expected, Raises) else Returns(),
    )
    if not isinstance(expected, Raises):
        assert checked_row_major_layout(shape) == expected
