"""``max_norm``, PyTorch's ``embedding_renorm_`` (``docs/library.md``): each distinct looked-up
row whose norm (in the table's dtype, added left to right) exceeds ``max_norm`` is scaled by
``max_norm / (norm + 1e-7)`` (computed in float64, rounded to the dtype), outside the tape: in
place for a parameter, its lock held through the lookup; into a new array for a constant."""

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
    """Refuse ``max_norm`` on an operation result (``option.value``): its rows can be neither
    written nor replaced outside the tape."""
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
    """Renormalize the rows ``indices`` name of a parameter table, then return ``lookup()`` run
    while no other update of the table can start."""

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
    rows ``[k]``, a new ``[k, d]`` array of them as :func:`renormalizing_write` leaves them, and
    each index's position among the rows ``[N]``.

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
    """Which of ``selected``'s rows exceed ``max_norm`` (None if none), and those rows scaled."""
    norms = row_norms(selected, norm_type).astype(np.float64)
    exceeding = norms > max_norm
    if not bool(exceeding.any()):
        return None, selected[:0]
    scales = (max_norm / (norms[exceeding] + NORM_OFFSET)).astype(selected.dtype)
    return exceeding, selected[exceeding] * scales.reshape(-1, 1)


def row_norms(rows: FloatArray, norm_type: float) -> FloatArray:
    """The ``norm_type``-norm of each row, in the rows' dtype, its terms added left to right."""
    # As PyTorch's kernel: a huge p overflows to an infinite norm; a p that rounds to 0 in the
    # dtype makes 1/p infinite ("divide by zero") and the norm 0, 1 or inf.
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
