"""HogBatch on the tape (Ji et al., 2016): a window's words against one set of ``K`` negatives as
one matrix product (``docs/training.md``, "The model"). :func:`window_loss` writes the window's
loss with the tape's operations; :func:`reference_block` steps after every window on the samples
of :func:`block_windows` (those of ``block_pairs``, with the negatives drawn once per window);
the compiled :func:`~llm_from_scratch.training.hogbatch.train_block_hogbatch` fuses the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.training.skipgram import (
    IdArray,
    NoiseTable,
    SkipGram,
    block_reaches,
    step_each,
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
    for rng, sentence, at, reached in block_reaches(tokens, keep, window, state, words_before):
        inputs = tuple(sentence[near][0] for near in reached if near != at)
        if inputs:
            target, position = sentence[at]
            yield Window(inputs, (target, *noise.draws(rng, negatives)), position)


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
    dtype = model.parameters[0].tensor.dtype
    steps = (
        (window_loss(model, WindowBatch.of(window, dtype)), window.position, len(window.inputs))
        for window in windows
    )
    return step_each(optimizer, steps, words_total, rates)
