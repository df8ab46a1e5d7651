"""Reading a caller's IDs once, into an owned index buffer that is then checked and used.

Every ID input (``Embedding.forward``, ``embedding(ids)``, ``TensorValue.gather_rows``) follows
one rule: each ID is read exactly once, converted into a new index buffer, and the bounds are
checked on that very buffer, which the row-gather plan then owns. So the kernel gathers exactly
the IDs that were shown to be in range, whatever the caller's objects do between two reads.

- A NumPy array of any subclass (matrix, memmap, recarray, a user's own) is read through
  :func:`~llm_from_scratch.tensor.storage.plain_view`: the memory it holds, never what an
  overridden method shows. A masked array is refused as a container: its mask marks missing
  IDs, which have no value to look up.
- An array whose dtype is not an integer (bool, float, complex, str, datetime, structured) is
  refused before any ID is converted: a non-empty one names position 0 and its first value; an
  empty one has no position and is refused by its dtype.
- A sequence's ``len()`` is read once, before any item. Its items are then read once each, in
  order, and at most one item past that length: a Python ``int`` is taken as it is, any other
  :class:`numbers.Integral` through one ``operator.index`` call; a sequence that yields another
  number of items than its length is a count problem. An object array is read like a sequence
  of its elements.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final, Literal, cast

import numpy as np

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.tensor.storage import (
    CONVERSION_ERRORS,
    IndexArray,
    Shape,
    is_masked_array,
    plain_view,
)

_CHUNK: Final = 1 << 16  # items converted per block (bounds temporary memory)
_EXACT_AS_INDEX: Final = frozenset(
    np.dtype(code) for code in np.typecodes["AllInteger"] if np.can_cast(code, np.intp)
)  # every native integer dtype whose values all fit an index (all but uint64 on 64 bits)
_END: Final = object()


@dataclass(frozen=True, slots=True)
class IdProblem:
    """The first fault found while reading IDs, in flat order.

    ``kind`` is ``"type"`` (a non-integer ID: ``value`` is it), ``"bounds"`` (an ID outside
    the table: ``value`` is the ID), ``"count"`` (a sequence that yielded another number of
    items than its length: ``value`` is how many it yielded, ``count + 1`` when it had more) or
    ``"dtype"`` (an empty array of a non-integer dtype: ``value`` is the dtype, ``position``
    is 0 and means nothing).
    """

    kind: Literal["type", "bounds", "count", "dtype"]
    position: int
    value: object


class IdContainerError(StructuredError):
    """IDs that are not a flat sequence or a one-dimensional array; ``detail`` says why."""

    template = "{detail}"
    detail: str


class FlatIds:
    """A caller's IDs, taken apart without reading a single ID.

    Args:
        ids: a sequence of Python or NumPy integers, or a one-dimensional NumPy array.

    Attributes:
        count: how many IDs there are (a sequence's ``len()``, read once).
        shape: ``(count,)``, or an array's own shape (:meth:`of_array`).

    Raises:
        IdContainerError: anything else (each boundary maps it to its own error class).
    """

    __slots__ = ("_array", "_items", "count", "shape")

    def __init__(self, ids: object) -> None:
        self._array: np.ndarray[Any, Any] | None = None
        self._items: Iterable[object] = ()
        if isinstance(ids, np.ndarray):
            plain = _plain_ids(ids)
            if plain.ndim != 1:
                raise IdContainerError(f"expected a one-dimensional array, got {plain.ndim} axes")
            self._hold_array(plain)
        elif isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
            raise IdContainerError(f"expected a sequence of integers, got {type(ids).__name__}")
        else:
            try:
                self.count = len(ids)  # not copied yet: a count mismatch reads no ID
            except CONVERSION_ERRORS as error:
                raise IdContainerError(f"the length of the sequence: {error}") from None
            self.shape: Shape = (self.count,)
            self._items = ids

    @classmethod
    def of_array(cls, ids: np.ndarray[Any, Any]) -> FlatIds:
        """The IDs of an array of any rank, whose own shape is the index shape.

        Raises:
            IdContainerError: a masked array.
        """
        flat = object.__new__(cls)
        flat._array, flat._items = None, ()
        flat._hold_array(_plain_ids(ids))
        return flat

    def _hold_array(self, plain: np.ndarray[Any, Any]) -> None:
        self.count = int(plain.size)
        self.shape = tuple(int(extent) for extent in plain.shape)
        if plain.dtype.kind == "O":
            self._items = plain.flat  # read element by element, like a sequence
        else:
            self._array = plain

    def read(self, rows: int) -> IndexArray | IdProblem:
        """Convert the IDs into a new index buffer, each read once, and check them there.

        Returns the buffer if every ID is an integer in ``[0, rows)``, else the first problem
        in flat order (a non-integer dtype is found before any buffer is reserved).

        Raises:
            MemoryError: the index buffer cannot be reserved.
        """
        if self._array is not None:
            return _read_array(self._array, rows)
        return _read_items(self._items, self.count, rows)


def _plain_ids(ids: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    if is_masked_array(ids):
        raise IdContainerError("a masked array has missing IDs; pass its filled data")
    return plain_view(ids)


def _reserved(count: int, dtype: np.dtype[Any] | type[np.integer[Any]]) -> np.ndarray[Any, Any]:
    try:
        return np.empty(count, dtype=dtype)
    except ValueError as error:  # NumPy: the byte count does not fit a signed 64-bit size
        raise MemoryError(f"cannot reserve {count} indices") from error


def _read_array(array: np.ndarray[Any, Any], rows: int) -> IndexArray | IdProblem:
    if array.dtype.kind not in "iu":
        if array.size == 0:
            return IdProblem("dtype", 0, array.dtype)
        return IdProblem("type", 0, array.flat[0].item())
    if array.dtype in _EXACT_AS_INDEX:
        indices: IndexArray = _copied(array, np.dtype(np.intp))
        return _first_out_of_bounds(indices, rows) or indices
    owned = _copied(array, array.dtype)  # uint64: checked in its own dtype, then converted
    problem = _first_out_of_bounds(owned, rows)
    if problem is not None:
        return problem
    return owned.astype(np.intp)  # every value is below ``rows``, so the conversion is exact


def _copied(array: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """One read of ``array`` (any rank, any layout) into a new flat buffer, in row-major order."""
    try:
        return array.astype(dtype, order="C").reshape(-1)  # a plain ndarray's own method
    except ValueError as error:  # NumPy: the byte count does not fit a signed 64-bit size
        raise MemoryError(f"cannot reserve {array.size} indices") from error


def _first_out_of_bounds(buffer: np.ndarray[Any, Any], rows: int) -> IdProblem | None:
    if buffer.size == 0 or (int(buffer.min()) >= 0 and int(buffer.max()) < rows):
        return None
    position = int(np.flatnonzero((buffer < 0) | (buffer >= rows))[0])
    return IdProblem("bounds", position, int(buffer[position]))


def _read_items(items: Iterable[object], count: int, rows: int) -> IndexArray | IdProblem:
    indices: IndexArray = _reserved(count, np.dtype(np.intp))
    iterator: Iterator[object] = iter(items)
    for start in range(0, count, _CHUNK):
        wanted = min(_CHUNK, count - start)
        block = list(islice(iterator, wanted))
        problem = _convert_block(block, indices[start : start + len(block)], start, rows)
        if problem is not None:
            return problem
        if len(block) < wanted:
            return IdProblem("count", start + len(block), start + len(block))
    if next(iterator, _END) is not _END:
        return IdProblem("count", count, count + 1)
    return indices


def _convert_block(
    block: list[object], out: IndexArray, offset: int, rows: int
) -> IdProblem | None:
    """Convert ``block`` into ``out`` (as long), each ID read once, and check its bounds."""
    if set(map(type, block)) <= {int}:  # Python ints cannot change: NumPy may read them itself
        try:
            out[:] = cast("list[int]", block)
        except OverflowError:
            pass  # an int beyond 64 bits: the item-by-item pass below names its position
        else:
            problem = _first_out_of_bounds(out, rows)
            if problem is None:
                return None
            return IdProblem("bounds", offset + problem.position, problem.value)
    converted: list[int] = []
    for value in block:
        result = _converted_id(value, offset + len(converted), rows)
        if isinstance(result, IdProblem):
            return result
        converted.append(result)
    out[:] = converted
    return None


def _converted_id(value: object, position: int, rows: int) -> int | IdProblem:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        return IdProblem("type", position, value)
    try:
        as_int = operator.index(value)
    except CONVERSION_ERRORS:
        return IdProblem("type", position, value)
    if not 0 <= as_int < rows:
        return IdProblem("bounds", position, as_int)
    return as_int
