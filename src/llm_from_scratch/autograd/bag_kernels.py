"""The compiled kernels of the embedding bag: its reductions and the sums of its VJP.

Compiled on first call, like the gather's kernels (see :mod:`~llm_from_scratch.autograd.dispatch`),
without fast-math: every sum starts from ``0.0`` and adds its terms in the order the NumPy path
of :mod:`~llm_from_scratch.autograd.bag` adds them, in the arrays' own dtype, so both paths give
the same bits. A padding row is passed as ``-1`` when there is none, and absent per-sample
weights as an empty array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.autograd.kernels import row_groups
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@compiled_kernel(parallel=True)
def _bag_sums_into(
    out: Any, sizes: Any, table: Any, indices: Any, starts: Any, weights: Any, padding_row: int
) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    weighted = weights.shape[0] > 0
    for bag in prange(out.shape[0]):
        for feature in range(width):
            out[bag, feature] = 0.0
        count = 0
        for position in range(starts[bag], starts[bag + 1]):
            row = indices[position]
            if row == padding_row:
                continue
            count += 1
            if weighted:
                weight = weights[position]
                for feature in range(width):
                    out[bag, feature] += weight * table[row, feature]
            else:
                for feature in range(width):
                    out[bag, feature] += table[row, feature]
        sizes[bag] = count


@compiled_kernel(parallel=True)
def _bag_maxima_into(
    out: Any, max_rows: Any, table: Any, indices: Any, starts: Any, padding_row: int
) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    for bag in prange(out.shape[0]):
        for feature in range(width):
            out[bag, feature] = 0.0
            max_rows[bag, feature] = -1
        first = True
        for position in range(starts[bag], starts[bag + 1]):
            row = indices[position]
            if row == padding_row:
                continue
            for feature in range(width):
                value = table[row, feature]
                if first or value > out[bag, feature]:
                    out[bag, feature] = value
                    max_rows[bag, feature] = row
            first = False


@compiled_kernel(parallel=True)
def _bag_row_sums_into(
    values: Any, upstream: Any, bag_of: Any, weights: Any, starts: Any, order: Any
) -> None:  # pragma: no cover - JIT
    width = upstream.shape[1]
    weighted = weights.shape[0] > 0
    for slot in prange(values.shape[0]):
        first = starts[slot]  # every listed row has a first entry: it starts the sum at 0.0
        for entry in range(first, starts[slot + 1]):
            position = order[entry]
            bag = bag_of[position]
            if weighted:
                weight = weights[position]
                if entry == first:
                    for feature in range(width):
                        values[slot, feature] = 0.0 + weight * upstream[bag, feature]
                else:
                    for feature in range(width):
                        values[slot, feature] += weight * upstream[bag, feature]
            elif entry == first:
                for feature in range(width):
                    values[slot, feature] = 0.0 + upstream[bag, feature]
            else:
                for feature in range(width):
                    values[slot, feature] += upstream[bag, feature]


@compiled_kernel(parallel=True)
def _max_row_sums_into(
    values: Any, upstream: Any, coordinates: Any, starts: Any, order: Any
) -> None:  # pragma: no cover - JIT
    width = values.shape[1]
    for slot in prange(values.shape[0]):
        for feature in range(width):
            values[slot, feature] = 0.0
        for entry in range(starts[slot], starts[slot + 1]):
            coordinate = coordinates[order[entry]]
            values[slot, coordinate % width] += upstream[coordinate]


@compiled_kernel(parallel=True)
def _weight_gradients_into(
    out: Any, upstream: Any, table: Any, indices: Any, bag_of: Any, padding_row: int
) -> None:  # pragma: no cover - JIT
    width = table.shape[1]
    for position in prange(indices.shape[0]):
        out[position] = 0.0
        row = indices[position]
        if row == padding_row:
            continue
        bag = bag_of[position]
        for feature in range(width):
            out[position] += upstream[bag, feature] * table[row, feature]


def bag_sums_into(
    out: FloatArray,
    table: FloatArray,
    indices: IndexArray,
    starts: IndexArray,
    weights: FloatArray | None,
    padding_row: int | None,
) -> IndexArray:
    """``out[b] = sum of (weights[p] *) table[indices[p]]`` over the bag's positions in order,
    padding entries skipped; returns each bag's number of entries that were not padding.

    Shape:
        ``out``: ``[B, d]``; ``table``: ``[V, d]``; ``indices``: ``[N]``; ``starts``:
        ``[B + 1]``; ``weights``: ``[N]``; returns ``[B]``.
    """
    sizes = np.empty(out.shape[0], dtype=np.intp)
    _bag_sums_into(
        out,
        sizes,
        np.ascontiguousarray(table),
        indices,
        starts,
        _weights_or_empty(weights, out.dtype),
        _row_or_none(padding_row),
    )
    return sizes


def bag_maxima_into(
    out: FloatArray,
    table: FloatArray,
    indices: IndexArray,
    starts: IndexArray,
    padding_row: int | None,
) -> IndexArray:
    """Each bag's coordinate-wise maximum over its entries (the first wins a tie, padding
    skipped) into ``out``; returns the row that produced each coordinate (``-1``: empty bag).

    Shape:
        ``out``: ``[B, d]``; returns ``[B, d]``.
    """
    max_rows = np.empty(out.shape, dtype=np.intp)
    _bag_maxima_into(
        out, max_rows, np.ascontiguousarray(table), indices, starts, _row_or_none(padding_row)
    )
    return max_rows


def bag_row_sums(
    indices: IndexArray,
    upstream: FloatArray,
    bag_of: IndexArray,
    weights: FloatArray | None,
    rows_in_table: int,
) -> tuple[IndexArray, FloatArray, IndexArray]:
    """Sorted unique rows, and for each the sum of ``(weights[p] *) upstream[bag_of[p]]`` over
    its positions in flat order; also the use counts.

    Shape:
        ``indices``, ``bag_of``, ``weights``: ``[N]``; ``upstream``: ``[B, d]``.
    """
    rows, starts, order = row_groups(indices, rows_in_table)
    values = np.empty((rows.shape[0], upstream.shape[1]), dtype=upstream.dtype)
    _bag_row_sums_into(
        values,
        np.ascontiguousarray(upstream),
        bag_of,
        _weights_or_empty(weights, upstream.dtype),
        starts,
        order,
    )
    return rows, values, np.diff(starts)


def max_row_sums(
    max_rows: IndexArray, upstream: FloatArray, rows_in_table: int
) -> tuple[IndexArray, FloatArray]:
    """Sorted unique rows that produced a maximum, and for each the sum, in bag order, of the
    upstream coordinates it produced.

    Shape:
        ``max_rows`` and ``upstream``: ``[B, d]``.
    """
    flat_rows = max_rows.reshape(-1)
    coordinates = np.flatnonzero(flat_rows >= 0).astype(np.intp, copy=False)
    rows, starts, order = row_groups(flat_rows[coordinates], rows_in_table)
    values = np.empty((rows.shape[0], max_rows.shape[1]), dtype=upstream.dtype)
    _max_row_sums_into(
        values, np.ascontiguousarray(upstream).reshape(-1), coordinates, starts, order
    )
    return rows, values


def weight_gradients_into(
    out: FloatArray,
    upstream: FloatArray,
    table: FloatArray,
    indices: IndexArray,
    bag_of: IndexArray,
    padding_row: int | None,
) -> None:
    """``out[p] = upstream[bag_of[p]] . table[indices[p]]``, features left to right (``0``
    for a padding entry).

    Shape:
        ``out``: ``[N]``; ``upstream``: ``[B, d]``; ``table``: ``[V, d]``.
    """
    _weight_gradients_into(
        out,
        np.ascontiguousarray(upstream),
        np.ascontiguousarray(table),
        indices,
        bag_of,
        _row_or_none(padding_row),
    )


def _weights_or_empty(weights: FloatArray | None, dtype: np.dtype[Any]) -> FloatArray:
    return np.empty(0, dtype=dtype) if weights is None else np.ascontiguousarray(weights)


def _row_or_none(row: int | None) -> int:
    return -1 if row is None else row
