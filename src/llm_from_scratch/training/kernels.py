"""The compiled training loop of skip-gram, one block pair after pair: for each pair the forward,
the VJP and the SGD step that :mod:`~llm_from_scratch.training.skipgram` writes on the tape, on
the samples of its ``block_pairs`` in their order, adding in the tape's ``matvec`` lane order.
Compiled without the global interpreter lock: threads train their blocks on the shared tables.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, kernel_helper
from llm_from_scratch.autograd.matvec import lane_dot

GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
MIX_2 = np.uint64(0x94D049BB133111EB)
SENTENCE_END = -2
"""A token of a block that ends a sentence (a line)."""
UNKNOWN_WORD = -1
"""A token of a block for a word outside the vocabulary: read, counted, never trained."""


@kernel_helper
def splitmix_next(state: Any) -> Any:  # pragma: no cover - JIT
    """SplitMix64's next state (the state plus the golden gamma)."""
    return state + GOLDEN_GAMMA


@kernel_helper
def splitmix_value(state: Any) -> Any:  # pragma: no cover - JIT
    """SplitMix64's output for a state."""
    z = state
    z = (z ^ (z >> np.uint64(30))) * MIX_1
    z = (z ^ (z >> np.uint64(27))) * MIX_2
    return z ^ (z >> np.uint64(31))


@kernel_helper
def unit_float(value: Any) -> float:  # pragma: no cover - JIT
    """A float in ``[0, 1)`` from the top 53 bits of an output."""
    return float(value >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel_helper
def draw_negatives(
    state: Any, targets: Any, negatives: int, accept: Any, alias: Any
) -> Any:  # pragma: no cover - JIT
    """Draw ``negatives`` words after the context word in ``targets``; the new state."""
    size = accept.shape[0]
    for k in range(1, negatives + 1):
        state = splitmix_next(state)
        drawn = unit_float(splitmix_value(state)) * size
        slot = min(np.int64(drawn), size - 1)
        targets[k] = slot if drawn - slot < accept[slot] else alias[slot]
    return state


@kernel_helper
def score_step(
    targets: Any, k: int, context: Any, vector: Any, rate: float
) -> Any:  # pragma: no cover - JIT
    """Target ``k``'s loss ``-log sigmoid(label * score)`` (``softplus(margin)``) and its step
    ``rate * label * sigmoid(margin)`` (label 1 for ``targets[0]``, 0 for a negative equal to
    it, else -1), of the score of its ``context`` row with ``vector``."""
    label = 1.0 if k == 0 else (0.0 if targets[k] == targets[0] else -1.0)
    margin = -label * lane_dot(context, vector)
    small = math.exp(-abs(margin))
    sigmoid = 1.0 / (1.0 + small) if margin >= 0 else small / (1.0 + small)
    return max(margin, 0.0) + math.log1p(small), rate * label * sigmoid


@kernel_helper
def draw_reach(state: Any, window: int) -> Any:  # pragma: no cover - JIT
    """The next state, and the reach ``window - b`` it draws (``b`` in ``0..window-1``)."""
    state = splitmix_next(state)
    return state, window - np.int64(splitmix_value(state) % np.uint64(window))


@kernel_helper
def weighted_rows(
    out: Any, table: Any, ids: Any, count: int, weights: Any
) -> None:  # pragma: no cover - JIT
    """``out = sum over i < count of weights[i] * table[ids[i]]``, ``i`` in order from 0."""
    for f in range(out.shape[0]):
        out[f] = 0
    for i in range(count):
        weight = out.dtype.type(weights[i])
        row = table[ids[i]]
        for f in range(out.shape[0]):
            out[f] += weight * row[f]


@kernel_helper
def add_scaled(row: Any, scale: Any, other: Any) -> None:  # pragma: no cover - JIT
    """``row += scale * other``."""
    for f in range(row.shape[0]):
        row[f] += scale * other[f]


@kernel_helper
def train_pair(
    vector: Any, contexts: Any, targets: Any, rate: float, scales: Any, gradient: Any
) -> float:  # pragma: no cover - JIT
    """One pair's forward, VJP and SGD step; its loss. ``vector`` is the centre's row,
    ``targets`` the context word and the negatives."""
    count = targets.shape[0]
    loss = 0.0
    for k in range(count):  # forward and VJP at the values the pair starts from
        term, scale = score_step(targets, k, contexts[targets[k]], vector, rate)
        loss += term
        scales[k] = scale
    weighted_rows(gradient, contexts, targets, count, scales)
    for k in range(count):
        add_scaled(contexts[targets[k]], vector.dtype.type(scales[k]), vector)
    for f in range(vector.shape[0]):
        vector[f] += gradient[f]
    return loss


@kernel_helper
def keep_words(
    tokens: Any, start: int, keep: Any, state: Any, sentence: Any, positions: Any, read: int
) -> Any:  # pragma: no cover - JIT
    """Subsample one sentence from ``tokens[start]`` on: its kept words and their positions
    among the run's words, from ``read`` on. Returns where the sentence ends, the kept count,
    the words read after it, and the new state."""
    count = 0
    index = start
    while index < tokens.shape[0] and tokens[index] != SENTENCE_END:
        token = tokens[index]
        read += 1
        if token >= 0:
            state = splitmix_next(state)
            if unit_float(splitmix_value(state)) < keep[token]:
                sentence[count] = token
                positions[count] = read - 1
                count += 1
        index += 1
    return index, count, read, state


@compiled_kernel(parallel=False, pack_lanes=True)
def _train_block(
    tokens: Any,
    keep: Any,
    noise: tuple[Any, Any],
    tables: tuple[Any, Any],
    window: int,
    state: Any,
    schedule: tuple[float, float, int, int],
    work: tuple[Any, Any, Any, Any, Any],
    totals: Any,
) -> Any:  # pragma: no cover - JIT
    inputs, contexts = tables
    accept, alias = noise
    sentence, positions, targets, scales, gradient = work
    rate_first, rate_last, read, words_total = schedule
    slope = (rate_first - rate_last) / words_total
    start = 0
    while start <= tokens.shape[0]:
        end, count, read, state = keep_words(tokens, start, keep, state, sentence, positions, read)
        for centre_at in range(count):
            state, reach = draw_reach(state, window)
            rate = max(rate_last, rate_first - slope * positions[centre_at])
            vector = inputs[sentence[centre_at]]
            for context_at in range(max(0, centre_at - reach), min(count, centre_at + reach + 1)):
                if context_at != centre_at:
                    targets[0] = sentence[context_at]
                    state = draw_negatives(state, targets, targets.shape[0] - 1, accept, alias)
                    totals[0] += train_pair(vector, contexts, targets, rate, scales, gradient)
                    totals[1] += 1
        start = end + 1
    return state


def train_block(
    tokens: Any,
    keep: Any,
    accept: Any,
    alias: Any,
    inputs: Any,
    contexts: Any,
    window: int,
    negatives: int,
    state: int,
    rates: tuple[float, float],
    words_before: int,
    words_total: int,
    totals: Any,
) -> int:
    """Train on one block of tokens; return the generator's state after it.

    Args:
        tokens: word IDs, :data:`UNKNOWN_WORD` or :data:`SENTENCE_END`.
        keep: each word's probability of being kept at an occurrence.
        accept, alias: the noise distribution's alias table.
        inputs, contexts: the two tables, updated in place.
        window, negatives: the largest context distance and the negatives per pair.
        state: the SplitMix64 state the block's draws start from.
        rates: the learning rate at the first and at the last word of the run.
        words_before, words_total: the words of the run before this block, and in all.
        totals: the block's summed loss and its pairs are added to it.

    Shape:
        ``tokens``: ``int32 [n]``; ``keep``, ``accept``: ``float64 [V]``; ``alias``: ``intp
        [V]``; ``inputs``, ``contexts``: ``[V, d]``; ``totals``: ``float64 [2]``.
    """
    size = tokens.shape[0]
    work = (
        np.empty(size, np.int32),
        np.empty(size, np.int64),
        np.empty(negatives + 1, np.int64),
        np.empty(negatives + 1, np.float64),
        np.empty(inputs.shape[1], inputs.dtype),
    )
    schedule = (rates[0], rates[1], words_before, max(words_total, 1))
    noise, tables, start = (accept, alias), (inputs, contexts), np.uint64(state)
    end = _train_block(tokens, keep, noise, tables, window, start, schedule, work, totals)
    return int(end)
