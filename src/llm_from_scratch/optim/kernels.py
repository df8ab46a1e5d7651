"""The optimizers' compiled row updates: SGD, Adagrad and the lazy (row-sparse) Adam.

Each kernel reads a row-sparse gradient as groups (see :mod:`llm_from_scratch.optim.rows`):
row ``rows[slot]`` sums ``upstream[order[e]]`` for ``e`` in ``starts[slot]:starts[slot + 1]``
from ``+0.0``, left to right, exactly like the tape's scatter, into a scratch row, then updates
that table row feature by feature.

Every kernel runs twice per step. With ``write`` false it writes nothing (the table may be
read-only: new values would go to ``target``, a stand-in) and counts the
gradient values that are not finite and the features whose new value or state would not be
finite; with ``write`` true (after a clean count) it writes them. Both runs compute the same
numbers the same way, so what is written is what was checked. Compiled on first call through
:mod:`~llm_from_scratch.autograd.dispatch`, without fast-math: every value rounds like the NumPy
expression its optimizer uses below the compiled-kernel threshold. Rows are split into blocks
that threads take in turn; a row's result does not depend on the split, and the counts are
integer sums.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.optim.rows import RowGroups
from llm_from_scratch.tensor.storage import FloatArray

BLOCKS: Final = 256
"""At most this many blocks of rows per kernel run (threads take blocks in turn)."""


@compiled_kernel(parallel=True)
def _sgd_rows(
    table: Any,
    target: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    rate: Any,
    write: bool,
) -> Any:  # pragma: no cover - JIT
    width = table.shape[1]
    count = rows.shape[0]
    blocks = min(count, BLOCKS)
    bad_gradient = 0
    bad_step = 0
    for block in prange(blocks):
        gradient = np.empty(width, table.dtype)
        value = np.empty(width, table.dtype)
        block_bad_gradient = 0
        block_bad_step = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            for feature in range(width):
                gradient[feature] = 0.0
            for entry in range(starts[slot], starts[slot + 1]):
                position = order[entry]
                for feature in range(width):
                    gradient[feature] += upstream[position, feature]
            row = rows[slot]
            for feature in range(width):
                value[feature] = table[row, feature] - rate * gradient[feature]
            if write:
                for feature in range(width):
                    target[row, feature] = value[feature]
            else:
                for feature in range(width):
                    block_bad_gradient += not np.isfinite(gradient[feature])
                    block_bad_step += not np.isfinite(value[feature])
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


@compiled_kernel(parallel=True)
def _adagrad_rows(
    table: Any,
    target: Any,
    state_sum: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    negative_rate: Any,
    eps: Any,
    write: bool,
) -> Any:  # pragma: no cover - JIT
    width = table.shape[1]
    count = rows.shape[0]
    blocks = min(count, BLOCKS)
    bad_gradient = 0
    bad_step = 0
    for block in prange(blocks):
        gradient = np.empty(width, table.dtype)
        value = np.empty(width, table.dtype)
        total = np.empty(width, table.dtype)
        block_bad_gradient = 0
        block_bad_step = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            for feature in range(width):
                gradient[feature] = 0.0
            for entry in range(starts[slot], starts[slot + 1]):
                position = order[entry]
                for feature in range(width):
                    gradient[feature] += upstream[position, feature]
            row = rows[slot]
            for feature in range(width):
                g = gradient[feature]
                total[feature] = state_sum[row, feature] + g * g
                step = (negative_rate * g) / (np.sqrt(total[feature]) + eps)
                value[feature] = table[row, feature] + step
            if write:
                for feature in range(width):
                    target[row, feature] = value[feature]
                    state_sum[row, feature] = total[feature]
            else:
                for feature in range(width):
                    block_bad_gradient += not np.isfinite(gradient[feature])
                    finite = np.isfinite(value[feature]) & np.isfinite(total[feature])
                    block_bad_step += not finite
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


@compiled_kernel(parallel=True)
def _lazy_adam_rows(
    table: Any,
    target: Any,
    exp_avg: Any,
    exp_avg_sq: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    constants: Any,
    coupled_decay: bool,
    write: bool,
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
        value = np.empty(width, table.dtype)
        m_new = np.empty(width, table.dtype)
        v_new = np.empty(width, table.dtype)
        block_bad_gradient = 0
        block_bad_step = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            for feature in range(width):
                gradient[feature] = 0.0
            for entry in range(starts[slot], starts[slot + 1]):
                position = order[entry]
                for feature in range(width):
                    gradient[feature] += upstream[position, feature]
            row = rows[slot]
            for feature in range(width):
                old = table[row, feature]
                g = gradient[feature]
                if coupled_decay:
                    g = g + weight_decay * old
                m = exp_avg[row, feature]
                v = exp_avg_sq[row, feature]
                m_update = (g - m) * one_minus_beta1
                v_update = (g * g - v) * one_minus_beta2
                m_new[feature] = m + m_update
                v_new[feature] = v + v_update
                ratio = (m_update + m) / (np.sqrt(v_update + v) + eps)
                value[feature] = old * value_decay + negative_step_size * ratio
            if write:
                for feature in range(width):
                    target[row, feature] = value[feature]
                    exp_avg[row, feature] = m_new[feature]
                    exp_avg_sq[row, feature] = v_new[feature]
            else:
                for feature in range(width):
                    block_bad_gradient += not np.isfinite(gradient[feature])
                    finite = np.isfinite(value[feature]) & np.isfinite(m_new[feature])
                    block_bad_step += not (finite & np.isfinite(v_new[feature]))
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


def _target(table: FloatArray, write: bool) -> FloatArray:
    """Where a kernel writes new values: the table itself, or (counting only, when the table is
    read-only) a writeable stand-in that is never written."""
    return table if write else np.empty((1, 1), dtype=table.dtype)


def sgd_rows(
    table: FloatArray, groups: RowGroups, rate: np.floating[Any], write: bool
) -> tuple[int, int]:
    """``table[row] - rate * g`` for each row: count the non-finite gradient values and new
    values, or (``write``) store the new values.

    Shape:
        ``table``: ``[V, d]`` (C-contiguous; writeable when ``write``).
    """
    bad_gradient, bad_step = _sgd_rows(
        table,
        _target(table, write),
        groups.rows,
        groups.upstream,
        groups.starts,
        groups.order,
        rate,
        write,
    )
    return int(bad_gradient), int(bad_step)


def adagrad_rows(
    table: FloatArray,
    state_sum: FloatArray,
    groups: RowGroups,
    negative_rate: np.floating[Any],
    eps: np.floating[Any],
    write: bool,
) -> tuple[int, int]:
    """Adagrad on each row: ``sum + g * g``, then ``value + (-rate * g) / (sqrt(sum) + eps)``;
    count or (``write``) store, as :func:`sgd_rows`."""
    bad_gradient, bad_step = _adagrad_rows(
        table,
        _target(table, write),
        state_sum,
        groups.rows,
        groups.upstream,
        groups.starts,
        groups.order,
        negative_rate,
        eps,
        write,
    )
    return int(bad_gradient), int(bad_step)


def lazy_adam_rows(
    table: FloatArray,
    exp_avg: FloatArray,
    exp_avg_sq: FloatArray,
    groups: RowGroups,
    constants: FloatArray,
    coupled_decay: bool,
    write: bool,
) -> tuple[int, int]:
    """``torch.optim.SparseAdam``'s update on each row, with optional weight decay; count or
    (``write``) store, as :func:`sgd_rows`.

    ``constants`` (the table's dtype) holds ``1 - beta1``, ``1 - beta2``, ``eps``,
    ``-step_size``, ``weight_decay`` and the decoupled decay factor ``1 - lr * weight_decay``
    (``1`` without it). With ``coupled_decay`` the gradient first adds
    ``weight_decay * value``.
    """
    bad_gradient, bad_step = _lazy_adam_rows(
        table,
        _target(table, write),
        exp_avg,
        exp_avg_sq,
        groups.rows,
        groups.upstream,
        groups.starts,
        groups.order,
        constants,
        coupled_decay,
        write,
    )
    return int(bad_gradient), int(bad_step)
