"""The compiled selection of the best rows of many scores: each row's ``count`` highest columns
in one pass, highest first, the lower column first on a tie (what a stable sort of the negated
scores gives), instead of NumPy's ``argpartition`` and a sort: ``dispatch`` chooses by size."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd.dispatch import compiled_kernel, kernel_helper, prange, runs_compiled


@kernel_helper
def select_top_columns(scores: Any, row: int, count: int, out: Any) -> None:  # pragma: no cover
    """The ``count`` best columns of one row into ``out[row]``, in one pass (JIT)."""
    values = np.empty(count, dtype=scores.dtype)
    filled = 0
    for column in range(scores.shape[1]):
        value = scores[row, column]
        if filled == count and not value > values[count - 1]:
            continue
        place = filled if filled < count else count - 1
        while place > 0 and value > values[place - 1]:
            values[place] = values[place - 1]
            out[row, place] = out[row, place - 1]
            place -= 1
        values[place] = value
        out[row, place] = column
        filled = min(filled + 1, count)


@compiled_kernel(parallel=True)
def _top_columns(scores: Any, count: int, out: Any) -> None:  # pragma: no cover - JIT
    for row in prange(scores.shape[0]):
        select_top_columns(scores, row, count, out)


@compiled_kernel(parallel=False)
def _top_columns_one_thread(scores: Any, count: int, out: Any) -> None:  # pragma: no cover - JIT
    """One thread: no thread pool woken, none left spinning beside the next matrix product."""
    for row in range(scores.shape[0]):
        select_top_columns(scores, row, count, out)


def top_columns(scores: npt.NDArray[np.floating], count: int) -> npt.NDArray[np.intp]:
    """Each row's ``count`` highest columns (at most its width), highest first, the lower
    column first on a tie (one row: on the calling thread alone).

    Example:
        >>> top_columns(np.array([[0.1, 0.9, 0.5, 0.9]], dtype=np.float32), 3).tolist()
        [[1, 3, 2]]
    """
    count = min(count, scores.shape[1])
    if scores.shape[0] == 1 and not runs_compiled(scores.shape[1]):
        return _partitioned(scores[0], count)[np.newaxis, :]
    if not runs_compiled(scores.size):
        order = np.argsort(-scores, axis=1, kind="stable")
        return np.ascontiguousarray(order[:, :count])
    out = np.zeros((scores.shape[0], count), dtype=np.intp)
    kernel = _top_columns_one_thread if scores.shape[0] == 1 else _top_columns
    kernel(np.ascontiguousarray(scores), count, out)
    return out


def _partitioned(row: npt.NDArray[np.floating], count: int) -> npt.NDArray[np.intp]:
    cut = row.shape[0] - count
    part = np.argpartition(row, cut)[cut:] if cut > 0 else np.arange(row.shape[0])
    return part[np.lexsort((part, -row[part]))]
