"""The tape's compiled kernels: large row gathers, scatters and finiteness checks.

Each loop is compiled by Numba on its first call (:mod:`~llm_from_scratch.autograd.dispatch`
decides when a kernel runs and is the one place that imports Numba). Every kernel writes into
arrays NumPy allocated (NumPy asks the kernel for huge pages; Numba's own allocations fault more
slowly), and none uses fast-math, so sums keep their left-to-right order and match the plain loop
bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@compiled_kernel(parallel=True)
def _gather_rows_into(out: Any, table: Any, indices: Any) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    for position in prange(indices.shape[0]):
        row = indices[position]
        for feature in range(width):
            out[position, feature] = table[row, feature]


@compiled_kernel(parallel=False)
def _counting_plan(indices: Any, rows_in_table: int) -> Any:  # pragma: no cover - JIT
    """A stable counting sort: sorted unique rows, where each row's positions start, and the
    positions grouped by row in increasing order."""
    cursor = np.zeros(rows_in_table, np.int64)
    for position in range(indices.shape[0]):
        cursor[indices[position]] += 1
    unique = 0
    for row in range(rows_in_table):
        if cursor[row] > 0:
            unique += 1
    rows = np.empty(unique, np.intp)
    starts = np.empty(unique + 1, np.intp)
    total, slot = 0, 0
    for row in range(rows_in_table):
        count = cursor[row]
        if count > 0:
            rows[slot] = row
            starts[slot] = total
            slot += 1
        cursor[row] = total
        total += count
    starts[unique] = indices.shape[0]
    order = np.empty(indices.shape[0], np.intp)
    for position in range(indices.shape[0]):
        row = indices[position]
        order[cursor[row]] = position
        cursor[row] += 1
    return rows, starts, order


@compiled_kernel(parallel=True)
def _sum_rows_into(values: Any, upstream: Any, starts: Any, order: Any) -> None:  # pragma: no cover
    width = upstream.shape[1]
    for slot in prange(values.shape[0]):
        for feature in range(width):
            values[slot, feature] = 0.0
        for entry in range(starts[slot], starts[slot + 1]):
            position = order[entry]
            for feature in range(width):
                values[slot, feature] += upstream[position, feature]


@compiled_kernel(parallel=False)
def _position_sums_into(
    values: Any, upstream: Any, indices: Any, slot_of_row: Any
) -> None:  # pragma: no cover - JIT
    width = upstream.shape[1]
    for slot in range(values.shape[0]):
        for feature in range(width):
            values[slot, feature] = 0.0
    for position in range(indices.shape[0]):
        total = values[slot_of_row[indices[position]]]
        for feature in range(width):
            total[feature] += upstream[position, feature]


@compiled_kernel(parallel=True)
def _count_non_finite(flat: Any) -> int:  # pragma: no cover - JIT
    bad = 0
    for index in prange(flat.shape[0]):
        if not np.isfinite(flat[index]):
            bad += 1
    return bad


def gather_rows_into(out: FloatArray, table: FloatArray, indices: IndexArray) -> None:
    """``out[p, :] = table[indices[p], :]`` for valid ``indices``, two threads.

    Shape:
        ``out``: ``[N, d]``; ``table``: ``[V, d]``; ``indices``: ``[N]``.
    """
    _gather_rows_into(out, np.ascontiguousarray(table), indices)


def scatter_rows(
    indices: IndexArray, upstream: FloatArray, rows_in_table: int
) -> tuple[IndexArray, FloatArray, IndexArray]:
    """Sorted unique rows, each row's sum of upstream rows in flat order, and the use counts.

    Shape:
        ``indices``: ``[N]`` valid rows of a ``rows_in_table``-row table; ``upstream``:
        ``[N, d]``; returns ``[k]``, ``[k, d]`` and ``[k]``.
    """
    rows, starts, order = _counting_plan(indices, rows_in_table)
    values = np.empty((rows.shape[0], upstream.shape[1]), dtype=upstream.dtype)
    _sum_rows_into(values, np.ascontiguousarray(upstream), starts, order)
    return rows, values, np.diff(starts)


def position_sums(
    indices: IndexArray, upstream: FloatArray, rows_in_table: int
) -> tuple[IndexArray, FloatArray]:
    """Sorted unique rows and each row's sum of upstream rows, read in position order.

    The same sums as :func:`scatter_rows`, bit for bit (each row adds its positions in
    increasing order from ``+0.0``), but reading ``upstream`` front to back on one thread,
    adding into the row's sum wherever it is, rather than row by row: a large upstream that has
    left the cache streams in instead of being fetched row by row.

    Shape:
        ``indices``: ``[N]``; ``upstream``: ``[N, d]`` (C-contiguous); returns ``[k]`` and
        ``[k, d]``.
    """
    used = np.bincount(indices, minlength=rows_in_table) > 0
    rows = np.flatnonzero(used).astype(np.intp, copy=False)
    slot_of_row = np.cumsum(used, dtype=np.intp) - 1
    values = np.empty((rows.size, upstream.shape[1]), dtype=upstream.dtype)
    _position_sums_into(values, upstream, indices, slot_of_row)
    return rows, values


def all_finite(array: FloatArray) -> bool:
    """True when no element is NaN or infinite (two threads, no temporary array)."""
    return int(_count_non_finite(np.ascontiguousarray(array).reshape(-1))) == 0


def row_groups(
    indices: IndexArray, rows_in_table: int
) -> tuple[IndexArray, IndexArray, IndexArray]:
    """The positions of each used row, grouped by a stable counting sort.

    Returns the sorted unique rows ``[k]``, where each row's group starts in ``order``
    (``[k + 1]``, the last entry ``N``) and ``order`` (``[N]``): the positions of each row in
    increasing order. :func:`scatter_rows` sums the upstream rows in exactly this order.
    """
    rows, starts, order = _counting_plan(indices, rows_in_table)
    return rows, starts, order
