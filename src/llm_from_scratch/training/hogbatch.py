"""HogBatch compiled (Ji et al., 2016; IntelLabs/pWord2Vec): one block window after window, the
window's input rows ``[B, d]`` against the target's and one set of negatives' context rows
``[1 + K, d]`` as small matrix products, each row written once per window (``docs/training.md``,
"The model"), on the samples of :func:`~llm_from_scratch.training.windows.block_windows`. The
loop and the window's step are :mod:`~llm_from_scratch.training.kernels`', beside the pairs'.
"""

from __future__ import annotations

from typing import Any

from llm_from_scratch.training.kernels import run_block


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
    arguments = (tokens, keep, accept, alias, inputs, contexts, window, negatives, state)
    return run_block(True, (*arguments, rates, words_before, words_total, totals))
