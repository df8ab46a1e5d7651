"""HogBatch on the tape: a window's words against one set of negatives, as a matrix product.

Ji et al. ("Parallelizing Word2Vec in Multi-Core and Many-Core Architectures", 2016) share one
set of ``K`` negatives among the words of a window. For a kept word (the *target*) and the ``B``
kept words at most ``window - b`` places away (the window, ``b`` drawn as for the pairs), the
loss of the window is the sum over its words ``j`` of the pairs' loss with the same negatives:

    ``-sum over j of [log sigmoid(u_t . v_j) + sum over k of log sigmoid(-u_k . v_j)]``

:func:`window_loss` writes it with the tape's operations: two lookups (the window's input rows
``[B, d]``, the target's and the negatives' context rows ``[1 + K, d]``), one matrix product
(``inputs.matmul(contexts.t())``, the ``B x (1 + K)`` scores), a product with the labels
(``+1``, ``-1``, ``0`` for a negative equal to the target), ``log_sigmoid``, ``sum``, ``-``.
Its backward is the chapter's: a negative drawn twice, or a word twice in a window, adds its
gradients into the one row; the SGD step then writes every row of the window once.
:func:`reference_block` trains a block so, window after window; the compiled
:func:`~llm_from_scratch.training.hogbatch.train_block_hogbatch` fuses the same arithmetic.

The samples (:func:`block_windows`) are the pairs' (:func:`~llm_from_scratch.training.skipgram.
block_pairs`) subsampling and dynamic window from the same stream, with the ``K`` negatives drawn
once per window (after its ``b``) instead of once per pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn import SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.training.skipgram import (
    IdArray,
    NoiseTable,
    SkipGram,
    kept_sentences,
    learning_rate,
)


@dataclass(frozen=True)
class Window:
    """One sample: the window's words (``inputs``), its target followed by the negatives
    (``targets``), and the target's position among the words of the run."""

    inputs: tuple[int, ...]
    targets: tuple[int, ...]
    position: int


def block_windows(
    tokens: npt.NDArray[Any],
    keep: npt.NDArray[np.float64],
    noise: NoiseTable,
    window: int,
    negatives: int,
    state: int,
    words_before: int,
) -> Iterator[Window]:
    """The windows of one block of tokens (see the module docstring), drawn from a SplitMix64
    whose state is ``state``; ``words_before`` words of the run come before the block."""
    rng = SplitMix64(state)
    for sentence in kept_sentences(tokens, keep, rng, words_before):
        for target_at, (target, position) in enumerate(sentence):
            reach = window - rng.next_u64() % window
            first, last = max(0, target_at - reach), min(len(sentence), target_at + reach + 1)
            inputs = tuple(sentence[at][0] for at in range(first, last) if at != target_at)
            if inputs:
                drawn = tuple(noise.draw(rng.next_unit_f64()) for _ in range(negatives))
                yield Window(inputs, (target, *drawn), position)


@dataclass(frozen=True)
class WindowBatch:
    """One window for :func:`window_loss`: its words ``[B]``, the target and the negatives
    ``[1 + K]``, and the labels ``[B, 1 + K]`` (``+1`` for the target, ``-1`` for a negative,
    ``0`` for a negative equal to the target)."""

    inputs: IdArray
    targets: IdArray
    labels: npt.NDArray[Any]

    @classmethod
    def of(cls, window: Window, dtype: Any = np.float32) -> WindowBatch:
        """The batch of ``window``, labels in ``dtype``."""
        inputs = np.array(window.inputs, dtype=np.intp)
        targets = np.array(window.targets, dtype=np.intp)
        row = np.where(targets == targets[0], 0, -1).astype(dtype)
        row[0] = 1
        return cls(inputs, targets, np.tile(row, (inputs.size, 1)))


def window_loss(model: SkipGram, batch: WindowBatch) -> TensorValue:
    """The window's summed loss, a scalar on the tape (see the module docstring)."""
    inputs = model.inputs(batch.inputs)  # [B, d]
    targets = model.contexts(batch.targets)  # [1 + K, d]
    scores = inputs.matmul(targets.t())  # [B, 1 + K]
    return -scores.mul(Tensor.from_numpy(batch.labels)).log_sigmoid().sum()


def reference_block(
    model: SkipGram,
    optimizer: SGD,
    windows: Iterator[Window],
    words_total: int,
    rates: tuple[float, float],
) -> tuple[float, int]:
    """Train on ``windows`` one at a time with the tape: the loss of one window, its backward
    and an SGD step at the target's learning rate (none at a rate of 0). Returns the summed loss
    and the pairs (the windows' words)."""
    total, count = 0.0, 0
    dtype = model.parameters[0].tensor.dtype
    for window in windows:
        rate = learning_rate(window.position, words_total, rates)
        loss = window_loss(model, WindowBatch.of(window, dtype))
        total += float(loss.numpy())
        if rate > 0:
            optimizer.learning_rate = rate
            optimizer.backward_step(loss)
        count += len(window.inputs)
    return total, count
