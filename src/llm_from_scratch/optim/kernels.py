"""The compiled row update of a large row gradient and its undo log (the plain NumPy step
never comes here). One kernel serves SGD, Adagrad and the lazy Adam: it sums each row's upstream
group with the tape's scatter-sum, keeps the old row and states in ``undo``, writes the new ones
and counts what is not finite (``x - x`` is NaN exactly for NaN and infinities); a step that
counts one puts the old rows back and raises. Without fast-math every value rounds like the
NumPy rule; threads take blocks of rows, and no result depends on the split.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, TypeAlias, cast

import numpy as np

from llm_from_scratch.autograd.dispatch import (
    compiled_kernel,
    kernel_helper,
    prange,
    runs_compiled,
    runs_on_one_thread,
)
from llm_from_scratch.autograd.gradient import RowSparseGradient
from llm_from_scratch.autograd.kernels import position_sums, row_groups, scatter_sum
from llm_from_scratch.autograd.threads import Write
from llm_from_scratch.optim.fused import DeferredRowGradient, RowGradient
from llm_from_scratch.tensor.storage import FloatArray, IndexArray

BLOCKS: Final = 256  # at most this many blocks of rows per kernel run
RULES: Final = {"sgd": 0, "adagrad": 1, "adam": 2}
Groups: TypeAlias = "tuple[IndexArray, FloatArray, IndexArray, IndexArray]"
"""Row ``rows[k]`` (first) sums ``upstream[order[e]]`` for ``e`` in ``starts[k]:starts[k + 1]``."""


class Planned(NamedTuple):
    """A compiled update of one parameter, and its undo."""

    write: Write
    undo: Write


@kernel_helper
def _sgd_row(  # pragma: no cover - JIT
    table: Any, undo: Any, slot: int, row: int, gradient: Any, constants: Any
) -> Any:
    rate, bad = constants[0], 0  # constants read once: in the loop they would block vectors
    for feature in range(table.shape[1]):
        old, g = table[row, feature], gradient[feature]
        value = old - rate * g
        bad += ((g - g) + (value - value)) != 0
        undo[slot, 0, feature] = old
        table[row, feature] = value
    return bad


@kernel_helper
def _adagrad_row(  # pragma: no cover - JIT
    table: Any, undo: Any, state_sum: Any, slot: int, row: int, gradient: Any, constants: Any
) -> Any:
    negative_rate, eps, bad = constants[0], constants[1], 0
    for feature in range(table.shape[1]):
        old, old_sum, g = table[row, feature], state_sum[row, feature], gradient[feature]
        total = old_sum + g * g
        value = old + (negative_rate * g) / (np.sqrt(total) + eps)
        bad += ((g - g) + (value - value) + (total - total)) != 0
        undo[slot, 0, feature], undo[slot, 1, feature] = old, old_sum
        table[row, feature], state_sum[row, feature] = value, total
    return bad


@kernel_helper
def _adam_row(  # pragma: no cover - JIT
    table: Any, undo: Any, states: Any, slot: int, row: int, gradient: Any, constants: Any
) -> Any:
    exp_avg, exp_avg_sq = states
    one_minus_beta1, one_minus_beta2, eps, negative_step_size = constants[:4]
    weight_decay, value_decay, coupled_decay, bad = constants[4], constants[5], constants[6], 0
    for feature in range(table.shape[1]):
        old, m, v = table[row, feature], exp_avg[row, feature], exp_avg_sq[row, feature]
        summed = gradient[feature]
        g = summed + weight_decay * old if coupled_decay != 0 else summed
        m_update = (g - m) * one_minus_beta1
        v_update = (g * g - v) * one_minus_beta2
        ratio = (m_update + m) / (np.sqrt(v_update + v) + eps)
        value = old * value_decay + negative_step_size * ratio
        m_new, v_new = m + m_update, v + v_update
        bad += ((summed - summed) + (value - value) + (m_new - m_new) + (v_new - v_new)) != 0
        undo[slot, 0, feature], undo[slot, 1, feature], undo[slot, 2, feature] = old, m, v
        table[row, feature], exp_avg[row, feature], exp_avg_sq[row, feature] = value, m_new, v_new
    return bad


@compiled_kernel(parallel=True)
def _update_rows(
    rule: int, table: Any, undo: Any, states: Any, groups: Any, constants: Any
) -> Any:  # pragma: no cover - JIT
    rows, upstream, starts, order = groups
    width, count = table.shape[1], rows.shape[0]
    blocks = min(count, BLOCKS)
    bad = 0
    for block in prange(blocks):
        gradient = np.empty(width, table.dtype)
        block_bad = 0
        for slot in range(block * count // blocks, (block + 1) * count // blocks):
            scatter_sum(gradient, upstream, order, starts[slot], starts[slot + 1])
            row = rows[slot]
            if rule == 0:
                block_bad += _sgd_row(table, undo, slot, row, gradient, constants)
            elif rule == 1:
                block_bad += _adagrad_row(table, undo, states[0], slot, row, gradient, constants)
            else:
                block_bad += _adam_row(table, undo, states, slot, row, gradient, constants)
        bad += block_bad
    return bad


class UndoLog:
    """One parameter's undo buffer, kept between steps: fresh pages would cost more than the
    copy into them."""

    def __init__(self) -> None:
        self._buffer = np.empty(0)

    def sized(self, rows: int, arrays: int, width: int, dtype: np.dtype[Any]) -> FloatArray:
        """A ``[rows, arrays, width]`` view of the buffer, grown when too small."""
        size = rows * arrays * width
        if self._buffer.dtype != dtype or self._buffer.size < size:
            self._buffer = np.empty(size, dtype=dtype)
        return self._buffer[:size].reshape(rows, arrays, width)


def row_plan(
    gradient: RowGradient,
    values: FloatArray,
    states: list[FloatArray],
    rule: str,
    constants: tuple[float, ...],
    numpy_rows: Callable[[IndexArray, FloatArray], Write],
    log: UndoLog,
) -> Write | Planned:
    """The update of a row gradient that is not a small summed one: NumPy's (``numpy_rows`` of
    the summed rows) for few terms, else the compiled ``rule`` with its undo log."""
    pending = gradient.pending if isinstance(gradient, RowSparseGradient) else None
    if pending is not None:
        shape = (gradient.shape[0], gradient.shape[1])
        gradient = DeferredRowGradient("gather_rows", pending.indices, pending.upstream, shape)
    if isinstance(gradient, DeferredRowGradient):
        terms = gradient.indices.size * gradient.shape[1]
    else:
        terms = gradient.values.size
    if not runs_compiled(terms):
        return _summed(gradient, numpy_rows)
    groups = row_groups_of(gradient)
    rows = groups[0]
    undo = log.sized(rows.size, 1 + len(states), values.shape[1], values.dtype)

    def restore(array: FloatArray) -> None:
        for index, target in enumerate([array, *states]):
            target[rows] = undo[:, index]

    def write(array: FloatArray) -> None:
        """Checked as it writes: if anything came out non-finite, the old rows go back and the
        NumPy path raises its error."""
        two_states = (*states, array, array)[:2]  # SGD and Adagrad read no second (or first)
        with np.errstate(over="ignore"):  # beyond float32 a constant is inf: the step is refused
            typed = np.array(constants, dtype=array.dtype)
        if _update_rows(RULES[rule], array, undo, two_states, groups, typed) == 0:
            return
        restore(array)
        _summed(gradient, numpy_rows)  # raises
        raise RuntimeError("the compiled row update and NumPy disagree on finiteness")

    return Planned(write, restore)


def _summed(gradient: RowGradient, numpy_rows: Callable[[IndexArray, FloatArray], Write]) -> Write:
    """``numpy_rows`` of the summed rows (a deferred gradient is summed now, raising the tape's
    error for a sum that is not finite)."""
    summed = gradient.materialized() if isinstance(gradient, DeferredRowGradient) else gradient
    return numpy_rows(summed.rows, summed.values)


def row_groups_of(gradient: RowGradient) -> Groups:
    """The rows and their upstream groups. A stored gradient is one upstream vector per row,
    never ``-0.0``, so adding it to ``+0.0`` gives it back bit for bit; a deferred gather on one
    kernel thread is summed first, front to back, a third faster (``docs/performance.md``)."""
    if isinstance(gradient, DeferredRowGradient):
        if gradient.sources is not None or not runs_on_one_thread():
            rows, starts, order = row_groups(gradient.indices, gradient.shape[0])
            if gradient.sources is not None:
                order = gradient.sources[order]
            return rows, gradient.upstream, starts, order
        rows, values = position_sums(gradient.indices, gradient.upstream, gradient.shape[0])
    else:
        rows, values = gradient.rows, np.ascontiguousarray(gradient.values)
    slots = np.arange(rows.size + 1, dtype=np.intp)
    return rows, values, slots, slots[:-1]


def all_or_nothing(plans: Sequence[Write | Planned]) -> list[Write]:
    """One write per parameter for ``write_parameters``: the last one runs them all, the
    compiled ones first (one that raises undoes those before it), then the NumPy ones."""
    arrays: list[FloatArray] = []

    def hand_over(array: FloatArray) -> None:
        arrays.append(array)
        if len(arrays) == len(plans):
            _commit(plans, arrays)

    return [hand_over] * len(plans)


def _commit(plans: Sequence[Write | Planned], arrays: Sequence[FloatArray]) -> None:
    written: list[int] = []
    try:
        for position, plan in enumerate(plans):
            if isinstance(plan, Planned):
                plan.write(arrays[position])
                written.append(position)
    except BaseException:
        for position in reversed(written):
            cast(Planned, plans[position]).undo(arrays[position])
        raise
    for position, plan in enumerate(plans):
        if not isinstance(plan, Planned):
            plan(arrays[position])
