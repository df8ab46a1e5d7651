"""Endless, self-containing and huge inputs to the lookup fail at once with a typed error.

What is cheap is checked first: the token shape (at most ``MAX_AXES + 1`` extents read), the
count, then the output shape ``token_shape + (d,)``, all before any ID is read; nested lists
are followed at most ``MAX_AXES`` levels deep. Every call here must end within a second and
leave the table, its stored gradient and its revision as they were.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    IndexAllocationError,
    InvalidShapeError,
    TokenIdContainerError,
    TokenShapeError,
)
from llm_from_scratch.autograd.errors import TokenIdNestingError
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import (
    MAX_AXES,
    ShapeOverflowError,
    ShapeTypeError,
    Tensor,
    TooManyAxesError,
)

from adversarial_inputs import endless_shapes, self_containing_list
from checks import check_error, leaf_state, within_seconds
from conftest import KNOWN_TABLE
from reference import Raises

HUGE_SHAPE = (2**31, 2**31)


def trained_layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    layer.forward([2, 1, 2], (3,)).backward_with_seed(np.ones((3, 2)))
    return layer


def rejected_fast(layer: Embedding, call: Any, expected: Raises) -> BaseException:
    """Run ``call``: it must raise ``expected`` within a second and change nothing."""
    before = leaf_state(layer.table.tensor)
    with within_seconds(1.0), pytest.raises(expected.error) as caught:
        call()
    check_error(caught.value, expected)
    assert leaf_state(layer.table.tensor) == before
    return caught.value


def test_a_huge_broadcast_array_whose_output_overflows_fails_before_any_id_is_read() -> None:
    layer = trained_layer()
    ids = np.broadcast_to(np.int8(0), (2**62,))
    output_overflow = Raises(ShapeOverflowError, {"shape": (*HUGE_SHAPE, 2)})
    rejected_fast(
        layer,
        lambda: layer.forward(ids, HUGE_SHAPE),
        Raises(TokenShapeError, {"token_shape": HUGE_SHAPE}, cause=output_overflow),
    )
    rejected_fast(
        layer,
        lambda: layer.table.tensor.gather_rows(ids, HUGE_SHAPE),
        Raises(
            InvalidShapeError,
            {"what": "row gather output shape", "shape": (*HUGE_SHAPE, 2)},
            cause=output_overflow,
        ),
    )


def test_calling_the_layer_on_a_huge_broadcast_array_is_a_shape_error() -> None:
    layer = trained_layer()
    ids = np.broadcast_to(np.int8(0), HUGE_SHAPE)
    rejected_fast(
        layer,
        lambda: layer(ids),
        Raises(TokenShapeError, cause=Raises(ShapeOverflowError, {"shape": (*HUGE_SHAPE, 2)})),
    )


def test_a_huge_broadcast_array_whose_output_fits_is_an_allocation_error() -> None:
    layer = trained_layer()
    ids = np.broadcast_to(np.int8(0), (2**30, 2**31))
    rejected_fast(layer, lambda: layer(ids), Raises(IndexAllocationError, {"elements": 2**61}))


@given(endless_shapes(), st.sampled_from(["forward", "gather", "tensor", "zeros", "reshape"]))
def test_an_endless_shape_fails_after_reading_at_most_max_axes_plus_one_extents(
    shape: Any, boundary: str
) -> None:
    layer = trained_layer()
    leaf = layer.table.tensor
    calls = {
        "forward": lambda: layer.forward([1], shape),
        "gather": lambda: leaf.gather_rows([1], shape),
        "tensor": lambda: Tensor(shape, [1.0]),
        "zeros": lambda: Tensor.zeros(shape),
        "reshape": lambda: leaf.reshape(shape),
    }
    before = leaf_state(leaf)
    with within_seconds(1.0), pytest.raises(Exception) as caught:
        calls[boundary]()
    error = caught.value
    cause = error if boundary in ("tensor", "zeros") else error.__cause__
    # An endless run of non-negative integer extents ends in too many axes (itertools.count
    # overflows the layout first, once its extents multiply past 2**63 - 1).
    assert isinstance(cause, TooManyAxesError | ShapeOverflowError), repr(error)
    if boundary == "forward":
        assert type(error) is TokenShapeError
    elif boundary in ("gather", "reshape"):
        assert type(error) is InvalidShapeError
    assert leaf_state(leaf) == before


def test_the_repeating_shape_example_is_a_token_shape_error_caused_by_too_many_axes() -> None:
    layer = trained_layer()
    rejected_fast(
        layer,
        lambda: layer.forward([1], itertools.repeat(1)),
        Raises(TokenShapeError, cause=Raises(TooManyAxesError, {"limit": MAX_AXES})),
    )


def test_a_token_shape_with_max_axes_fails_on_its_output_shape() -> None:
    layer = trained_layer()
    rejected_fast(
        layer,
        lambda: layer.forward([1], (1,) * MAX_AXES),
        Raises(TokenShapeError, cause=Raises(TooManyAxesError, {"limit": MAX_AXES})),
    )
    assert layer.forward([1], (1,) * (MAX_AXES - 1)).shape == (*(1,) * (MAX_AXES - 1), 2)


@pytest.mark.parametrize("shape", [np.array(3), np.array([[1]]), np.ma.array([1])])
def test_a_zero_dimensional_or_odd_array_as_the_token_shape_is_a_shape_error(shape: Any) -> None:
    layer = trained_layer()
    rejected_fast(
        layer,
        lambda: layer.forward([1], shape),
        Raises(TokenShapeError, cause=Raises(ShapeTypeError)),
    )
    rejected_fast(
        layer,
        lambda: layer.table.tensor.gather_rows([1], shape),
        Raises(InvalidShapeError, {"what": "gather index shape"}, cause=Raises(ShapeTypeError)),
    )


@st.composite
def self_containing_nests(draw: st.DrawFn) -> object:
    """A nest of lists and tuples with the outermost list placed inside itself somewhere."""
    outer: list[object] = []
    node: list[object] = outer
    for _ in range(draw(st.integers(0, 3))):
        child: list[object] = []
        node.extend(draw(st.lists(st.integers(0, 3), max_size=2)))
        node.append(child)
        node = child
    node.extend(draw(st.lists(st.integers(0, 3), max_size=2)))
    node.insert(draw(st.integers(0, len(node))), outer)
    if draw(st.booleans()):
        node.append(outer)
    return outer


@given(self_containing_nests())
def test_a_list_that_contains_itself_fails_at_once_with_a_typed_container_error(
    nest: object,
) -> None:
    layer = trained_layer()
    before = leaf_state(layer.table.tensor)
    with within_seconds(1.0), pytest.raises(TokenIdContainerError) as caught:
        layer(nest)
    if isinstance(caught.value, TokenIdNestingError):
        assert caught.value.limit == MAX_AXES
    assert leaf_state(layer.table.tensor) == before


@pytest.mark.parametrize(
    "nest",
    [
        self_containing_list(),
        self_containing_list(self_containing_list()),
        (self_containing_list(),),
    ],
    ids=["itself", "itself-twice", "in-a-tuple"],
)
def test_self_containing_lists_along_the_first_items_are_a_nesting_error(nest: object) -> None:
    layer = trained_layer()
    error = rejected_fast(layer, lambda: layer(nest), Raises(TokenIdNestingError))
    assert error.limit == MAX_AXES  # type: ignore[attr-defined]


def test_a_list_holding_itself_twice_does_not_walk_its_exponential_tree() -> None:
    nest: list[object] = []
    nest.extend([nest, nest])
    layer = trained_layer()
    rejected_fast(layer, lambda: layer(nest), Raises(TokenIdNestingError, {"limit": MAX_AXES}))


@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        (41, Raises(IndexAllocationError, {"elements": 2**40})),
        (63, Raises(TokenShapeError, cause=Raises(ShapeOverflowError))),  # 2 * 2**62 values
        (MAX_AXES + 1, Raises(TokenIdNestingError, {"limit": MAX_AXES})),
    ],
)
def test_a_nest_of_shared_sublists_is_checked_by_the_shape_it_claims_before_it_is_walked(
    levels: int, expected: Raises
) -> None:
    nest: object = [0]
    for _ in range(levels - 1):
        nest = [nest, nest]  # 2**(levels - 1) IDs, all shared
    layer = trained_layer()
    rejected_fast(layer, lambda: layer(nest), expected)


def test_nested_lists_deeper_than_max_axes_are_refused_and_max_axes_minus_one_work() -> None:
    layer = trained_layer()
    deep: object = 1
    for _ in range(MAX_AXES - 1):
        deep = [deep]
    assert layer(deep).shape == (*(1,) * (MAX_AXES - 1), 2)
    rejected_fast(
        layer,
        lambda: layer([deep]),
        Raises(TokenShapeError, cause=Raises(TooManyAxesError)),  # the output has 65 axes
    )
    rejected_fast(layer, lambda: layer([[deep]]), Raises(TokenIdNestingError, {"limit": MAX_AXES}))
