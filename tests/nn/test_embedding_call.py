"""``embedding(ids)``: nested lists or arrays of any shape, whose nesting (or the array's own
shape) is the token shape, looked up like ``forward`` with IDs in flat row-major order.

The property compares regular and ragged nests and arrays of every dtype and layout with the
reference model; the IDs are copied, so changing them after the call changes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from llm_from_scratch.autograd import TokenIdContainerError, TokenIdOutOfBoundsError
from llm_from_scratch.nn import Embedding, SplitMix64

from checks import check_lookup, leaf_state
from conftest import KNOWN_UPSTREAM
from reference import expected_call
from strategies import (
    INTEGER_DTYPES,
    LookupCase,
    id_items,
    layers,
    lookup_cases,
    numpy_integers,
)

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def test_call_takes_nested_lists_and_arrays_whose_shape_is_the_token_shape(
    known_layer: Embedding,
) -> None:
    assert known_layer([[2, 1, 2]]).shape == (1, 3, 2)
    assert known_layer(np.array([[2], [1]])).shape == (2, 1, 2)
    assert known_layer(3).shape == (2,)
    assert known_layer([]).shape == (0, 2)
    assert known_layer(np.array([[0, 1], [2, 3]]).T).numpy()[0, 1].tolist() == [30.0, 31.0]


def test_call_rejects_ragged_lists(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdContainerError, match="ragged"):
        known_layer([[1, 2], [3]])


def test_call_reports_flat_positions_of_nested_ids(known_layer: Embedding) -> None:
    with pytest.raises(TokenIdOutOfBoundsError) as caught:
        known_layer([[0, 1], [5, 0]])
    assert caught.value.position == 2


def test_mutating_the_ids_after_a_forward_changes_neither_the_output_nor_its_gradient(
    known_layer: Embedding,
) -> None:
    for ids in (np.array([[2, 1, 2]]), [[2, 1, 2]]):
        output = known_layer(ids)
        if isinstance(ids, np.ndarray):
            ids[...] = 0
        else:
            ids[0][:] = [0, 0, 0]
        assert output.value.flat_values() == [30.0, 31.0, 20.0, 21.0, 30.0, 31.0]
        known_layer.table.tensor.zero_grad()
        output.backward_with_seed(UPSTREAM)
        gradient = known_layer.table.tensor.gradient
        assert gradient is not None
        assert gradient.flat_values() == [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 0.0, 0.0]


# Properties ----------------------------------------------------------------------------------


def nested_ids(rows: int) -> st.SearchStrategy[object]:
    """Nested lists and tuples of IDs, regular or ragged, up to three levels deep."""
    return st.recursive(
        id_items(rows) | st.integers(0, rows - 1),
        lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
        max_leaves=12,
    )


@st.composite
def regular_nests(draw: st.DrawFn, rows: int) -> object:
    """A regular nest of valid IDs (so that most calls succeed)."""
    shape = draw(st.lists(st.integers(1, 3), max_size=3))
    flat = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=1)) * int(
        np.prod(shape, dtype=np.int64)
    )
    return np.array(flat, dtype=np.int64).reshape(shape).tolist()


@st.composite
def id_ndarrays(draw: st.DrawFn, rows: int) -> np.ndarray[Any, Any]:
    """IDs as an N-d array of any dtype, possibly transposed, reversed or read-only."""
    dtype = draw(st.sampled_from([*INTEGER_DTYPES, np.bool_, np.float64, np.object_]))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    if dtype is np.object_:
        elements: st.SearchStrategy[Any] = id_items(rows)
    elif dtype is np.bool_:
        elements = st.booleans()
    elif dtype is np.float64:
        elements = st.integers(0, rows - 1).map(float)
    else:
        elements = numpy_integers(dtype, -1, rows)
    array = draw(arrays(dtype, shape, elements=elements))
    if array.ndim >= 2 and draw(st.booleans()):
        array = array.T
    if array.ndim >= 1 and draw(st.booleans()):
        array = array[::-1]
    if draw(st.booleans()):
        array.flags.writeable = False
    return array


@given(layers(), st.data())
def test_calling_the_layer_raises_the_documented_error_or_equals_the_plain_loop(
    layer: Embedding, data: st.DataObject
) -> None:
    rows = layer.vocabulary_size
    ids = data.draw(
        st.one_of(nested_ids(rows), regular_nests(rows), id_ndarrays(rows)), label="ids"
    )
    leaf = layer.table.tensor
    before, table = leaf_state(leaf), leaf.value_snapshot().numpy()
    expected = expected_call(table, ids)
    check_lookup(lambda: layer(ids), table, expected)
    assert leaf_state(leaf) == before


@given(lookup_cases())
def test_shaped_call_equals_flat_forward(
    case: LookupCase,
) -> None:
    rows, width, seed, shape, ids, dtype = case
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(seed), dtype)
    nested = np.array(ids, dtype=np.int64).reshape(shape)
    by_call = layer(nested)
    by_forward = layer.forward(ids, shape)
    assert by_call.value.equals(by_forward.value)
    if np.array(nested.tolist()).shape == shape:  # nested lists cannot spell a [0, 0] shape
        assert layer(nested.tolist()).value.equals(by_forward.value)
