"""HogBatch: a window's words against one set of negatives. Its samples, its loss and gradients
against PyTorch's, and the compiled loop (``training.hogbatch.train_block_hogbatch``) against
the tape's version (``block_windows`` drawing the samples, ``windows.reference_block`` stepping
``window_loss`` with the SGD optimizer): the same windows, loss and rows to float tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.nn import Embedding
from llm_from_scratch.optim import SGD
from llm_from_scratch.training.hogbatch import train_block_hogbatch
from llm_from_scratch.training.options import RATES
from llm_from_scratch.training.skipgram import (
    CONTEXT_TABLE,
    NoiseTable,
    SkipGram,
    block_state,
    keep_probabilities,
)
from llm_from_scratch.training.windows import (
    WindowBatch,
    block_windows,
    reference_block,
    window_loss,
)

from conftest import import_optional
from train_support import random_block, sentences_of


@given(st.integers(0, 2**64 - 1), st.integers(1, 6), st.integers(1, 4))
def test_a_window_is_its_targets_neighbours_within_a_reach_with_one_set_of_negatives(
    seed: int, window: int, negatives: int
) -> None:
    rng = np.random.default_rng(seed % 2**32)
    counts = np.append(rng.integers(1, 50, size=9), 0)
    tokens = random_block(rng, counts.size, 200)
    keep = np.append(np.ones(counts.size - 1), 0.0)  # every known word kept
    windows = list(block_windows(tokens, keep, NoiseTable.of(counts), window, negatives, seed, 0))
    where = {
        position: (sentence, at)
        for sentence in sentences_of(tokens)
        for at, (_, position) in enumerate(sentence)
    }
    for found in windows:
        sentence, at = where[found.position]
        words = [word for word, _ in sentence]
        assert found.targets[0] == words[at]
        assert len(found.targets) == 1 + negatives
        assert counts.size - 1 not in found.targets  # the unknown token is never drawn
        around = [
            words[max(0, at - r) : at] + words[at + 1 : at + r + 1] for r in range(1, window + 1)
        ]
        assert list(found.inputs) in around
    every_target = sorted(position for position, (s, _) in where.items() if len(s) > 1)
    assert [found.position for found in windows] == every_target


def test_a_window_batch_labels_the_target_and_each_negative() -> None:
    from llm_from_scratch.training.windows import Window

    batch = WindowBatch.of(Window((4, 5, 4), (7, 2, 7, 3), 11), np.float64)
    assert batch.inputs.tolist() == [4, 5, 4]
    assert batch.targets.tolist() == [7, 2, 7, 3]
    assert batch.labels.tolist() == [[1, -1, 0, -1]] * 3


@pytest.mark.parametrize("size", [1, 10])
def test_the_window_loss_and_both_table_gradients_equal_pytorchs(size: int) -> None:
    torch = import_optional("torch")
    rng = np.random.default_rng(size)
    rows, width, negatives = 40, 100, 5
    inputs_layer = SkipGram.new(rows, width, seed=2, dtype=np.float64).inputs
    context_values = rng.normal(scale=0.3, size=(rows, width))
    contexts_layer = Embedding.from_pretrained(context_values, freeze=False, name=CONTEXT_TABLE)
    model = SkipGram(inputs_layer, contexts_layer)
    inputs = rng.integers(0, rows, size=size)
    targets = rng.integers(0, rows, size=1 + negatives)
    targets[2] = targets[3]  # a negative drawn twice adds into its one row
    labels = np.where(targets == targets[0], 0.0, -1.0)
    labels[0] = 1.0
    batch = WindowBatch(inputs, targets, np.tile(labels, (size, 1)))
    loss = window_loss(model, batch)
    loss.backward()
    table = torch.tensor(model.inputs.table.tensor.numpy().copy(), requires_grad=True)
    contexts = torch.tensor(context_values, requires_grad=True)
    scores = table[torch.from_numpy(inputs)] @ contexts[torch.from_numpy(targets)].T
    theirs = -torch.nn.functional.logsigmoid(scores * torch.from_numpy(batch.labels)).sum()
    theirs.backward()
    assert float(loss.numpy()) == pytest.approx(float(theirs.detach()), rel=1e-12)
    for ours, reference in (
        (model.inputs.table.tensor.gradient, table.grad),
        (model.contexts.table.tensor.gradient, contexts.grad),
    ):
        np.testing.assert_allclose(ours.numpy(), reference.numpy(), rtol=1e-12, atol=1e-12)  # type: ignore[union-attr]


def both_ways(
    seed: int, rows: int, width: int, window: int, negatives: int, dtype: Any
) -> tuple[Any, Any, Any, Any]:
    """One block trained by the compiled HogBatch loop and by the tape, from the same model."""
    rng = np.random.default_rng(seed % 2**32)
    counts = np.append(rng.integers(1, 30, size=rows - 1), 0)
    tokens = random_block(rng, rows, 120)
    keep = keep_probabilities(counts, sample=0.1)
    noise = NoiseTable.of(counts)
    model = SkipGram.new(rows, width, seed, dtype=dtype)
    inputs, contexts = model.arrays()
    contexts += (rng.normal(scale=0.2, size=contexts.shape)).astype(dtype)  # not all zero
    state, words_before, words_total = block_state(seed, 0, 0), 40, 400
    totals = np.zeros(2)
    compiled = (inputs.copy(), contexts.copy())
    train_block_hogbatch(
        tokens, keep, noise.accept, noise.alias, *compiled, window, negatives, state, RATES,
        words_before, words_total, totals,
    )  # fmt: skip
    reference = SkipGram.from_arrays(inputs, contexts)
    windows = block_windows(tokens, keep, noise, window, negatives, state, words_before)
    optimizer = SGD(reference.parameters, RATES[0])
    loss, count = reference_block(reference, optimizer, windows, words_total, RATES)
    return compiled, reference.arrays(), totals, (loss, count)


@given(
    st.integers(0, 2**64 - 1),
    st.integers(2, 12),
    st.integers(1, 20),
    st.integers(1, 4),
    st.integers(1, 6),
)
def test_the_compiled_loop_learns_what_the_tape_learns_window_by_window_in_float64(
    seed: int, rows: int, width: int, window: int, negatives: int
) -> None:
    compiled, reference, totals, (loss, count) = both_ways(
        seed, rows, width, window, negatives, np.float64
    )
    assert int(totals[1]) == count
    assert totals[0] == pytest.approx(loss, rel=1e-9, abs=1e-9)
    for ours, theirs in zip(compiled, reference, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_loop_learns_what_the_tape_learns_in_float32(seed: int) -> None:
    compiled, reference, totals, (loss, count) = both_ways(seed, 10, 16, 3, 5, np.float32)
    assert int(totals[1]) == count > 0
    assert totals[0] == pytest.approx(loss, rel=1e-5)
    for ours, theirs in zip(compiled, reference, strict=True):
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
