"""The optimizers' compiled row updates: SGD, Adagrad and the lazy (row-sparse) Adam.

Each kernel reads a row-sparse gradient as groups (see :mod:`llm_from_scratch.optim.rows`):
row ``rows[slot]`` sums ``upstream[order[e]]`` for ``e`` in ``starts[slot]:starts[slot + 1]``
from ``+0.0``, left to right, exactly like the tape's scatter, into a scratch row, then computes
that row's new values and states feature by feature into scratch rows. What happens next is
the :class:`Mode`:

- ``CHECK`` writes nothing (the table may be read-only);
- ``WRITE`` stores the new rows (after a clean ``CHECK``);
- ``WRITE_WITH_UNDO`` first copies each old row into ``undo[slot]`` (the table's row, then each
  state's), then stores the new rows: one pass instead of two, after which the caller puts the
  old rows back if any count is not zero.

Every mode counts the gradient values that are not finite and the features whose new value or
state would not be finite (``x - x`` is NaN exactly for NaN and infinities, a test the compiler
vectorizes); counting under a condition on the mode is what Numba's parallel loops reject.

Every mode computes the same numbers the same way. Compiled on first call through
:mod:`~llm_from_scratch.autograd.dispatch`, without fast-math: every value rounds like the NumPy
expression its optimizer uses below the compiled-kernel threshold. Rows are split into blocks
that threads take in turn; a row's result does not depend on the split, and the counts are
integer sums.
"""

from __future__ import annotations

import enum
from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.optim.rows import RowGroups
from llm_from_scratch.tensor.storage import FloatArray

BLOCKS: Final = 256
"""At most this many blocks of rows per kernel run (threads take blocks in turn)."""


class Mode(enum.IntEnum):
    """What a row kernel does with the new rows it computes (see the module docstring)."""

    CHECK = 0
    WRITE = 1
    WRITE_WITH_UNDO = 2


@compiled_kernel(parallel=True)
def _sgd_rows(
    table: Any,
    target: Any,
    undo: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    rate: Any,
    mode: int,
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
            first = order[starts[slot]]
            for feature in range(width):
                gradient[feature] = 0.0 + upstream[first, feature]
            for entry in range(starts[slot] + 1, starts[slot + 1]):
                position = order[entry]
                for feature in range(width):
                    gradient[feature] += upstream[position, feature]
            row = rows[slot]
            for feature in range(width):
                value[feature] = table[row, feature] - rate * gradient[feature]
            for feature in range(width):  # every mode counts (see the module docstring)
                block_bad_gradient += (gradient[feature] - gradient[feature]) != 0
                block_bad_step += (value[feature] - value[feature]) != 0
            if mode == 2:
                for feature in range(width):
                    undo[slot, 0, feature] = table[row, feature]
            if mode != 0:
                for feature in range(width):
                    target[row, feature] = value[feature]
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


@compiled_kernel(parallel=True)
def _adagrad_rows(
    table: Any,
    target: Any,
    undo: Any,
    state_sum: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    negative_rate: Any,
    eps: Any,
    mode: int,
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
            first = order[starts[slot]]
            for feature in range(width):
                gradient[feature] = 0.0 + upstream[first, feature]
            for entry in range(starts[slot] + 1, starts[slot + 1]):
                position = order[entry]
                for feature in range(width):
                    gradient[feature] += upstream[position, feature]
            row = rows[slot]
            for feature in range(width):
                g = gradient[feature]
                total[feature] = state_sum[row, feature] + g * g
                change = (negative_rate * g) / (np.sqrt(total[feature]) + eps)
                value[feature] = table[row, feature] + change
            for feature in range(width):  # every mode counts (see the module docstring)
                block_bad_gradient += (gradient[feature] - gradient[feature]) != 0
                both = (value[feature] - value[feature]) + (total[feature] - total[feature])
                block_bad_step += both != 0
            if mode == 2:
                for feature in range(width):
                    undo[slot, 0, feature] = table[row, feature]
                    undo[slot, 1, feature] = state_sum[row, feature]
            if mode != 0:
                for feature in range(width):
                    target[row, feature] = value[feature]
                    state_sum[row, feature] = total[feature]
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


@compiled_kernel(parallel=True)
def _lazy_adam_rows(
    table: Any,
    target: Any,
    undo: Any,
    exp_avg: Any,
    exp_avg_sq: Any,
    rows: Any,
    upstream: Any,
    starts: Any,
    order: Any,
    constants: Any,
    coupled_decay: bool,
    mode: int,
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
            first = order[starts[slot]]
            for feature in range(width):
                gradient[feature] = 0.0 + upstream[first, feature]
            for entry in range(starts[slot] + 1, starts[slot + 1]):
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
            for feature in range(width):  # every mode counts (see the module docstring)
                block_bad_gradient += (gradient[feature] - gradient[feature]) != 0
                poison = (value[feature] - value[feature]) + (m_new[feature] - m_new[feature])
                poison += v_new[feature] - v_new[feature]
                block_bad_step += poison != 0
            if mode == 2:
                for feature in range(width):
                    undo[slot, 0, feature] = table[row, feature]
                    undo[slot, 1, feature] = exp_avg[row, feature]
                    undo[slot, 2, feature] = exp_avg_sq[row, feature]
            if mode != 0:
                for feature in range(width):
                    target[row, feature] = value[feature]
                    exp_avg[row, feature] = m_new[feature]
                    exp_avg_sq[row, feature] = v_new[feature]
        bad_gradient += block_bad_gradient
        bad_step += block_bad_step
    return bad_gradient, bad_step


def _stand_in(table: FloatArray, mode: Mode) -> FloatArray:
    """Where a kernel writes new values: the table itself, or (``CHECK``, when the table may be
    read-only) a writeable stand-in that is never written."""
    return np.empty((1, 1), dtype=table.dtype) if mode is Mode.CHECK else table


def _undo_or_stand_in(undo: FloatArray | None, table: FloatArray) -> FloatArray:
    return np.empty((1, 1, 1), dtype=table.dtype) if undo is None else undo


def sgd_rows(
    table: FloatArray,
    groups: RowGroups,
    rate: np.floating[Any],
    mode: Mode,
    undo: FloatArray | None = None,
) -> tuple[int, int]:
    """SGD on each row: ``table[row] - rate * g``; returns the non-finite gradient values and
    new values counted (zeros in ``WRITE`` mode).

    Shape:
        ``table``: ``[V, d]`` (C-contiguous; writeable unless ``CHECK``); ``undo`` (only for
        ``WRITE_WITH_UNDO``): ``[k, 1, d]``, the old rows.
    """
    bad_gradient, bad_step = _sgd_rows(
        table,
        _stand_in(table, mode),
        _undo_or_stand_in(undo, table),
        groups.rows,
        groups.upstream,
        groups.starts,
        groups.order,
        rate,
        int(mode),
    )
    return int(bad_gradient), int(bad_step)


def adagrad_rows(
    table: FloatArray,
    state_sum: FloatArray,
    groups: RowGroups,
    negative_rate: np.floating[Any],
    eps: np.floating[Any],
    mode: Mode,
    undo: FloatArray | None = None,
) -> tuple[int, int]:
    """Adagrad on each row: ``sum + g * g``, then ``value + (-rate * g) / (sqrt(sum) + eps)``;
    counts as :func:`sgd_rows`. ``undo``: ``[k, 2, d]`` (values, then sums)."""
    bad_gradient, bad_step = _adagrad_rows(
        table,
        _stand_in(table, mode),
        _undo_or_stand_in(undo, table),
        state_sum,
        groups.rows,
        groups.upstream,
        groups.starts,
        groups.order,
        negative_rate,
        eps,
        int(mode),
    )
    return int(bad_gradient), int(bad_step)


def lazy_adam_rows(
    table: FloatArray,
    exp_avg: FloatArray,
    exp_avg_sq: FloatArray,
    groups: RowGroups,
    constants: FloatArray,
    coupled_decay: bool,
    mode: Mode,
    undo: FloatArray | None = None,
) -> tuple[int, int]:
    """``torch.optim.SparseAdam``'s update on each row, with optional weight decay; counts as
    :func:`sgd_rows`. ``undo``: ``[k, 3, d]`` (values, ``exp_avg``, ``exp_avg_sq``).

    ``constants`` (the table's dtype) holds ``1 - beta1``, ``1 - beta2``, ``eps``,
    ``-step_size``, ``weight_decay`` and the decoupled decay factor ``1 - lr * weight_decay``
    (``1`` without it). With ``coupled_decay`` the gradient first adds
    ``weight_decay * value``.
    """
    bad_gradient, bad_step = _lazy_adam_rows(
        table,
        _stand_in(table, mode),
        _undo_or_stand_in(undo, table),
        exp_avg,
        exp_avg_sq,
        groups.rows,
        groups.upstream,
        groups.starts,
        groups.order,
        constants,
        coupled_decay,
        int(mode),
    )
    return int(bad_gradient), int(bad_step)
