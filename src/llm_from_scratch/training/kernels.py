"""The compiled training loop of skip-gram on one block: each kept word's pairs one after another
(:func:`train_block`), or its window at once (HogBatch, ``hogbatch.train_block_hogbatch``). For
each pair or window, the forward, the VJP and the SGD step the tape's version writes
(``skipgram.py``, ``windows.py``), on its samples in their order, adding in the tape's lane
order. Compiled without the global interpreter lock: threads train blocks on the shared tables.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, kernel_helper
from llm_from_scratch.autograd.matvec import lane_dot, lane_dot_pair

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
def score_step(targets: Any, k: int, score: float, rate: float) -> Any:  # pragma: no cover - JIT
    """Target ``k``'s loss ``-log sigmoid(label * score)``, that is ``softplus(margin)``, as
    its two parts ``max(margin, 0)`` and the factor ``1 + exp(-|margin|)`` whose log it adds
    (:func:`add_loss`); and its step ``rate * label * sigmoid(margin)`` (label 1 for
    ``targets[0]``, 0 for a negative equal to it, else -1)."""
    label = 1.0 if k == 0 else (0.0 if targets[k] == targets[0] else -1.0)
    margin = -label * score
    small = math.exp(-abs(margin))
    sigmoid = 1.0 / (1.0 + small) if margin >= 0 else small / (1.0 + small)
    return max(margin, 0.0), 1.0 + small, rate * label * sigmoid


@kernel_helper
def add_loss(loss: Any, term: float, factor: float) -> Any:  # pragma: no cover - JIT
    """``loss`` (the sum of the terms, the product of the factors) with one more of each. One
    log of the product replaces a log per score (a fifth of the loop's time); each factor is
    at most 2, and the product's log is taken before it could overflow."""
    linear, product = loss[0] + term, loss[1] * factor
    if product > 1e300:
        return linear + math.log(product), 1.0
    return linear, product


@kernel_helper
def row_scores(out: Any, table: Any, ids: Any, count: int, vector: Any) -> None:  # pragma: no cover
    """``out[i] = table[ids[i]] . vector`` for ``i < count`` in the lane order, two rows at a
    time (:func:`~llm_from_scratch.autograd.matvec.lane_dot_pair`)."""
    i = 0
    while i + 1 < count:
        out[i], out[i + 1] = lane_dot_pair(table[ids[i]], table[ids[i + 1]], vector)
        i += 2
    if i < count:
        out[i] = lane_dot(table[ids[i]], vector)


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
    row_scores(scales, contexts, targets, count, vector)  # at the values the pair starts from
    loss = (0.0, 1.0)
    for k in range(count):
        term, factor, scales[k] = score_step(targets, k, scales[k], rate)
        loss = add_loss(loss, term, factor)
    weighted_rows(gradient, contexts, targets, count, scales)
    for k in range(count):
        add_scaled(contexts[targets[k]], vector.dtype.type(scales[k]), vector)
    for f in range(vector.shape[0]):
        vector[f] += gradient[f]
    return loss[0] + math.log(loss[1])


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


@kernel_helper
def window_scales(
    inputs: Any, contexts: Any, window: Any, size: int, targets: Any, rate: float, scales: Any
) -> float:  # pragma: no cover - JIT
    """The window's loss, and ``scales[k, j]``: the step of score ``(j, k)`` (the rate times the
    label times ``sigmoid(-label * score)``), for the ``size`` words of ``window``."""
    count = targets.shape[0]
    for j in range(size):
        row_scores(scales[:, j], contexts, targets, count, inputs[window[j]])
    loss = (0.0, 1.0)
    for k in range(count):
        for j in range(size):
            term, factor, scales[k, j] = score_step(targets, k, scales[k, j], rate)
            loss = add_loss(loss, term, factor)
    return loss[0] + math.log(loss[1])


@kernel_helper
def add_rows(table: Any, ids: Any, count: int, steps: Any) -> None:  # pragma: no cover - JIT
    """``table[ids[i]] += steps[i]`` for ``i < count``, in order."""
    for i in range(count):
        row = table[ids[i]]
        for f in range(row.shape[0]):
            row[f] += steps[i, f]


@kernel_helper
def train_window(
    tables: tuple[Any, Any], window: Any, size: int, targets: Any, rate: float, work: Any
) -> float:  # pragma: no cover - JIT
    """One window's forward, VJP and SGD step (every gradient from the values the window starts
    from, then each row written once); its loss. The context rows' steps are summed first, from
    the input rows as they were; then each input row takes its step, which reads only context
    rows, before the context rows take theirs."""
    inputs, contexts = tables
    scales, context_steps = work
    loss: float = window_scales(inputs, contexts, window, size, targets, rate, scales)
    count = targets.shape[0]
    for k in range(count):
        weighted_rows(context_steps[k], inputs, window, size, scales[k])
    for j in range(size):
        row = inputs[window[j]]
        for k in range(count):
            add_scaled(row, inputs.dtype.type(scales[k, j]), contexts[targets[k]])
    add_rows(contexts, targets, count, context_steps)
    return loss


@compiled_kernel(parallel=False, pack_lanes=True)
def _train_block(
    tokens: Any,
    keep: Any,
    noise: tuple[Any, Any],
    tables: tuple[Any, Any],
    window: int,
    state: Any,
    schedule: tuple[float, float, int, int],
    work: tuple[Any, Any, Any, Any, tuple[Any, Any], tuple[Any, Any]],
    totals: Any,
    hogbatch: bool,
) -> Any:  # pragma: no cover - JIT
    inputs, contexts = tables
    accept, alias = noise
    sentence, positions, near, targets, (scales, gradient), window_work = work
    rate_first, rate_last, read, words_total = schedule
    slope = (rate_first - rate_last) / words_total
    start = 0
    while start <= tokens.shape[0]:
        end, count, read, state = keep_words(tokens, start, keep, state, sentence, positions, read)
        for at in range(count):
            state, reach = draw_reach(state, window)
            rate = max(rate_last, rate_first - slope * positions[at])
            size = 0
            for context_at in range(max(0, at - reach), min(count, at + reach + 1)):
                if context_at == at:
                    continue
                if hogbatch:  # the window's words, trained at once after the loop
                    near[size] = sentence[context_at]
                    size += 1
                    continue
                targets[0] = sentence[context_at]
                state = draw_negatives(state, targets, targets.shape[0] - 1, accept, alias)
                vector = inputs[sentence[at]]
                totals[0] += train_pair(vector, contexts, targets, rate, scales, gradient)
                totals[1] += 1
            if size > 0:
                targets[0] = sentence[at]
                state = draw_negatives(state, targets, targets.shape[0] - 1, accept, alias)
                totals[0] += train_window(tables, near, size, targets, rate, window_work)
                totals[1] += size
        start = end + 1
    return state


def run_block(hogbatch: bool, arguments: tuple[Any, ...]) -> int:
    """The compiled loop on one block (the arguments of :func:`train_block`), training each
    kept word's pairs one by one, or (``hogbatch``) its window at once; the state after it."""
    tokens, keep, accept, alias, inputs, contexts, window, negatives, state = arguments[:9]
    rates, words_before, words_total, totals = arguments[9:]
    size, width, targets = tokens.shape[0], inputs.shape[1], negatives + 1
    pair, most = (0, 2 * window) if hogbatch else (1, 0)  # only the method's arrays are sized
    work = (
        np.empty(size, np.int32),
        np.empty(size, np.int64),
        np.empty(most, np.int64),
        np.empty(targets, np.int64),
        (np.empty(targets * pair, np.float64), np.empty(width * pair, inputs.dtype)),
        (np.empty((targets, most), np.float64), np.empty((targets, most and width), inputs.dtype)),
    )
    schedule = (rates[0], rates[1], words_before, max(words_total, 1))
    noise, tables, start = (accept, alias), (inputs, contexts), np.uint64(state)
    return int(
        _train_block(tokens, keep, noise, tables, window, start, schedule, work, totals, hogbatch)
    )


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
    arguments = (tokens, keep, accept, alias, inputs, contexts, window, negatives, state)
    return run_block(False, (*arguments, rates, words_before, words_total, totals))
