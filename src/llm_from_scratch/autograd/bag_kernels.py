"""The compiled kernels of the embedding bag: its reductions and the sums of its VJP.

Every sum starts from ``0.0`` and adds its terms in the order the NumPy path of
:mod:`~llm_from_scratch.autograd.bag` adds them, so both paths give the same bits. They read
only a bag's entries; absent per-sample weights are passed as an empty array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.autograd.kernels import grouped_sums, row_groups
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@compiled_kernel(parallel=True)
def _bag_sums_into(
    out: Any, table: Any, rows: Any, starts: Any, weights: Any
) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    weighted = weights.shape[0] > 0
    for bag in prange(out.shape[0]):
        out[bag, :] = 0.0
        entry, end = starts[bag], starts[bag + 1]
        if weighted:
            for at in range(entry, end):
                row, weight = rows[at], weights[at]
                for feature in range(width):
                    out[bag, feature] += weight * table[row, feature]
        else:
            while end - entry >= 4:  # four rows per pass over the features, added in order
                r0, r1, r2, r3 = rows[entry], rows[entry + 1], rows[entry + 2], rows[entry + 3]
                for feature in range(width):
                    total = out[bag, feature] + table[r0, feature]
                    total = (total + table[r1, feature]) + table[r2, feature]
                    out[bag, feature] = total + table[r3, feature]
                entry += 4
            for at in range(entry, end):
                row = rows[at]
                for feature in range(width):
                    out[bag, feature] += table[row, feature]


@compiled_kernel(parallel=True)
def _bag_maxima_into(
    out: Any, max_rows: Any, table: Any, rows: Any, starts: Any
) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    for bag in prange(out.shape[0]):
        out[bag, :] = 0.0
        max_rows[bag, :] = -1
        first = starts[bag]
        for entry in range(first, starts[bag + 1]):
            row = rows[entry]
            for feature in range(width):
                value = table[row, feature]
                if entry == first or value > out[bag, feature]:
                    out[bag, feature] = value
                    max_rows[bag, feature] = row


@compiled_kernel(parallel=True)
def _max_row_sums_into(
    values: Any, upstream: Any, coordinates: Any, starts: Any, order: Any
) -> None:  # pragma: no cover - JIT
    width = values.shape[1]
    for slot in prange(values.shape[0]):
        values[slot, :] = 0.0
        for entry in range(starts[slot], starts[slot + 1]):
            coordinate = coordinates[order[entry]]
            values[slot, coordinate % width] += upstream[coordinate]


@compiled_kernel(parallel=True)
def _weight_gradients_into(
    out: Any, upstream: Any, table: Any, rows: Any, bags: Any
) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    for entry in prange(rows.shape[0]):
        out[entry] = 0.0
        row, bag = rows[entry], bags[entry]
        for feature in range(width):
            out[entry] += upstream[bag, feature] * table[row, feature]


def bag_sums_into(
    out: FloatArray,
    table: FloatArray,
    rows: IndexArray,
    starts: IndexArray,
    weights: FloatArray | None,
) -> None:
    """``out[b] = 0.0 + (weights[e] *) table[rows[e]] + ...`` over bag ``b``'s entries ``e``."""
    listed = np.empty(0, dtype=out.dtype) if weights is None else np.ascontiguousarray(weights)
    _bag_sums_into(out, np.ascontiguousarray(table), rows, starts, listed)


def bag_maxima_into(
    out: FloatArray, table: FloatArray, rows: IndexArray, starts: IndexArray
) -> IndexArray:
    """Each bag's coordinate-wise maximum (the first wins a tie) into ``out`` (``[B, d]``);
    returns the row that produced each coordinate (``-1``: an empty bag)."""
    max_rows = np.empty(out.shape, dtype=np.intp)
    _bag_maxima_into(out, max_rows, np.ascontiguousarray(table), rows, starts)
    return max_rows


def bag_row_sums(
    indices: IndexArray,
    upstream: FloatArray,
    bag_of: IndexArray,
    weights: FloatArray | None,
    rows_in_table: int,
) -> tuple[IndexArray, FloatArray, IndexArray]:
    """Sorted unique rows, their sums of ``(weights[p] *) upstream[bag_of[p]]``, the counts."""
    rows, starts, order = row_groups(indices, rows_in_table)
    sources = bag_of[order]  # the upstream row of each entry, grouped by row
    ordered = None if weights is None else weights[order]
    return rows, grouped_sums(upstream, starts, sources, ordered), np.diff(starts)


def max_row_sums(
    max_rows: IndexArray, upstream: FloatArray, rows_in_table: int
) -> tuple[IndexArray, FloatArray]:
    """Rows that produced a maximum and the sums of the upstream coordinates they produced."""
    flat_rows = max_rows.reshape(-1)
    coordinates = np.flatnonzero(flat_rows >= 0).astype(np.intp, copy=False)
    rows, starts, order = row_groups(flat_rows[coordinates], rows_in_table)
    values = np.empty((rows.shape[0], max_rows.shape[1]), dtype=upstream.dtype)
    _max_row_sums_into(
        values, np.ascontiguousarray(upstream).reshape(-1), coordinates, starts, order
    )
    return rows, values


def weight_gradients_into(
    out: FloatArray, upstream: FloatArray, table: FloatArray, rows: IndexArray, bags: IndexArray
) -> None:
    """``out[e] = upstream[bags[e]] . table[rows[e]]``, features left to right."""
    _weight_gradients_into(
        out, np.ascontiguousarray(upstream), np.ascontiguousarray(table), rows, bags
    )
