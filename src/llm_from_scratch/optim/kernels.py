"""The optimizer's compiled kernels: a finiteness check and an in-place update of SGD rows.

Compiled on first call, like the tape's kernels (see :mod:`~llm_from_scratch.autograd.dispatch`);
neither uses fast-math, so each new value rounds exactly like the NumPy expression
``table[rows] - rate * values``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@compiled_kernel(parallel=True)
def _count_non_finite_steps(
    table: Any, rows: Any, values: Any, rate: Any
) -> int:  # pragma: no cover
    bad = 0
    for slot in prange(rows.shape[0]):
        row = rows[slot]
        for feature in range(values.shape[1]):
            if not np.isfinite(table[row, feature] - rate * values[slot, feature]):
                bad += 1
    return bad


@compiled_kernel(parallel=True)
def _subtract_scaled_rows(
    table: Any, rows: Any, values: Any, rate: Any
) -> None:  # pragma: no cover
    for slot in prange(rows.shape[0]):
        row = rows[slot]
        for feature in range(values.shape[1]):
            table[row, feature] = table[row, feature] - rate * values[slot, feature]


def sgd_rows_stay_finite(
    table: FloatArray, rows: IndexArray, values: FloatArray, rate: np.floating[Any]
) -> bool:
    """True when ``table[rows] - rate * values`` is finite everywhere (nothing is written)."""
    return int(_count_non_finite_steps(table, rows, values, rate)) == 0


def sgd_rows_apply(
    table: FloatArray, rows: IndexArray, values: FloatArray, rate: np.floating[Any]
) -> None:
    """``table[rows] -= rate * values`` in place, rounding like the NumPy expression.

    Shape:
        ``table``: ``[V, d]`` (C-contiguous, writeable); ``rows``: ``[k]`` unique;
        ``values``: ``[k, d]``.
    """
    _subtract_scaled_rows(table, rows, values, rate)
