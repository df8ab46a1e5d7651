"""The plain loop at a large size: ``backward_with_seed`` keeps its own copy of a lookup's
upstream rows and sums them when the gradient is first read or ``step()`` runs, so that
``backward(); step()`` is the fused step's one pass. The results are those of summing at once,
bit for bit, and nothing the caller does to its arrays afterwards reaches them."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import GraphRetention, RowSparseGradient
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.errors import NonFiniteError
from llm_from_scratch.nn import Embedding
from llm_from_scratch.optim import Optimizer

from checks import raises_rule
from optim_support import FACTORIES, Factory, layer_of

ROWS, WIDTH, TOKENS = 3000, 48, 4096  # 196,608 upstream values: the compiled size
assert TOKENS * WIDTH >= COMPILED_KERNEL_MIN_VALUES


def steps(dtype: str, count: int = 3) -> list[tuple[Any, Any]]:
    """IDs from a third of the rows (so many repeat) and normal upstream rows."""
    rng = np.random.default_rng(34)
    return [
        (rng.integers(0, ROWS // 3, TOKENS), rng.standard_normal((TOKENS, WIDTH)).astype(dtype))
        for _ in range(count)
    ]


def fresh(dtype: str, factory: Factory) -> tuple[Embedding, Optimizer]:
    layer = layer_of(np.random.default_rng(18).standard_normal((ROWS, WIDTH)).astype(dtype))
    return layer, factory(layer.parameters())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(FACTORIES))
def test_backward_then_step_gives_the_fused_steps_table_and_state_bit_for_bit(
    name: str, dtype: str
) -> None:
    plain_layer, plain = fresh(dtype, FACTORIES[name])
    fused_layer, fused = fresh(dtype, FACTORIES[name])
    for ids, upstream in steps(dtype):
        plain_layer.forward(ids, (TOKENS,)).backward_with_seed(upstream)
        plain.step()
        plain.zero_grad()
        fused.backward_step(fused_layer.forward(ids, (TOKENS,)), upstream)
    assert plain_layer.table.tensor.numpy().tobytes() == fused_layer.table.tensor.numpy().tobytes()
    for key, value in plain.state_dict().items():
        assert value.tobytes() == fused.state_dict()[key].tobytes(), key


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_read_gradient_is_the_scatter_sum_in_flat_order_bit_for_bit(dtype: str) -> None:
    (ids, upstream), *_ = steps(dtype)
    layer, _ = fresh(dtype, FACTORIES["sgd"])
    layer.forward(ids, (TOKENS,)).backward_with_seed(upstream)
    leaf = layer.table.tensor
    stored = leaf.sparse_gradient
    assert stored is not None and stored.pending is not None  # kept, not summed yet
    expected = np.zeros((ROWS, WIDTH), dtype=dtype)
    for position, row in enumerate(ids.tolist()):  # the chapter's loop, from +0.0
        expected[row] += upstream[position]
    assert stored.rows.tolist() == sorted(set(ids.tolist()))
    assert stored.values.tobytes() == expected[stored.rows].tobytes()
    counts = np.bincount(ids, minlength=ROWS)[stored.rows]
    assert (
        stored.summed is not None and stored.summed.tolist() == np.flatnonzero(counts > 1).tolist()
    )
    assert stored.pending is None  # summed once, on the first read
    dense = leaf.gradient
    assert dense is not None and dense.numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", ["sgd", "adagrad"])
def test_a_later_change_of_the_seed_reaches_neither_the_gradient_nor_the_step(name: str) -> None:
    (ids, upstream), *_ = steps("float64")
    changed_layer, changed = fresh("float64", FACTORIES[name])
    seed = upstream.copy()
    changed_layer.forward(ids, (TOKENS,)).backward_with_seed(seed)
    seed[...] = np.inf  # the caller reuses its buffer
    changed.step()
    kept_layer, kept = fresh("float64", FACTORIES[name])
    kept_layer.forward(ids, (TOKENS,)).backward_with_seed(upstream)
    kept.step()
    assert changed_layer.table.tensor.numpy().tobytes() == kept_layer.table.tensor.numpy().tobytes()


def test_a_later_change_of_the_seed_does_not_reach_a_gradient_read_afterwards() -> None:
    (ids, upstream), *_ = steps("float32")
    layer, _ = fresh("float32", FACTORIES["sgd"])
    seed = upstream.copy()
    layer.forward(ids, (TOKENS,)).backward_with_seed(seed)
    seed *= 2.0
    stored = layer.table.tensor.sparse_gradient
    expected = RowSparseGradient.from_scatter(ids, upstream, (ROWS, WIDTH))
    assert stored is not None and stored.values.tobytes() == expected.values.tobytes()


def test_threads_reading_a_pending_gradient_at_once_see_one_sum() -> None:
    (ids, upstream), *_ = steps("float64")
    layer, _ = fresh("float64", FACTORIES["sgd"])
    layer.forward(ids, (TOKENS,)).backward_with_seed(upstream)
    stored = layer.table.tensor.sparse_gradient
    assert stored is not None
    seen: list[Any] = []
    readers = [threading.Thread(target=lambda: seen.append(stored.values)) for _ in range(4)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert len({value.tobytes() for value in seen}) == 1
    addresses = {value.__array_interface__["data"][0] for value in seen}
    assert len(addresses) == 1  # views of the one summed array: it was summed once


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_a_large_non_finite_seed_is_the_seeds_error_first_and_stores_nothing(bad: float) -> None:
    layer, _ = fresh("float64", FACTORIES["sgd"])
    ids = np.arange(TOKENS) % ROWS  # most rows are used once: no sum shows the value
    seed = np.ones((TOKENS, WIDTH))
    seed[TOKENS - 1, 5] = bad
    output = layer.forward(ids, (TOKENS,))
    for retention in (GraphRetention.RETAIN, "release"):  # the seed before the retention
        with raises_rule(NonFiniteError, "seed.non-finite", index=(TOKENS - 1) * WIDTH + 5):
            output.backward_with_seed(seed, retention)  # type: ignore[arg-type]
    stored = layer.table.tensor.sparse_gradient
    assert stored is not None and stored.rows.size == 0


def test_a_row_sum_that_overflows_is_refused_at_backward_as_before() -> None:
    layer, _ = fresh("float32", FACTORIES["sgd"])
    ids = np.zeros(TOKENS, dtype=np.int64)  # one row sums every upstream row
    seed = np.full((TOKENS, WIDTH), 1e36, dtype=np.float32)  # each finite, the sum is not
    with raises_rule(NonFiniteError, "gradient.non-finite", operation="gather_rows"):
        layer.forward(ids, (TOKENS,)).backward_with_seed(seed)
    stored = layer.table.tensor.sparse_gradient
    assert stored is not None and stored.rows.size == 0


def test_a_gradient_the_caller_keeps_is_not_overwritten_by_the_next_backward() -> None:
    (ids, first), (_, second), *_ = steps("float64")
    layer, _ = fresh("float64", FACTORIES["sgd"])
    layer.forward(ids, (TOKENS,)).backward_with_seed(first)
    kept = layer.table.tensor.sparse_gradient
    assert kept is not None and kept.pending is not None
    layer.table.tensor.zero_grad()
    layer.forward(ids, (TOKENS,)).backward_with_seed(second)  # needs a copy buffer of its own
    later = layer.table.tensor.sparse_gradient
    assert later is not None
    expected = RowSparseGradient.from_scatter(ids, first, (ROWS, WIDTH))
    assert kept.values.tobytes() == expected.values.tobytes()
    expected = RowSparseGradient.from_scatter(ids, second, (ROWS, WIDTH))
    assert later.values.tobytes() == expected.values.tobytes()
