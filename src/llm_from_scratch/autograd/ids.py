"""The one reader of every lookup's IDs (contract sections 4 and 9.7): normalized, checked in
the contract's order, read once into the plan's own index buffer and checked there.

Edge cases live here, off the gather's teaching path: masked and object arrays, list and tuple
subclasses (read as their base class holds them), ragged nests, integers beyond 64 bits, stride-0
arrays. An array is read through ``plain_view`` (never an overridden method), a sequence's
``len()`` once and its items once each (at most one past that length).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain, islice
from math import prod
from typing import Any, Final, Literal, TypeAlias, cast

import numpy as np

from llm_from_scratch.autograd.dispatch import runs_in_python
from llm_from_scratch.autograd.gather import (
    PLAIN_GRADIENT,
    RowGatherPlan,
    RowGradientRule,
    plan_from_validated_indices,
)
from llm_from_scratch.errors import AllocationError, IdError, ShapeError
from llm_from_scratch.tensor.storage import (
    CONVERSION_ERRORS,
    INDEX_LIMIT,
    MAX_AXES,
    IndexArray,
    Shape,
    checked_row_major_layout,
    checked_shape_and_count,
    is_masked_array,
    numpy_can_describe,
    plain_view,
)

Checker: TypeAlias = Literal["embedding", "gather"]  # who reads the IDs words the errors
_PREFIX: Final = {"embedding": "ids", "gather": "gather"}


def plan_of_ids(
    ids: object,
    table_shape: tuple[int, int],
    itemsize: int,
    rule: RowGradientRule = PLAIN_GRADIENT,
    *,
    shape: object = None,
    checker: Checker = "embedding",
) -> RowGatherPlan:
    """Read a lookup's IDs once: normalize them, check them in the contract's order (its
    sections 4 and 9.7: the ``ids.*`` rules, or ``gather.*`` for ``checker="gather"``), convert.

    ``ids`` is an integer array or nested lists whose own shape is the token shape; or, given
    ``shape``, flat IDs in row-major order (a sequence or a 1-D array) and the shape they form.
    """
    prefix, (rows, width) = _PREFIX[checker], table_shape
    source: Source | None
    if shape is not None:  # flat IDs and the shape they form
        try:
            index_shape, count = checked_shape_and_count(shape)
        except ShapeError as error:
            raise _shape_error(checker, "index", shape, error) from error
        source, received = flat_source(ids, checker)
        if received != count:
            raise IdError(f"{prefix}.count", expected=count, actual=received)
    else:  # an array, or nested lists that claim their shape by their first items
        if isinstance(ids, np.ndarray):
            ids = ids if type(ids) is np.ndarray else plain_array(ids, checker)
            if ids.dtype.kind == "O":  # its items may be lists themselves
                _reserve_room(ids.size)
                ids = ids.tolist()
        source = ids if isinstance(ids, np.ndarray) else None
        index_shape = ids.shape if isinstance(ids, np.ndarray) else nest_shape(ids)
        count = prod(index_shape)
    if not (len(index_shape) < MAX_AXES and 0 < count * width <= INDEX_LIMIT):
        shown = index_shape if shape is None else shape
        _check_output_shape(shown, index_shape, width, itemsize, checker)
    if source is None:
        source = nest_leaves(ids, index_shape, count)
    try:
        read = read_ids(source, count, rows)
    except MemoryError as error:  # the index buffer itself
        raise _allocation_error(checker, count) from error
    if isinstance(read, IdProblem):
        raise _id_error(prefix, read, count, rows)
    return plan_from_validated_indices(read, index_shape, table_shape, rule)


def _check_output_shape(
    given: object, shape: Shape, width: int, itemsize: int, checker: Checker
) -> None:
    """The output ``shape + (d,)`` has a layout that fits and a shape NumPy can describe."""
    output_shape = (*shape, width)
    try:
        _, elements = checked_row_major_layout(output_shape)
        if elements == 0 and not numpy_can_describe(output_shape, itemsize):
            raise ShapeError("shape.overflow", shape=output_shape)
    except ShapeError as error:
        shown = given if checker == "embedding" else output_shape
        raise _shape_error(checker, "output", shown, error) from error


def _shape_error(checker: Checker, which: str, shape: object, cause: ShapeError) -> Exception:
    if checker == "embedding":
        return IdError("ids.shape", what="token-ID shape", cause=cause, shape=shape)
    what = "gather index shape" if which == "index" else "row gather output shape"
    return ShapeError("shape.invalid", what=what, cause=cause, shape=shape)


def _allocation_error(checker: Checker, count: int) -> AllocationError:
    operation = f"{checker} index conversion"
    rule = "ids.allocation" if checker == "embedding" else "output.allocation"
    return AllocationError(rule, elements=count, operation=operation)


def _id_error(prefix: str, problem: IdProblem, count: int, rows: int) -> IdError:
    if problem.kind == "type":
        return IdError(f"{prefix}.type", position=problem.position, value=problem.value)
    if problem.kind == "dtype":
        return IdError(f"{prefix}.dtype", dtype=str(problem.value))
    if problem.kind == "count":
        return IdError(f"{prefix}.count", expected=count, actual=problem.value)
    return IdError(
        f"{prefix}.out-of-range", id=problem.value, position=problem.position, vocabulary_size=rows
    )


_CHUNK: Final = 1 << 16  # items converted per block (bounds temporary memory)
_INDEX: Final = np.dtype(np.intp)
_EXACT_AS_INDEX: Final = frozenset(
    np.dtype(code) for code in np.typecodes["AllInteger"] if np.can_cast(code, np.intp)
)  # every native integer dtype whose values all fit an index (all but uint64 on 64 bits)
_END: Final = object()

Source: TypeAlias = "Sequence[object] | np.ndarray[Any, Any]"  # items, or a plain array


@dataclass(frozen=True, slots=True)
class IdProblem:
    """The first fault found while reading, in flat order, and the ``value`` it names: a
    non-integer, an integer out of bounds, the count a sequence yielded against its length
    (``count + 1`` when more), or the dtype of an empty non-integer array."""

    kind: Literal["type", "bounds", "count", "dtype"]
    position: int
    value: object


def flat_source(ids: object, checker: Checker) -> tuple[Source, int]:
    """A flat sequence or 1-D array and its ``len()`` (read once), else ``ids.container``."""
    rule = f"{_PREFIX[checker]}.container"
    if isinstance(ids, np.ndarray):
        plain = plain_array(ids, checker)
        if plain.ndim != 1:
            raise IdError(rule, detail=f"expected a one-dimensional array, got {plain.ndim} axes")
        return plain, int(plain.size)
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise IdError(rule, detail=f"expected a sequence of integers, got {type(ids).__name__}")
    try:
        return ids, len(ids)
    except CONVERSION_ERRORS as error:
        raise IdError(rule, detail=f"the length of the sequence: {error}") from None


def plain_array(ids: np.ndarray[Any, Any], checker: Checker) -> np.ndarray[Any, Any]:
    """The memory of an ID array as a base-class view; a masked array is ``ids.container``."""
    if is_masked_array(ids):
        detail = "a masked array has missing IDs; pass its filled data"
        raise IdError(f"{_PREFIX[checker]}.container", detail=detail)
    return plain_view(ids)


def read_ids(source: Source, count: int, bound: int) -> IndexArray | IdProblem:
    """Convert ``count`` values, each read once, into a new index buffer and check its bounds:
    the buffer, or the first problem in flat order (MemoryError: no room for the buffer)."""
    buffer: np.ndarray[Any, Any] | None = None
    if isinstance(source, np.ndarray) and source.dtype.kind != "O":
        read = _array_buffer(source)
        if isinstance(read, IdProblem):
            return read
        buffer = read
    elif type(source) is list and set(map(type, source)) <= {int}:
        with suppress(OverflowError):  # an int beyond 64 bits: read item by item below
            buffer = np.array(source, dtype=_INDEX)  # Python ints cannot change
    blocks: Iterable[tuple[int, int, IdProblem | None]] = ((0, count, None),)
    if buffer is None:
        try:
            buffer = np.empty(count, dtype=_INDEX)
        except ValueError as error:  # NumPy: the byte count does not fit a signed 64-bit size
            raise MemoryError(f"cannot reserve {count} indices") from error
        items = source.flat if isinstance(source, np.ndarray) else source
        blocks = _converted_blocks(iter(items), buffer, bound)
    for start, stop, problem in blocks:  # each block checked before the next is read
        checked = buffer if stop - start == count else buffer[start:stop]
        if runs_in_python(checked.size):  # Python's min and max beat NumPy's call overhead here
            values = checked.tolist()
            in_range = not values or (min(values) >= 0 and max(values) < bound)
        else:  # as unsigned, negative indices wrap to huge values: one maximum checks both ends
            unsigned = checked.view(np.uintp) if checked.dtype == np.intp else checked
            in_range = int(unsigned.max()) < bound
        if not in_range:
            position = int(np.flatnonzero((checked < 0) | (checked >= bound))[0])
            return IdProblem("bounds", start + position, int(checked[position]))
        if problem is not None:
            return problem
    return buffer if buffer.dtype is _INDEX else buffer.astype(_INDEX)  # in range: exact


def _array_buffer(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | IdProblem:
    """A new flat row-major copy of an integer array (uint64 kept until checked)."""
    if array.dtype.kind not in "iu":
        if array.size == 0:
            return IdProblem("dtype", 0, array.dtype)
        return IdProblem("type", 0, array.flat[0].item())
    dtype = _INDEX if array.dtype in _EXACT_AS_INDEX else array.dtype
    try:
        return array.astype(dtype, order="C").reshape(-1)  # a plain ndarray's own method
    except ValueError as error:  # NumPy: the byte count does not fit a signed 64-bit size
        raise MemoryError(f"cannot reserve {array.size} indices") from error


def _converted_blocks(
    items: Iterator[object], buffer: IndexArray, bound: int
) -> Iterator[tuple[int, int, IdProblem | None]]:
    """Convert the items into ``buffer`` by blocks: each block's positions and its problem."""
    count = buffer.size
    for start in range(0, count, _CHUNK):
        wanted = min(_CHUNK, count - start)
        block = list(islice(items, wanted))
        problem = _converted_block(block, buffer[start : start + len(block)], start, bound)
        if problem is None and len(block) < wanted:
            problem = IdProblem("count", start + len(block), start + len(block))
        stop = start + len(block) if problem is None else problem.position
        yield start, stop, problem
        if problem is not None:
            return
    if next(items, _END) is not _END:
        yield count, count, IdProblem("count", count, count + 1)


def _converted_block(
    block: list[object], out: IndexArray, offset: int, bound: int
) -> IdProblem | None:
    """Convert ``block`` into ``out``: Python ints at once, others by ``operator.index``."""
    if set(map(type, block)) <= {int}:  # Python ints cannot change: NumPy may read them itself
        with suppress(OverflowError):  # an int beyond 64 bits: the pass below names it
            out[:] = cast("list[int]", block)
            return None
    for position, value in enumerate(block):
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
            return IdProblem("type", offset + position, value)
        try:
            as_int = operator.index(value)
        except CONVERSION_ERRORS:
            return IdProblem("type", offset + position, value)
        if not 0 <= as_int < bound:
            return IdProblem("bounds", offset + position, as_int)
        out[position] = as_int
    return None


_NESTS: Final = (list, tuple)


def nest_shape(ids: object) -> Shape:
    """The shape nested lists claim by their first items (no ID read); deeper than
    ``MAX_AXES`` is ``ids.nesting``."""
    shape: list[int] = []
    probe = ids
    while isinstance(probe, _NESTS):
        if len(shape) == MAX_AXES:
            detail = f"lists nested more than {MAX_AXES} deep"
            raise IdError("ids.nesting", detail=detail, limit=MAX_AXES)
        items = probe if type(probe) in _NESTS else _items_of(probe)
        shape.append(len(items))
        if not items:
            break
        probe = items[0]
    return tuple(shape)


def nest_leaves(ids: object, shape: Shape, count: int) -> list[object]:
    """The ``count`` leaves of a nest of exactly ``shape``, in row-major order; no room is
    ``ids.allocation``, a ragged nest ``ids.container``."""
    level: list[object] = [ids]
    try:
        if count > _CHUNK:
            level = [None] * count  # room for the leaves, before the nest is walked
            level = [ids]
        for extent in shape:
            if not set(map(type, level)) <= {list, tuple}:
                level = [_items_of(item) if isinstance(item, _NESTS) else item for item in level]
            nests = cast("list[Sequence[object]]", level)
            if not (set(map(type, nests)) <= {list, tuple} and set(map(len, nests)) <= {extent}):
                raise IdError("ids.container", detail=_ragged(ids, shape))
            level = list(chain.from_iterable(nests))
    except (MemoryError, OverflowError) as error:
        raise _allocation_error("embedding", count) from error
    for kind in set(map(type, level)):
        if issubclass(kind, _NESTS):
            raise IdError("ids.container", detail=_ragged(ids, shape))
    return level


def _reserve_room(count: int) -> None:
    """``ids.allocation`` unless ``count`` references fit in memory."""
    if count <= _CHUNK:
        return
    try:
        room: list[None] | None = [None] * count
    except (MemoryError, OverflowError) as error:
        raise _allocation_error("embedding", count) from error
    del room


def _items_of(container: list[object] | tuple[object, ...]) -> Sequence[object]:
    """The items a list or tuple holds, read by the base class (no override runs)."""
    if type(container) in _NESTS:
        return container
    if isinstance(container, list):
        return tuple(list.__iter__(container))
    return tuple(tuple.__iter__(container))


def _ragged(ids: object, shape: Shape) -> str:
    """Where a nest first departs from ``shape``, walking it in row-major order."""
    stack: list[tuple[object, tuple[int, ...]]] = [(ids, ())]
    while stack:
        item, path = stack.pop()
        if len(path) == len(shape):
            if isinstance(item, _NESTS):
                return f"ragged nesting at index {list(path)}"
            continue
        items = _items_of(item) if isinstance(item, _NESTS) else None
        if items is None or len(items) != shape[len(path)]:
            return f"ragged nesting at index {list(path)}: expected {shape[len(path)]} items"
        stack.extend((items[i], (*path, i)) for i in reversed(range(len(items))))
    return "ragged nesting"
