"""The tape's compiled kernels (see :mod:`~llm_from_scratch.autograd.dispatch`): large row
gathers, scatters and finiteness checks; sums keep their left-to-right order, bit for bit.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, kernel_helper, prange
from llm_from_scratch.tensor.storage import FloatArray, IndexArray

_COPY_BLOCKS: Final = 256  # blocks of a parallel copy, each with its own largest magnitude


@kernel_helper
def scatter_sum(out: Any, upstream: Any, sources: Any, start: int, stop: int) -> None:
    """The one sum of grouped rows: ``out = 0.0 + upstream[sources[start]] + ...``, in order."""
    first = sources[start]
    for feature in range(out.shape[0]):
        out[feature] = 0.0 + upstream[first, feature]
    for entry in range(start + 1, stop):
        source = sources[entry]
        for feature in range(out.shape[0]):
            out[feature] += upstream[source, feature]


@compiled_kernel(parallel=True)
def _gather_rows_into(out: Any, table: Any, indices: Any) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    for position in prange(indices.shape[0]):
        row = indices[position]
        for feature in range(width):
            out[position, feature] = table[row, feature]


@compiled_kernel(parallel=False)
def row_groups(indices: Any, rows_in_table: int) -> Any:  # pragma: no cover - JIT
    """A stable counting sort: the sorted unique rows, where each row's group starts in
    ``order`` (``[k + 1]``, the last ``N``) and ``order``, each row's positions in order."""
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
def _grouped_sums_into(
    values: Any, upstream: Any, starts: Any, order: Any, weights: Any
) -> None:  # pragma: no cover - JIT
    width = upstream.shape[1]
    for slot in prange(values.shape[0]):
        first = starts[slot]  # every listed row has a first entry: it starts the sum at 0.0
        if weights.shape[0] == 0:
            scatter_sum(values[slot], upstream, order, first, starts[slot + 1])
            continue
        for feature in range(width):
            values[slot, feature] = 0.0 + weights[first] * upstream[order[first], feature]
        for entry in range(first + 1, starts[slot + 1]):
            weight, source = weights[entry], order[entry]
            for feature in range(width):
                values[slot, feature] += weight * upstream[source, feature]


@compiled_kernel(parallel=False)
def _position_sums_into(
    values: Any, upstream: Any, indices: Any, slot_of_row: Any
) -> None:  # pragma: no cover - JIT
    width = upstream.shape[1]
    values[:] = 0.0
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
    """``out[p, :] = table[indices[p], :]`` for valid ``indices``."""
    _gather_rows_into(out, np.ascontiguousarray(table), indices)


def grouped_sums(
    upstream: FloatArray,
    starts: IndexArray,
    order: IndexArray,
    weights: FloatArray | None = None,
) -> FloatArray:
    """Each group's :func:`scatter_sum` of ``upstream`` rows (``[k, d]``, threads take groups);
    with ``weights`` (one per entry of ``order``), of ``weights[e] * upstream[order[e]]``."""
    values = np.empty((starts.shape[0] - 1, upstream.shape[1]), dtype=upstream.dtype)
    listed = np.empty(0, dtype=upstream.dtype) if weights is None else np.ascontiguousarray(weights)
    _grouped_sums_into(values, np.ascontiguousarray(upstream), starts, order, listed)
    return values


def scatter_rows(
    indices: IndexArray, upstream: FloatArray, rows_in_table: int
) -> tuple[IndexArray, FloatArray, IndexArray]:
    """Sorted unique rows, each row's sum of upstream rows in flat order, and the use counts."""
    rows, starts, order = row_groups(indices, rows_in_table)
    return rows, grouped_sums(upstream, starts, order), np.diff(starts)


def position_sums(
    indices: IndexArray, upstream: FloatArray, rows_in_table: int
) -> tuple[IndexArray, FloatArray]:
    """:func:`scatter_rows`' rows and sums, bit for bit, reading ``upstream`` front to back."""
    used = np.bincount(indices, minlength=rows_in_table) > 0
    rows = np.flatnonzero(used).astype(np.intp, copy=False)
    slot_of_row = np.cumsum(used, dtype=np.intp) - 1
    values = np.empty((rows.size, upstream.shape[1]), dtype=upstream.dtype)
    _position_sums_into(values, upstream, indices, slot_of_row)
    return rows, values


def all_finite(array: FloatArray) -> bool:
    """True when no element is NaN or infinite (no temporary array)."""
    return int(_count_non_finite(np.ascontiguousarray(array).reshape(-1))) == 0


@compiled_kernel(parallel=True)
def _copy_with_bound(
    out: Any, source: Any, block_largest: Any, copying: bool
) -> int:  # pragma: no cover - JIT
    size = source.shape[0]
    blocks = block_largest.shape[0]
    bad = 0
    for block in prange(blocks):
        largest = abs(source[block * size // blocks])
        block_bad = 0
        for index in range(block * size // blocks, (block + 1) * size // blocks):
            value = source[index]
            if copying:
                out[index] = value
            block_bad += (value - value) != 0
            largest = max(largest, abs(value))
        block_largest[block] = largest
        bad += block_bad
    return bad


def copy_with_bound(out: FloatArray | None, source: FloatArray) -> tuple[int, float]:
    """Copy ``source`` into ``out`` (a new C-contiguous array of its shape; None: only read it)
    in one read: how many values are not finite, and the largest magnitude (meaningful when
    all are)."""
    flat = np.ascontiguousarray(source).reshape(-1)
    block_largest = np.empty(min(flat.size, _COPY_BLOCKS), dtype=source.dtype)
    target = flat if out is None else out.reshape(-1)
    bad = int(_copy_with_bound(target, flat, block_largest, out is not None))
    return bad, float(block_largest.max())
