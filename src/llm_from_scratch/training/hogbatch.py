"""The compiled HogBatch loop (Ji et al., 2016; IntelLabs/pWord2Vec): one block window after
window, the window's input rows ``[B, d]`` against the target's and one set of negatives'
context rows ``[1 + K, d]`` as small matrix products, each row written once per window
(``docs/training.md``, "The model"). It draws the samples of
:func:`~llm_from_scratch.training.windows.block_windows` in their order and adds in the tape's
lane order. Compiled without the global interpreter lock, as the pair loop is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, kernel_helper
from llm_from_scratch.training.kernels import (
    add_scaled,
    draw_negatives,
    draw_reach,
    keep_words,
    score_step,
    weighted_rows,
)


@kernel_helper
def window_scales(
    inputs: Any, contexts: Any, window: Any, size: int, targets: Any, rate: float, scales: Any
) -> float:  # pragma: no cover - JIT
    """The window's loss, and ``scales[k, j]``: the step of score ``(j, k)`` (the rate times the
    label times ``sigmoid(-label * score)``), for the ``size`` words of ``window``."""
    loss = 0.0
    for k in range(targets.shape[0]):
        row = contexts[targets[k]]
        for j in range(size):
            term, scale = score_step(targets, k, row, inputs[window[j]], rate)
            loss += term
            scales[k, j] = scale
    return loss


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
def _train_block_hogbatch(
    tokens: Any,
    keep: Any,
    noise: tuple[Any, Any],
    tables: tuple[Any, Any],
    reach_most: int,
    state: Any,
    schedule: tuple[float, float, int, int],
    work: tuple[Any, Any, Any, Any, Any, Any],
    totals: Any,
) -> Any:  # pragma: no cover - JIT
    accept, alias = noise
    sentence, positions, window, targets, scales, context_steps = work
    rate_first, rate_last, read, words_total = schedule
    slope = (rate_first - rate_last) / words_total
    start = 0
    while start <= tokens.shape[0]:
        end, count, read, state = keep_words(tokens, start, keep, state, sentence, positions, read)
        for target_at in range(count):
            state, reach = draw_reach(state, reach_most)
            size = 0
            for context_at in range(max(0, target_at - reach), min(count, target_at + reach + 1)):
                if context_at != target_at:
                    window[size] = sentence[context_at]
                    size += 1
            if size == 0:
                continue
            targets[0] = sentence[target_at]
            state = draw_negatives(state, targets, targets.shape[0] - 1, accept, alias)
            rate = max(rate_last, rate_first - slope * positions[target_at])
            steps = (scales, context_steps)
            totals[0] += train_window(tables, window, size, targets, rate, steps)
            totals[1] += size
        start = end + 1
    return state


def train_block_hogbatch(
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
    """Train on one block of tokens window by window; return the generator's state after it.

    Args:
        tokens: word IDs, :data:`~llm_from_scratch.training.kernels.UNKNOWN_WORD` or
            :data:`~llm_from_scratch.training.kernels.SENTENCE_END`.
        keep: each word's probability of being kept at an occurrence.
        accept, alias: the noise distribution's alias table.
        inputs, contexts: the two tables, updated in place.
        window, negatives: the largest context distance and the negatives per window.
        state: the SplitMix64 state the block's draws start from.
        rates: the learning rate at the first and at the last word of the run.
        words_before, words_total: the words of the run before this block, and in all.
        totals: the block's summed loss and its pairs (window words) are added to it.

    Shape:
        as :func:`~llm_from_scratch.training.kernels.train_block`'s.
    """
    size, width, most = tokens.shape[0], inputs.shape[1], 2 * window
    work = (
        np.empty(size, np.int32),
        np.empty(size, np.int64),
        np.empty(most, np.int64),
        np.empty(negatives + 1, np.int64),
        np.empty((negatives + 1, most), np.float64),
        np.empty((negatives + 1, width), inputs.dtype),
    )
    schedule = (rates[0], rates[1], words_before, max(words_total, 1))
    noise, tables, start = (accept, alias), (inputs, contexts), np.uint64(state)
    end = _train_block_hogbatch(tokens, keep, noise, tables, window, start, schedule, work, totals)
    return int(end)
