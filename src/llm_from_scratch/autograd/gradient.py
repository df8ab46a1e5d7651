"""Gradient values on the tape: dense arrays, and the row-sparse tables a row gather leaves
(sorted unique ``rows``, one summed vector each; a large gather's summed when first read)."""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import numpy as np

from llm_from_scratch.autograd.dispatch import runs_compiled, runs_in_python
from llm_from_scratch.autograd.kernels import all_finite, copy_with_bound, scatter_rows
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, Shape, read_only_view

_SUMMING: Final = threading.Lock()  # one first read sums a pending gradient; the others wait

Parts: TypeAlias = "tuple[IndexArray, FloatArray, IndexArray | None]"  # rows, values, summed
_SUMMED_PARTS: Final = ("_rows", "_values", "_summed")


@dataclass(frozen=True, slots=True)
class PendingRows:
    """Upstream rows not summed yet: row ``indices[p]`` of the gradient adds ``upstream[p]``.

    ``upstream`` is the gradient's own (a copy of the caller's seed, or an array the tape made
    in the pass: no caller can change it), every value finite, and no row sum can overflow.

    Shape:
        ``indices``: ``[N]`` (validated, read-only); ``upstream``: ``[N, d]`` (C-contiguous).
    """

    indices: IndexArray
    upstream: FloatArray


@dataclass(frozen=True, slots=True, repr=False)
class RowSparseGradient:
    """A ``[V, d]`` gradient that is zero outside a few rows (it takes its arrays over).

    Attributes:
        rows: the sorted unique row indices ``[k]`` (a read-only view).
        values: the gradient of each listed row ``[k, d]`` (a read-only view).
        shape: the dense shape ``(V, d)``.
        summed: positions in :attr:`rows` whose values add two or more upstream rows, or None
            when unknown; only those need a finiteness check (the others copy one finite row).
        pending: a large gather's upstream rows, not summed yet (rows, values and summed are
            computed on first read), or None.

    Example:
        >>> import numpy as np
        >>> g = RowSparseGradient.from_scatter(
        ...     np.array([2, 1, 2]), np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]), (4, 2))
        >>> g.rows.tolist(), g.values.tolist()
        ([1, 2], [[0.0, 2.0], [4.0, 4.0]])
        >>> g.to_dense().tolist()
        [[0.0, 0.0], [0.0, 2.0], [4.0, 4.0], [0.0, 0.0]]
    """

    _rows: IndexArray
    _values: FloatArray
    shape: Shape
    _summed: IndexArray | None = None
    pending: PendingRows | None = None

    def __getattr__(self, name: str) -> Any:
        """Sum a pending gradient on the first read of its rows, values or summed positions
        (reached only while they are unset slots: a summed gradient reads them directly)."""
        if name in _SUMMED_PARTS:
            with _SUMMING:
                pending = self.pending
                if pending is not None:
                    parts = _scattered(pending.indices, pending.upstream, self.shape[0])
                    for part, value in zip(_SUMMED_PARTS, parts, strict=True):
                        object.__setattr__(self, part, value)
                    object.__setattr__(self, "pending", None)
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        return (
            f"RowSparseGradient(shape={self.shape}, rows={self._rows.tolist()}, "
            f"dtype={self._values.dtype})"
        )

    @property
    def rows(self) -> IndexArray:
        return read_only_view(self._rows)

    @property
    def values(self) -> FloatArray:
        return read_only_view(self._values)

    @property
    def summed(self) -> IndexArray | None:
        return None if self._summed is None else read_only_view(self._summed)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The dtype of :attr:`values`."""
        pending = self.pending
        return self._values.dtype if pending is None else pending.upstream.dtype

    @classmethod
    def empty(cls, shape: Shape, dtype: np.dtype[Any]) -> RowSparseGradient:
        """The all-zero gradient of a ``shape`` table: no rows (one shared object per shape)."""
        empty = _EMPTY.get((shape, dtype))
        if empty is None:
            rows, values = np.empty(0, dtype=np.intp), np.empty((0, shape[1]), dtype=dtype)
            rows.flags.writeable = values.flags.writeable = False
            empty = _EMPTY[shape, dtype] = cls(rows, values, shape)
        return empty

    @classmethod
    def summed_when_read(
        cls, indices: IndexArray, upstream: FloatArray, shape: Shape
    ) -> RowSparseGradient:
        """:meth:`from_scatter` of a large gather, bit for bit, summed when first read. The
        upstream is read once, counted finite and bounded; a read-only one (the caller's seed,
        which the tape hands on read-only) is copied as it is read, a writeable one was made by
        the tape in this pass and is kept as it is. When ``N`` times the largest magnitude
        could overflow a row sum, it is summed now, so that the tape's finiteness check sees
        the sums; with a value that is not finite, every row is checked (the upstream of a
        pass's root is its seed, not checked before)."""
        owned = upstream.flags.writeable and upstream.flags.c_contiguous
        kept = upstream if owned else _copy_buffer(upstream.shape, upstream.dtype)
        bad, largest = copy_with_bound(None if owned else kept, upstream)
        count, precision = indices.size, float(np.finfo(upstream.dtype).eps)
        # each partial sum of count terms is at most count * largest * (1 + eps) ** count
        bound = count * largest * math.exp(count * precision)
        if bad or not bound < float(np.finfo(upstream.dtype).max):
            rows, values, summed = _scattered(indices, kept, shape[0])
            return cls(rows, values, shape, None if bad else summed)
        gradient = object.__new__(cls)
        object.__setattr__(gradient, "shape", shape)
        object.__setattr__(gradient, "pending", PendingRows(indices, kept))
        return gradient

    def summed_rows(self) -> tuple[IndexArray, FloatArray]:
        """:attr:`rows` and :attr:`values` as held, not as read-only views: for the package's
        own readers, which never write them (an optimizer step)."""
        return self._rows, self._values

    def lists_no_rows(self) -> bool:
        """True for the all-zero gradient (a pending one always lists rows; not summed here)."""
        return self.pending is None and self._rows.size == 0

    @classmethod
    def from_scatter(
        cls,
        indices: IndexArray,
        upstream: FloatArray,
        shape: Shape,
        *,
        divide_by_counts: bool = False,
    ) -> RowSparseGradient:
        """Sum the upstream rows (``[N, d]``) that share an index, bit for bit the loop
        ``g[indices[p]] += upstream[p]`` from ``0.0``; ``divide_by_counts`` then divides each
        sum by its number of positions. A few float64 values add as Python floats (the same
        arithmetic, without NumPy's overhead)."""
        if indices.size == 0:
            return cls.empty(shape, upstream.dtype)
        if divide_by_counts or upstream.dtype != np.float64 or not runs_in_python(upstream.size):
            rows, values, summed = _scattered(indices, upstream, shape[0], divide_by_counts)
            return cls(rows, values, shape, summed)
        sums: dict[int, list[float]] = {}
        counts: dict[int, int] = {}
        for row, term in zip(indices.tolist(), upstream.tolist(), strict=True):
            total = sums.get(row)
            if total is None:
                sums[row], counts[row] = list(map((0.0).__add__, term)), 1
            else:
                sums[row], counts[row] = list(map(float.__add__, total, term)), counts[row] + 1
        listed = sorted(sums)
        positions = []
        for position, row in enumerate(listed):
            if counts[row] > 1:
                positions.append(position)
        values = np.array(list(map(sums.__getitem__, listed)), dtype=np.float64)
        return cls(np.array(listed, np.intp), values, shape, np.array(positions, np.intp))

    def without_row(self, row: int) -> RowSparseGradient:
        """This gradient with ``row`` left out (exactly zero), or ``self`` if it is not listed."""
        position = int(np.searchsorted(self._rows, row))
        if position == self._rows.size or int(self._rows[position]) != row:
            return self
        summed = self._summed
        if summed is not None:
            kept = summed[summed != position]
            summed = np.where(kept > position, kept - 1, kept).astype(np.intp, copy=False)
        values = np.delete(self._values, position, axis=0)
        return RowSparseGradient(np.delete(self._rows, position), values, self.shape, summed)

    def to_dense(self) -> FloatArray:
        """The ``[V, d]`` array; rows not listed are exactly zero."""
        dense = np.zeros(self.shape, dtype=self._values.dtype)
        dense[self._rows] = self._values
        return dense

    def merged_with(self, later: RowSparseGradient) -> RowSparseGradient:
        """``self + later`` row by row (``self`` first), rows sorted and unique."""
        if later.pending is None and later._rows.size == 0:  # a pending one lists rows
            return self
        rows = np.union1d(self._rows, later._rows).astype(np.intp, copy=False)
        values = np.zeros((rows.size, self.shape[1]), dtype=self._values.dtype)
        values[np.searchsorted(rows, self._rows)] = self._values
        with np.errstate(over="ignore", invalid="ignore"):
            values[np.searchsorted(rows, later._rows)] += later._values
        return RowSparseGradient(rows, values, self.shape)

    def added_to_dense(self, dense: FloatArray, *, dense_first: bool = True) -> FloatArray:
        """A new array ``dense + self`` (``self + dense`` unless ``dense_first``: the first
        operand's NaN is kept)."""
        result = np.array(dense, copy=True)
        with np.errstate(over="ignore", invalid="ignore"):
            if dense_first:
                result[self._rows] += self._values
            else:
                result[self._rows] = self._values + dense[self._rows]
        return result


_spare: list[FloatArray] = []  # the last copy buffer, reused once nothing holds it
_SPARE_LOCK: Final = threading.Lock()
_UNHELD: Final = 3  # references to a free spare: the list's, the loop's name, getrefcount's


def _copy_buffer(shape: Shape, dtype: np.dtype[Any]) -> FloatArray:
    """The last copy buffer if nothing holds it any more (CPython's reference count says so),
    else a new one: fresh pages cost about as much as the copy (``docs/performance.md``)."""
    with _SPARE_LOCK:
        for spare in _spare:
            if spare.shape == shape and spare.dtype == dtype and sys.getrefcount(spare) == _UNHELD:
                return spare
        fresh = np.empty(shape, dtype=dtype)
        _spare[:] = [fresh]
        return fresh


def _scattered(
    indices: IndexArray, upstream: FloatArray, rows_in_table: int, divide_by_counts: bool = False
) -> Parts:
    """The rows, sums and summed positions of :meth:`RowSparseGradient.from_scatter`, by NumPy
    or a compiled kernel."""
    if runs_compiled(upstream.size):
        rows, values, counts = scatter_rows(indices, upstream, rows_in_table)
    else:
        rows, values, counts = scatter_sums(indices, upstream)
    summed = np.flatnonzero(counts > 1).astype(np.intp, copy=False)
    if divide_by_counts and summed.size:
        with np.errstate(over="ignore", invalid="ignore"):
            np.divide(values, counts.reshape(-1, 1).astype(values.dtype), out=values)
    return rows, values, summed


def scatter_sums(
    indices: IndexArray, upstream: FloatArray
) -> tuple[IndexArray, FloatArray, IndexArray]:
    """Sorted unique rows, each one's sum of its upstream rows (from ``+0.0``, left to right,
    as :func:`~llm_from_scratch.autograd.kernels.scatter_rows` adds) and its use count."""
    inverse: Any
    if runs_in_python(upstream.size):  # Python's set and sort beat np.unique's overhead
        ids = indices.tolist()
        listed = sorted(set(ids))
        inverse = list(map(dict(zip(listed, range(len(listed)), strict=True)).__getitem__, ids))
        rows = np.array(listed, dtype=np.intp)
        counts = np.bincount(inverse, minlength=rows.size)
    else:
        rows, inverse, counts = np.unique(indices, return_inverse=True, return_counts=True)
        rows, inverse = rows.astype(np.intp, copy=False), inverse.reshape(-1)
    values = np.zeros((rows.size, upstream.shape[1]), dtype=upstream.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        np.add.at(values, inverse, upstream)
    return rows, values, counts


Gradient: TypeAlias = "FloatArray | RowSparseGradient"
_EMPTY: dict[tuple[Shape, np.dtype[Any]], RowSparseGradient] = {}


def add_gradients(earlier: Gradient, later: Gradient) -> Gradient:
    """``earlier + later`` without changing either; row-sparse stays row-sparse when both are."""
    if isinstance(earlier, RowSparseGradient):
        if isinstance(later, RowSparseGradient):
            if earlier.pending is None and earlier._rows.size == 0:  # a pending one lists rows
                return later
            return earlier.merged_with(later)
        return earlier.added_to_dense(later, dense_first=False)
    if isinstance(later, RowSparseGradient):
        return later.added_to_dense(earlier)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(np.add(earlier, later))


def first_non_finite(gradient: Gradient) -> tuple[int, float] | None:
    """The dense flat index and value of the first NaN or infinity, or None (a row-sparse
    gradient is checked on its summed rows when it knows them: the others copy finite rows)."""
    if isinstance(gradient, RowSparseGradient):
        if gradient.pending is not None:
            return None  # checked finite, and no sum can overflow (reading would sum it)
        summed, values, width = gradient._summed, gradient._values, gradient.shape[1]
        if summed is not None and summed.size == 0:
            return None
        picked = None if summed is None or runs_in_python(values.size) else summed  # a glance
        found = first_non_finite(values if picked is None else values[picked])
        if found is None:
            return None
        row = found[0] // width
        position = row if picked is None else int(picked[row])
        return int(gradient._rows[position]) * width + found[0] % width, found[1]
    flat = gradient.reshape(-1)
    if runs_in_python(flat.size):
        finite = all(map(math.isfinite, flat.tolist()))
    else:  # a compiled count needs no temporary mask
        finite = all_finite(flat) if runs_compiled(flat.size) else bool(np.isfinite(flat).all())
    if finite:
        return None
    index = int(np.flatnonzero(~np.isfinite(flat))[0])
    return index, float(flat[index])
