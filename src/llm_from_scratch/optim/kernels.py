"""The optimizers' compiled row updates: SGD, Adagrad and the lazy (row-sparse) Adam.

Each kernel sums a row's gradient group (:class:`~llm_from_scratch.optim.fused.RowGroups`) into a
scratch row with the tape's own scatter-sum, then, feature by feature, computes the new value and
states, copies the old ones into ``undo[slot]``, stores the new ones, and counts the gradient
values and the new values or states that are not finite (``x - x`` is NaN exactly for NaN and
infinities). The caller puts the old rows back if a count is not zero. Compiled without
fast-math, every value rounds like its optimizer's NumPy expression; threads take blocks of rows
in turn, and no result depends on the split.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.autograd.kernels import scatter_sum
from llm_from_scratch.optim.fused import RowGroups
from llm_from_scratch.tensor.storage import FloatArray

BLOCKS: Final = 256  # at most this many blocks of rows per kernel run


@compiled_kernel(parallel=True)
def _sgd_rows(
    table: Any,
    undo: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    rate: Any,
) -> Any:  # pragma: no cover - JIT
    width = table.shape[1]
    count = rows.shape[0]
    blocks = min(count, BLOCKS)
    bad_gradient = 0
    bad_step = 0
    for block in prange(blocks):
        gradient = np.empty(width, table.dtype)
        block_bad_gradient = 0
        block_bad_step = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            scatter_sum(gradient, upstream, order, starts[slot], starts[slot + 1])
            row = rows[slot]
            for feature in range(width):
                old = table[row, feature]
                g = gradient[feature]
                value = old - rate * g
                block_bad_gradient += (g - g) != 0
                block_bad_step += (value - value) != 0
                undo[slot, 0, feature] = old
                table[row, feature] = value
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


@compiled_kernel(parallel=True)
def _adagrad_rows(
    table: Any,
    undo: Any,
    state_sum: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    negative_rate: Any,
    eps: Any,
) -> Any:  # pragma: no cover - JIT
    width = table.shape[1]
    count = rows.shape[0]
    blocks = min(count, BLOCKS)
    bad_gradient = 0
    bad_step = 0
    for block in prange(blocks):
        gradient = np.empty(width, table.dtype)
        block_bad_gradient = 0
        block_bad_step = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            scatter_sum(gradient, upstream, order, starts[slot], starts[slot + 1])
            row = rows[slot]
            for feature in range(width):
                old = table[row, feature]
                old_sum = state_sum[row, feature]
                g = gradient[feature]
                total = old_sum + g * g
                value = old + (negative_rate * g) / (np.sqrt(total) + eps)
                block_bad_gradient += (g - g) != 0
                block_bad_step += ((value - value) + (total - total)) != 0
                undo[slot, 0, feature] = old
                undo[slot, 1, feature] = old_sum
                table[row, feature] = value
                state_sum[row, feature] = total
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


@compiled_kernel(parallel=True)
def _lazy_adam_rows(
    table: Any,
    undo: Any,
    exp_avg: Any,
    exp_avg_sq: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    constants: Any,
    coupled_decay: bool,
) -> Any:  # pragma: no cover - JIT
    one_minus_beta1 = constants[0]
    one_minus_beta2 = constants[1]
    eps = constants[2]
    negative_step_size = constants[3]
    weight_decay = constants[4]
    value_decay = constants[5]
    width = table.shape[1]
    count = rows.shape[0]
    blocks = min(count, BLOCKS)
    bad_gradient = 0
    bad_step = 0
    for block in prange(blocks):
        gradient = np.empty(width, table.dtype)
        block_bad_gradient = 0
        block_bad_step = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            scatter_sum(gradient, upstream, order, starts[slot], starts[slot + 1])
            row = rows[slot]
            for feature in range(width):
                old = table[row, feature]
                m = exp_avg[row, feature]
                v = exp_avg_sq[row, feature]
                summed = gradient[feature]
                g = summed + weight_decay * old if coupled_decay else summed
                m_update = (g - m) * one_minus_beta1
                v_update = (g * g - v) * one_minus_beta2
                m_new = m + m_update
                v_new = v + v_update
                ratio = (m_update + m) / (np.sqrt(v_update + v) + eps)
                value = old * value_decay + negative_step_size * ratio
                block_bad_gradient += (summed - summed) != 0
                block_bad_step += ((value - value) + (m_new - m_new) + (v_new - v_new)) != 0
                undo[slot, 0, feature] = old
                undo[slot, 1, feature] = m
                undo[slot, 2, feature] = v
                table[row, feature] = value
                exp_avg[row, feature] = m_new
                exp_avg_sq[row, feature] = v_new
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


def update_rows(
    rule: str,
    table: FloatArray,
    states: Sequence[FloatArray],
    undo: FloatArray,
    groups: RowGroups,
    constants: Sequence[Any],
) -> tuple[int, int]:
    """Run the compiled row update ``rule`` (``sgd``, ``adagrad``, ``adam``) with its
    optimizer's ``row_constants``, keeping the old rows in ``undo``; how many gradient values
    and how many new values or states are not finite.

    Shape:
        ``table``: ``[V, d]`` (C-contiguous, writeable), each state alike; ``undo``:
        ``[k, 1 + len(states), d]`` (the values, then each state).
    """
    kernel = {"sgd": _sgd_rows, "adagrad": _adagrad_rows, "adam": _lazy_adam_rows}[rule]
    found = kernel(
        table, undo, *states, groups.rows, groups.upstream, groups.starts, groups.order, *constants
    )
    return int(found[0]), int(found[1])
