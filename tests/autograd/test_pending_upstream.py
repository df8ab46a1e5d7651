"""A large lookup's pending gradient keeps an upstream the tape made as it is, and copies the
caller's seed, also when the seed reaches the lookup through a view the tape passed on: the
gradient read later is the chapter's loop over the upstream of the pass, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import llm_from_scratch.autograd.gradient as gradient_module
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.nn import Embedding, SplitMix64

from reference import plain_scatter

ROWS, WIDTH = 50, 8
COUNT = COMPILED_KERNEL_MIN_VALUES // WIDTH + 3  # a compiled-size lookup


def lookup(dtype: str) -> tuple[Embedding, list[int]]:
    ids = np.random.default_rng(7).integers(0, ROWS, size=COUNT).tolist()
    return Embedding.new("w", ROWS, WIDTH, SplitMix64.from_seed(3), dtype), ids


def upstream_of(dtype: str) -> np.ndarray:
    return np.random.default_rng(8).standard_normal((COUNT, WIDTH)).astype(dtype)


def is_a_copy_buffer(array: np.ndarray) -> bool:
    return any(np.shares_memory(array, spare) for spare in gradient_module._spare)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_an_upstream_the_tape_made_is_kept_uncopied_and_sums_as_the_loop(dtype: str) -> None:
    layer, ids = lookup(dtype)
    weights = upstream_of(dtype)
    loss = (layer.forward(ids, (COUNT,)) * weights).sum()  # the product's VJP makes the upstream
    loss.backward()
    stored = layer.table.tensor.sparse_gradient
    assert stored is not None and stored.pending is not None
    assert not is_a_copy_buffer(stored.pending.upstream)
    expected = plain_scatter(ids, weights, ROWS, WIDTH)
    assert layer.table.tensor.gradient.numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_callers_seed_is_copied_also_through_a_reshape_the_tape_passes_on(dtype: str) -> None:
    layer, ids = lookup(dtype)
    seed = upstream_of(dtype).reshape(COUNT * WIDTH)
    kept = seed.copy()
    layer.forward(ids, (COUNT,)).reshape((COUNT * WIDTH,)).backward_with_seed(seed)
    stored = layer.table.tensor.sparse_gradient
    assert stored is not None and stored.pending is not None
    assert not np.shares_memory(stored.pending.upstream, seed)
    seed[:] = np.nan  # the caller changes its array after the pass
    expected = plain_scatter(ids, kept.reshape(COUNT, WIDTH), ROWS, WIDTH)
    assert layer.table.tensor.gradient.numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]


def test_a_seed_converted_to_the_tables_dtype_is_the_tapes_own_and_kept() -> None:
    layer, ids = lookup("float32")
    seed = upstream_of("float64")
    layer.forward(ids, (COUNT,)).backward_with_seed(seed)
    stored = layer.table.tensor.sparse_gradient
    assert stored is not None and stored.pending is not None
    assert not is_a_copy_buffer(stored.pending.upstream)
    seed[:] = np.nan
    expected = plain_scatter(ids, upstream_of("float64").astype(np.float32), ROWS, WIDTH)
    assert layer.table.tensor.gradient.numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]
