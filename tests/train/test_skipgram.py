"""The skip-gram samples, loss and steps: where the pairs come from, the noise distribution, the
loss with its gradients against PyTorch, and the compiled loop against the tape, pair by pair.

The compiled loop (``training.kernels.train_block``) and the learner's version (``block_pairs``
drawing the samples, ``reference_block`` stepping the tape's loss with the SGD optimizer) must
learn the same tables from the same block: same pairs, same loss, same rows to float tolerance.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.training.kernels import SENTENCE_END, train_block
from llm_from_scratch.training.options import RATES
from llm_from_scratch.training.skipgram import (
    CONTEXT_TABLE,
    INPUT_TABLE,
    NoiseTable,
    PairBatch,
    SkipGram,
    block_pairs,
    block_state,
    keep_probabilities,
    learning_rate,
    reference_block,
)

from conftest import import_optional
from train_support import random_block, sentences_of

# The samples -----------------------------------------------------------------------------------


@given(st.integers(0, 2**64 - 1), st.integers(1, 6), st.integers(1, 4))
def test_pairs_stay_in_their_sentence_within_the_window_and_never_hold_unknown_words(
    seed: int, window: int, negatives: int
) -> None:
    rng = np.random.default_rng(seed % 2**32)
    counts = np.append(rng.integers(1, 50, size=9), 0)
    tokens = random_block(rng, counts.size, 200)
    keep = keep_probabilities(counts, sample=0.05)
    pairs = list(block_pairs(tokens, keep, NoiseTable.of(counts), window, negatives, seed, 0))
    sentence_of = {}
    for number, sentence in enumerate(sentences_of(tokens)):
        for order, (word, position) in enumerate(sentence):
            sentence_of[position] = (number, order, word)
    for pair in pairs:
        number, _, word = sentence_of[pair.position]
        assert word == pair.centre
        assert len(pair.targets) == 1 + negatives
        assert counts.size - 1 not in pair.targets  # the unknown token is never drawn
        context_sentence = [w for w, _ in sentences_of(tokens)[number]]
        assert pair.targets[0] in context_sentence
    reaches = Counter(pair.position for pair in pairs)
    assert all(count <= 2 * window for count in reaches.values())


def test_a_word_is_kept_as_often_as_its_keep_probability() -> None:
    counts = np.array([60_000, 3_000, 600, 0])
    keep = keep_probabilities(counts, sample=1e-3)
    tokens = np.repeat(np.arange(3, dtype=np.int32), 20_000)
    np.random.default_rng(0).shuffle(tokens)
    tokens[1::2] = SENTENCE_END  # one-word sentences: every kept word is seen, with no pair
    centres = Counter()
    rng = SplitMix64(block_state(1, 0, 0))
    for token in tokens.tolist():
        if token >= 0 and rng.next_unit_f64() < keep[token]:
            centres[token] += 1
    seen = Counter(tokens[tokens >= 0].tolist())
    for word in range(3):
        rate = centres[word] / seen[word]
        error = np.sqrt(keep[word] * (1 - keep[word]) / seen[word])
        assert abs(rate - keep[word]) < 5 * error + 1e-12


def test_nearer_context_words_are_paired_more_often() -> None:
    counts = np.array([1, 1, 0])
    tokens = np.zeros(20_000, dtype=np.int32)  # one long sentence of one word
    keep = np.ones(3)
    window = 4
    pairs = block_pairs(tokens, keep, NoiseTable.of(counts), window, 1, 7, 0)
    centre_counts = Counter(pair.position for pair in pairs)
    inside = [count for position, count in centre_counts.items() if window <= position < 19_996]
    # a word of reach r has 2r pairs; reaches are uniform in 1..window
    shares = Counter(count // 2 for count in inside)
    for reach in range(1, window + 1):
        assert shares[reach] / len(inside) == pytest.approx(1 / window, abs=0.02)


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
    units = np.random.default_rng(0).random(200_000)
    draws = np.array([table.draw(unit) for unit in units.tolist()])
    frequencies = np.bincount(draws, minlength=counts.size) / draws.size
    assert frequencies[-1] == 0.0
    standard_error = np.sqrt(expected * (1 - expected) / draws.size)
    assert np.all(np.abs(frequencies - expected) < 5 * standard_error + 1e-12)


def test_a_batch_labels_the_context_word_and_each_negative() -> None:
    batch = PairBatch.of(
        [
            reference_pair(3, (1, 2, 1, 4)),
            reference_pair(0, (2, 2, 3, 2)),
        ]
    )
    assert batch.centres.tolist() == [3, 0]
    assert batch.targets.tolist() == [[1, 2, 1, 4], [2, 2, 3, 2]]
    assert batch.labels.tolist() == [[1, -1, 0, -1], [1, 0, -1, 0]]
    assert batch.labels.dtype == np.float32 and batch.size == 2


def reference_pair(centre: int, targets: tuple[int, ...]) -> Any:
    from llm_from_scratch.training.skipgram import Pair

    return Pair(centre, targets, 0)


def test_the_learning_rate_falls_linearly_with_the_words_read() -> None:
    assert learning_rate(0, 1000, RATES) == RATES[0]
    assert learning_rate(500, 1000, RATES) == pytest.approx((RATES[0] + RATES[1]) / 2)
    assert learning_rate(1000, 1000, RATES) == pytest.approx(RATES[1])
    assert learning_rate(2000, 1000, RATES) == RATES[1]


def test_blocks_draw_from_different_states_for_every_seed_epoch_and_block() -> None:
    states = {
        block_state(seed, epoch, block)
        for seed in range(4)
        for epoch in range(4)
        for block in range(4)
    }
    assert len(states) == 64


# The model and its loss ------------------------------------------------------------------------


def test_the_model_is_the_chapters_layer_and_a_context_table_of_zeros() -> None:
    model = SkipGram.new(12, 5, seed=4)
    assert [parameter.name for parameter in model.parameters] == [INPUT_TABLE, CONTEXT_TABLE]
    assert model.inputs.table.tensor.dtype == np.float32
    assert not model.contexts.table.tensor.numpy().any()
    again = SkipGram.new(12, 5, seed=4)
    assert (
        again.inputs.table.tensor.numpy().tobytes() == model.inputs.table.tensor.numpy().tobytes()
    )
    inputs, contexts = model.arrays()
    assert inputs.flags.writeable
    assert inputs.tobytes() == model.inputs.table.tensor.numpy().tobytes()
    rebuilt = SkipGram.from_arrays(inputs, contexts)
    inputs[0, 0] = 99.0  # the model holds copies
    assert rebuilt.inputs.table.tensor.numpy()[0, 0] != 99.0


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


# The compiled loop against the tape -----------------------------------------------------------


def both_ways(
    seed: int, rows: int, width: int, window: int, negatives: int, dtype: Any
) -> tuple[Any, Any, Any, Any]:
    """One block trained by the compiled loop and by the tape, from the same model."""
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
    train_block(
        tokens,
        keep,
        noise.accept,
        noise.alias,
        *compiled,
        window,
        negatives,
        state,
        RATES,
        words_before,
        words_total,
        totals,
    )
    reference = SkipGram.from_arrays(inputs, contexts)
    pairs = block_pairs(tokens, keep, noise, window, negatives, state, words_before)
    loss, count = reference_block(
        reference, SGD(reference.parameters, RATES[0]), pairs, words_total, RATES
    )
    return compiled, reference.arrays(), totals, (loss, count)


@given(
    st.integers(0, 2**64 - 1),
    st.integers(2, 12),
    st.integers(1, 20),
    st.integers(1, 4),
    st.integers(1, 6),
)
def test_the_compiled_loop_learns_what_the_tape_learns_pair_by_pair_in_float64(
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
