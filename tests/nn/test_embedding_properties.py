"""Lookup and scatter-add agree with plain Python loops on random tables, IDs and seeds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.autograd.gradient import scatter_by_add_at
from llm_from_scratch.autograd.kernels import scatter_rows
from llm_from_scratch.nn import Embedding, SplitMix64

from conftest import plain_lookup, plain_scatter


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, int, int, tuple[int, ...], list[int], str]:
    rows = draw(st.integers(1, 9))
    width = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**64 - 1))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    count = int(np.prod(shape)) if shape else 1
    ids = draw(st.lists(st.integers(0, rows - 1), min_size=count, max_size=count))
    dtype = draw(st.sampled_from(["float64", "float32"]))
    return rows, width, seed, shape, ids, dtype


@given(cases(), st.integers(0, 2**32 - 1))
def test_lookup_and_gradient_equal_the_plain_loop_bit_for_bit(
    case: tuple[int, int, int, tuple[int, ...], list[int], str], upstream_seed: int
) -> None:
    rows, width, seed, shape, ids, dtype = case
    layer = Embedding.new("token_embedding.weight", rows, width, SplitMix64.from_seed(seed), dtype)
    table = layer.table.tensor.numpy()
    out = layer.forward(ids, shape)
    assert out.shape == (*shape, width)
    assert out.value.flat_values() == plain_lookup(table, ids, width)
    upstream = np.random.default_rng(upstream_seed).normal(size=(*shape, width)).astype(dtype)
    out.backward_with_seed(upstream)
    expected = plain_scatter(ids, upstream, rows, width)
    gradient = layer.table.tensor.gradient
    assert gradient is not None
    assert gradient.numpy().tobytes() == expected.tobytes()


@given(cases())
def test_shaped_call_equals_flat_forward(
    case: tuple[int, int, int, tuple[int, ...], list[int], str],
) -> None:
    rows, width, seed, shape, ids, dtype = case
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(seed), dtype)
    nested = np.array(ids, dtype=np.int64).reshape(shape)
    by_call = layer(nested)
    by_forward = layer.forward(ids, shape)
    assert by_call.value.equals(by_forward.value)
    if np.array(nested.tolist()).shape == shape:  # nested lists cannot spell a [0, 0] shape
        assert layer(nested.tolist()).value.equals(by_forward.value)


@given(
    st.lists(st.integers(0, 6), min_size=0, max_size=300),
    st.integers(1, 4),
    st.sampled_from(["float64", "float32"]),
    st.integers(0, 2**32 - 1),
)
def test_both_scatter_strategies_equal_the_plain_loop_bit_for_bit(
    ids: list[int], width: int, dtype: str, seed: int
) -> None:
    indices = np.array(ids, dtype=np.intp)
    upstream = np.random.default_rng(seed).normal(size=(len(ids), width)).astype(dtype)
    upstream[::7] = -0.0  # signed zeros must sum like the loop, which starts from +0.0
    dense = plain_scatter(ids, upstream, 7, width)
    if not ids:
        return
    for rows, values, counts in (
        scatter_by_add_at(indices, upstream),
        scatter_rows(indices, upstream, 7),
    ):
        assert rows.tolist() == sorted(set(ids))
        assert counts.tolist() == [ids.count(row) for row in rows.tolist()]
        assert values.dtype == upstream.dtype
        assert values.tobytes() == dense[rows].tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_lookup_and_backward_run_compiled_and_match_the_loop(dtype: str) -> None:
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 50, size=COMPILED_KERNEL_MIN_VALUES // 8 + 3).tolist()
    layer = Embedding.new("w", 50, 8, SplitMix64.from_seed(2), dtype)
    out = layer.forward(ids, (len(ids),))
    assert out.value.element_count >= COMPILED_KERNEL_MIN_VALUES
    assert out.value.flat_values() == plain_lookup(layer.table.tensor.numpy(), ids, 8)
    upstream = rng.normal(size=out.shape).astype(dtype)
    upstream[5] = -0.0
    out.backward_with_seed(upstream)
    expected = plain_scatter(ids, upstream, 50, 8)
    assert layer.table.tensor.gradient.numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]
