"""The skip-gram samples and loss: subsampling, dynamic windows and pairs against a plain loop
on the same random draws, the noise distribution, the batches, and the loss with its gradients
against the same model written with PyTorch."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings.skipgram import (
    CONTEXT_TABLE,
    INPUT_TABLE,
    NoiseTable,
    PairBatch,
    SkipGram,
    epoch_pairs,
    keep_probabilities,
    pair_batches,
)
from llm_from_scratch.nn import Embedding

from conftest import import_optional


def plain_pairs(
    ids: list[int], starts: list[int], keep: np.ndarray[Any, Any], window: int, seed: int
) -> list[tuple[int, int]]:
    """word2vec's loops: drop words, then for each kept word its reduced window in its line."""
    rng = np.random.default_rng(seed)
    kept_mask = rng.random(len(ids)) < keep[ids]
    bounds = [*starts, len(ids)] if starts[-1] != len(ids) else list(starts)
    lines = []
    for begin, end in itertools.pairwise(bounds):
        lines.append([ids[p] for p in range(begin, end) if kept_mask[p]])
    total = sum(len(line) for line in lines)
    reductions = iter(rng.integers(0, window, size=total).tolist())
    pairs = []
    for line in lines:
        for i, word in enumerate(line):
            reach = window - next(reductions)
            for j in range(max(0, i - reach), min(len(line), i + reach + 1)):
                if j != i:
                    pairs.append((word, line[j]))
    return pairs


@pytest.mark.parametrize("seed", range(6))
def test_pairs_are_word2vecs_loops_on_the_same_draws(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    counts = rng.integers(1, 400, size=30)
    keep = keep_probabilities(np.append(counts, 0), sample=1e-2)
    lengths = rng.integers(1, 12, size=40)
    ids = rng.integers(0, 31, size=int(lengths.sum()))  # 30 is the unknown token: never kept
    starts = np.concatenate([[0], np.cumsum(lengths)])
    window = int(rng.integers(1, 6))
    centres, contexts = epoch_pairs(ids, starts, keep, window, np.random.default_rng(seed))
    expected = plain_pairs(ids.tolist(), starts.tolist(), keep, window, seed)
    assert list(zip(centres.tolist(), contexts.tolist(), strict=True)) == expected
    assert 30 not in centres and 30 not in contexts


def test_the_keep_probability_is_word2vecs() -> None:
    counts = np.array([5000, 300, 2, 0])
    total = counts.sum()
    keep = keep_probabilities(counts, sample=1e-3)
    threshold = 1e-3 * total
    expected = (np.sqrt(counts[:3] / threshold) + 1) * threshold / counts[:3]
    assert keep[:3].tolist() == pytest.approx(np.minimum(expected, 1.0).tolist(), rel=1e-15)
    assert keep[3] == 0.0 and keep[2] == 1.0


def test_noise_follows_the_unigram_distribution_to_the_three_quarters() -> None:
    counts = np.array([1000, 400, 90, 10, 1, 0])
    table = NoiseTable.of(counts)
    expected = counts**0.75 / (counts**0.75).sum()
    assert table.probabilities.tolist() == pytest.approx(expected.tolist(), rel=1e-12)
    draws = table.draw(np.random.default_rng(0), (400_000,))
    frequencies = np.bincount(draws, minlength=counts.size) / draws.size
    assert frequencies[-1] == 0.0
    standard_error = np.sqrt(expected * (1 - expected) / draws.size)
    assert np.all(np.abs(frequencies - expected) < 5 * standard_error + 1e-12)


def test_batches_cover_the_pairs_in_order_with_labelled_negatives() -> None:
    rng = np.random.default_rng(3)
    centres = rng.integers(0, 7, size=1000)
    contexts = rng.integers(0, 7, size=1000)
    noise = NoiseTable.of(np.array([50, 40, 30, 20, 10, 5, 1]))
    batches = list(pair_batches(centres, contexts, noise, 3, 64, np.random.default_rng(1)))
    assert [batch.size for batch in batches] == [64] * 15 + [40]
    assert np.concatenate([b.centres for b in batches]).tolist() == centres.tolist()
    targets = np.concatenate([b.targets for b in batches])
    labels = np.concatenate([b.labels for b in batches])
    assert targets.shape == (1000, 4) and labels.dtype == np.float32
    assert targets[:, 0].tolist() == contexts.tolist()
    assert (labels[:, 0] == 1).all()
    collisions = targets[:, 1:] == targets[:, :1]
    assert collisions.any()
    assert (labels[:, 1:][collisions] == 0).all() and (labels[:, 1:][~collisions] == -1).all()


def test_the_model_is_the_chapters_layer_and_a_context_table_of_zeros() -> None:
    model = SkipGram.new(12, 5, seed=4)
    assert [parameter.name for parameter in model.parameters] == [INPUT_TABLE, CONTEXT_TABLE]
    assert model.inputs.table.tensor.dtype == np.float32
    assert not model.contexts.table.tensor.numpy().any()
    again = SkipGram.new(12, 5, seed=4)
    assert (
        again.inputs.table.tensor.numpy().tobytes() == model.inputs.table.tensor.numpy().tobytes()
    )


@pytest.mark.parametrize("pairs", [7, 300])
def test_the_loss_and_both_table_gradients_equal_pytorchs(pairs: int) -> None:
    torch = import_optional("torch")
    rng = np.random.default_rng(pairs)
    rows, width, negatives = 40, 100, 5
    inputs_layer = SkipGram.new(rows, width, seed=2, dtype=np.float64).inputs
    context_values = rng.normal(scale=0.3, size=(rows, width))  # zeros: a trivial gradient
    contexts_layer = Embedding.from_pretrained(context_values, freeze=False, name=CONTEXT_TABLE)
    model = SkipGram(inputs_layer, contexts_layer)
    centres = rng.integers(0, rows, size=pairs)
    targets = rng.integers(0, rows, size=(pairs, 1 + negatives))
    labels = np.where(rng.random((pairs, 1 + negatives)) < 0.1, 0.0, -1.0)
    labels[:, 0] = 1.0
    batch = PairBatch(centres, targets, labels)
    loss = model.loss(batch)
    loss.backward()
    inputs = torch.tensor(model.inputs.table.tensor.numpy().copy(), requires_grad=True)
    contexts = torch.tensor(context_values, requires_grad=True)
    scores = torch.bmm(
        contexts[torch.from_numpy(targets)], inputs[torch.from_numpy(centres)].unsqueeze(2)
    )
    theirs = -torch.nn.functional.logsigmoid(scores.squeeze(2) * torch.from_numpy(labels)).sum()
    theirs.backward()
    assert float(loss.numpy()) == pytest.approx(float(theirs.detach()), rel=1e-12)
    assert batch.labels.flags.writeable  # the loss copied the labels it holds
    for ours, reference in (
        (model.inputs.table.tensor.gradient, inputs.grad),
        (model.contexts.table.tensor.gradient, contexts.grad),
    ):
        np.testing.assert_allclose(ours.numpy(), reference.numpy(), rtol=1e-12, atol=1e-12)  # type: ignore[union-attr]
