"""``max_norm``: the in-place renormalization of looked-up rows, PyTorch's ``embedding_renorm_``.

Each distinct looked-up row whose ``norm_type``-norm exceeds ``max_norm`` is multiplied by
``max_norm / (norm + 1e-7)``, outside the tape, with PyTorch's CPU arithmetic: the norm in the
table's dtype, its terms added left to right (PyTorch's 2-norm adds in SIMD lanes, so it may
differ in the last bit), the scale computed in float64 and rounded to the table's dtype. A
parameter table is written in place, its lock held through the lookup (a graph recorded before
raises ``tape.stale-value``); a frozen table is never written: :func:`renormalized_rows`
computes the same rows into a new array, what PyTorch's first lookup of each row returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.threads import Write
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.errors import OptionError
from llm_from_scratch.tensor.storage import FloatArray, IndexArray

_T = TypeVar("_T")

NORM_OFFSET = 1e-7  # added to a norm before dividing by it (PyTorch's constant)


def check_renormalizable(table: TensorValue, max_norm: float | None) -> None:
    """Refuse ``max_norm`` on an operation result, whose rows can be neither written nor
    replaced outside the tape (``option.value``)."""
    if max_norm is not None and table.kind == "operation":
        requirement = "None when the table is an operation result (renormalize a parameter or a"
        requirement += " constant table)"
        raise OptionError("option.value", name="max_norm", requirement=requirement, value=max_norm)


def renormalized_then(
    table: TensorValue,
    indices: IndexArray,
    max_norm: float,
    norm_type: float,
    lookup: Callable[[], _T],
) -> _T:
    """Renormalize the rows ``indices`` name of a parameter table, then run ``lookup`` while no
    other update of the table can start; return what it returns."""

    def planned() -> list[Write | None]:
        return [renormalizing_write(table.numpy(), indices, max_norm, norm_type)]

    return cast(_T, update_leaves_in_place([table], planned, lookup))


def renormalizing_write(
    values: FloatArray, indices: IndexArray, max_norm: float, norm_type: float
) -> Write | None:
    """The write that scales each distinct row of ``indices`` whose norm exceeds ``max_norm``,
    or None when no row does (the revision then stays)."""
    if indices.size == 0:
        return None
    rows = np.unique(indices)
    exceeding, scaled = _scaled(values[rows], max_norm, norm_type)
    if exceeding is None:
        return None
    rows = rows[exceeding]

    def write(array: FloatArray) -> None:
        array[rows] = scaled

    return write


def renormalized_rows(
    values: FloatArray, indices: IndexArray, max_norm: float, norm_type: float
) -> tuple[IndexArray, FloatArray, IndexArray]:
    """The distinct rows ``indices`` name, renormalized without writing ``values``: the sorted
    rows ``[k]``, a new ``[k, d]`` array of them as :func:`renormalizing_write` leaves them, bit
    for bit, and each index's position in the rows ``[N]``.

    Example:
        >>> table = np.array([[3.0, 4.0], [0.3, 0.4]])
        >>> rows, renormalized, positions = renormalized_rows(table, np.array([1, 0, 1]), 1.0, 2.0)
        >>> rows.tolist(), positions.tolist(), renormalized.round(6).tolist(), table[0].tolist()
        ([0, 1], [1, 0, 1], [[0.6, 0.8], [0.3, 0.4]], [3.0, 4.0])
    """
    rows, positions = np.unique(indices, return_inverse=True)
    renormalized = values[rows]  # a new array: the table is only read
    exceeding, scaled = _scaled(renormalized, max_norm, norm_type)
    if exceeding is not None:
        renormalized[exceeding] = scaled
    return rows, renormalized, positions.reshape(-1).astype(np.intp, copy=False)


def _scaled(
    selected: FloatArray, max_norm: float, norm_type: float
) -> tuple[np.ndarray[Any, np.dtype[np.bool_]] | None, FloatArray]:
    """Which of ``selected``'s rows exceed ``max_norm`` (None if none does), and those rows
    scaled as the module docstring says."""
    norms = row_norms(selected, norm_type).astype(np.float64)
    exceeding = norms > max_norm
    if not bool(exceeding.any()):
        return None, selected[:0]
    scales = (max_norm / (norms[exceeding] + NORM_OFFSET)).astype(selected.dtype)
    return exceeding, selected[exceeding] * scales.reshape(-1, 1)


def row_norms(rows: FloatArray, norm_type: float) -> FloatArray:
    """The ``norm_type``-norm of each row, in the rows' dtype, its terms added left to right."""
    # Expected and handled, as PyTorch's kernel computes them: a power that overflows (a huge
    # p) gives an infinite norm, and a p below the dtype's smallest subnormal (1e-50 in float32)
    # rounds to 0, so 1/p is infinite (NumPy's "divide by zero") and the norm is 0, 1 or inf.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if norm_type == 2.0:
            return np.sqrt(_left_to_right_sums(rows * rows))
        magnitudes = np.abs(rows)
        if norm_type == 1.0:
            return _left_to_right_sums(magnitudes)
        power = rows.dtype.type(norm_type)
        sums = _left_to_right_sums(magnitudes**power)
        return np.asarray(sums ** (rows.dtype.type(1.0) / power))


def _left_to_right_sums(terms: FloatArray) -> FloatArray:
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0], dtype=terms.dtype)
    return np.ascontiguousarray(np.cumsum(terms, axis=1)[:, -1])
