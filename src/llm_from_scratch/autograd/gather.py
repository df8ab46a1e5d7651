"""The row gather (course chapter 16): one checked entry, one trusted plan, one kernel, one VJP.

Every row lookup reads its IDs here, once: ``TensorValue.gather_rows(indices, index_shape)`` and
``Embedding.forward(token_ids, token_shape)`` through :func:`plan_of_flat_ids`; the layer call
``embedding(ids)``, ``nn.functional.embedding`` and the bags through :func:`plan_of_ids`. Both
check, in the contract's order, the shape, the count and the output shape before any ID is read,
then convert the IDs once into a new index buffer and check the bounds on that very buffer (see
"Reading IDs once" below; a bag's offsets are read by the same functions). One error class names
each failure, worded for the boundary that checked (``checker``: ``embedding`` or ``gather``).

The buffer goes into a :class:`RowGatherPlan` through the trusted constructor
:func:`plan_from_validated_indices`, which re-checks nothing. The one kernel
:func:`gather_rows_forward` copies one table row per index; its VJP :func:`gather_rows_vjp`
scatter-adds the upstream rows into a row-sparse table gradient, with the plan's
:class:`RowGradientRule` (a padding row that receives nothing, or sums divided by frequency).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterator, Sequence
from dataclasses import InitVar, dataclass
from itertools import chain, islice
from math import prod
from typing import Any, Final, Literal, TypeAlias, cast

import numpy as np

from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.autograd.errors import (
    Checker,
    IndexAllocationError,
    InvalidShapeError,
    OutputAllocationError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdDtypeError,
    TokenIdNestingError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
)
from llm_from_scratch.autograd.gradient import RowSparseGradient
from llm_from_scratch.autograd.kernels import gather_rows_into
from llm_from_scratch.autograd.tape import Node, record
from llm_from_scratch.tensor.storage import (
    CONVERSION_ERRORS,
    INDEX_LIMIT,
    MAX_AXES,
    FloatArray,
    IndexArray,
    Shape,
    ShapeOverflowError,
    TensorError,
    checked_row_major_layout,
    checked_shape_and_count,
    is_masked_array,
    numpy_can_describe,
    plain_view,
)

_TRUSTED: Final = object()  # the key of the trusted constructor


@dataclass(frozen=True, slots=True)
class RowGradientRule:
    """How a row gather's table gradient departs from the plain sum of upstream rows.

    Attributes:
        padding_row: a row that receives no gradient (left out of the row-sparse gradient, so
            exactly zero), or None.
        scale_by_frequency: each row's sum is divided by the number of positions that selected
            it (PyTorch's ``scale_grad_by_freq``).
    """

    padding_row: int | None = None
    scale_by_frequency: bool = False

    @property
    def is_plain(self) -> bool:
        """True when the gradient is the plain sum (no padding row, no scaling)."""
        return self.padding_row is None and not self.scale_by_frequency


PLAIN_GRADIENT: Final = RowGradientRule()


@dataclass(frozen=True, slots=True)
class RowGatherPlan:
    """Validated facts for one row gather, built only by :func:`plan_from_validated_indices`
    (which the checked entries call); any other call raises ``TypeError``.

    Shape:
        ``indices``: ``[N]`` (read-only) with ``N = prod(index_shape)``; ``table_shape``:
        ``(V, d)``; :attr:`output_shape`: ``index_shape + (d,)``.
    """

    indices: IndexArray
    index_shape: Shape
    table_shape: tuple[int, int]
    gradient_rule: RowGradientRule
    key: InitVar[object] = None

    def __post_init__(self, key: object) -> None:
        if key is not _TRUSTED:
            raise TypeError("a row-gather plan is built only by the package's constructors")

    @property
    def output_shape(self) -> Shape:
        """``index_shape + (d,)``."""
        return (*self.index_shape, self.table_shape[1])

    @property
    def output_elements(self) -> int:
        """The output's element count, ``N * d``."""
        return int(self.indices.size) * self.table_shape[1]

    @property
    def has_plain_gradient(self) -> bool:
        """True when the table gradient is the plain scatter-add of the upstream rows."""
        return self.gradient_rule.is_plain


def plan_from_validated_indices(
    indices: IndexArray,
    index_shape: Shape,
    table_shape: tuple[int, int],
    rule: RowGradientRule = PLAIN_GRADIENT,
) -> RowGatherPlan:
    """The plan's trusted constructor (package-internal): the caller has checked the count,
    every index and the output layout, and none of it is repeated.

    Takes ownership of ``indices`` (it becomes read-only).
    """
    indices.flags.writeable = False
    return RowGatherPlan(indices, index_shape, table_shape, rule, _TRUSTED)


# The checked entries ---------------------------------------------------------------------------


def plan_of_flat_ids(
    ids: object,
    index_shape: object,
    table_shape: tuple[int, int],
    itemsize: int,
    checker: Checker,
    rule: RowGradientRule = PLAIN_GRADIENT,
) -> RowGatherPlan:
    """The plan of flat IDs and the shape they form (``Embedding.forward``, ``gather_rows``).

    Order: the index shape's layout; the container; the count; the output shape (all before
    any ID is read); an array of a non-integer dtype; the index buffer; the first non-integer
    or out-of-range ID in flat order, checked in that buffer.

    Raises:
        TokenShapeError, TokenIdContainerError, TokenCountMismatchError, TokenIdDtypeError,
            IndexAllocationError, TokenIdTypeError, TokenIdOutOfBoundsError: in this order,
            worded for ``checker``.
    """
    try:
        shape, expected = checked_shape_and_count(index_shape)
    except TensorError as error:
        if checker == "embedding":
            raise TokenShapeError("token-ID shape", index_shape, error) from error
        raise InvalidShapeError("gather index shape", index_shape, error) from error
    source, count = flat_source(ids, checker)
    if count != expected:
        raise TokenCountMismatchError(expected, count, checker)
    _check_output_shape(index_shape, shape, table_shape[1], itemsize, checker)
    return _checked_plan(source, expected, shape, table_shape, checker, rule)


def plan_of_ids(
    ids: object,
    table_shape: tuple[int, int],
    itemsize: int,
    rule: RowGradientRule = PLAIN_GRADIENT,
) -> RowGatherPlan:
    """The plan of an integer array or nested lists whose own shape is the token shape (the
    layer call, ``nn.functional.embedding``, the bags).

    Order: the container (a masked array; nesting deeper than ``MAX_AXES``); the output shape;
    room for a nest's flat IDs (for an object array, first room for its elements, which may be
    a stride-0 view of any logical size); a ragged nest; then as :func:`plan_of_flat_ids`.

    Raises:
        TokenIdContainerError, TokenShapeError, IndexAllocationError, TokenIdDtypeError,
            TokenIdTypeError, TokenIdOutOfBoundsError: in this order.
    """
    if isinstance(ids, np.ndarray):
        plain = ids if type(ids) is np.ndarray else plain_array(ids, "embedding")
        if plain.dtype.kind != "O":
            shape: Shape = plain.shape
            _check_output_shape(shape, shape, table_shape[1], itemsize, "embedding")
            return _checked_plan(plain, plain.size, shape, table_shape, "embedding", rule)
        _reserve_room(plain.size)
        ids = plain.tolist()  # an object array: its elements may be lists themselves
    shape = nest_shape(ids)
    count = prod(shape)
    _check_output_shape(shape, shape, table_shape[1], itemsize, "embedding")
    leaves = nest_leaves(ids, shape, count)
    return _checked_plan(leaves, count, shape, table_shape, "embedding", rule)


def _check_output_shape(
    index_shape: object, shape: Shape, width: int, itemsize: int, checker: Checker
) -> None:
    """Check the output shape ``shape + (d,)``: at most ``MAX_AXES`` axes, a row-major layout
    that fits, and, with no elements, a shape NumPy can describe. An output with elements whose
    bytes do not fit is no layout error: allocating it fails."""
    output_shape = (*shape, width)
    if len(output_shape) <= MAX_AXES and 0 < prod(output_shape) <= INDEX_LIMIT:
        return  # no suffix product exceeds a non-zero total that fits
    try:
        _, elements = checked_row_major_layout(output_shape)
        if elements == 0 and not numpy_can_describe(output_shape, itemsize):
            raise ShapeOverflowError(output_shape)
    except TensorError as error:
        if checker == "embedding":
            raise TokenShapeError("token-ID shape", index_shape, error) from error
        raise InvalidShapeError("row gather output shape", output_shape, error) from error


def _checked_plan(
    source: Source,
    count: int,
    shape: Shape,
    table_shape: tuple[int, int],
    checker: Checker,
    rule: RowGradientRule,
) -> RowGatherPlan:
    rows = table_shape[0]
    try:
        read = read_ids(source, count, rows)
    except MemoryError as error:  # the index buffer itself
        operation = f"{checker} index conversion"
        raise IndexAllocationError(operation, count, checker) from error
    if not isinstance(read, IdProblem):
        read.flags.writeable = False
        return RowGatherPlan(read, shape, table_shape, rule, _TRUSTED)
    if read.kind == "type":
        raise TokenIdTypeError(read.position, read.value, checker)
    if read.kind == "dtype":
        raise TokenIdDtypeError(None, None, checker, str(read.value))
    if read.kind == "count":
        raise TokenCountMismatchError(count, cast(int, read.value), checker)
    raise TokenIdOutOfBoundsError(read.position, cast(int, read.value), rows, checker)


# Reading IDs once ------------------------------------------------------------------------------
#
# Each value is read exactly once, converted into a new index buffer, and the bounds are checked
# on that very buffer, which the plan then owns: what was shown to be in range is what is used,
# whatever the caller's objects do between two reads.
#
# - A NumPy array of any subclass is read through ``plain_view``, never through an overridden
#   method; a masked array is refused (its mask marks missing values). An array whose dtype is
#   not an integer is refused before anything is converted: a non-empty one names position 0
#   and its first value, an empty one its dtype. An object array is read like a sequence.
# - A sequence's ``len()`` is read once, before any item; its items are then read once each, in
#   order, at most one past that length. A Python ``int`` is taken as it is, any other
#   ``numbers.Integral`` through one ``operator.index`` call.
# - Nested lists and tuples (the layer call) claim their shape by their first items, at most
#   ``MAX_AXES`` levels deep, before the whole nest is walked; a list or tuple subclass is read
#   as the items the base class holds.

_CHUNK: Final = 1 << 16  # items converted per block (bounds temporary memory)
_FEW_IDS: Final = 64
_EXACT_AS_INDEX: Final = frozenset(
    np.dtype(code) for code in np.typecodes["AllInteger"] if np.can_cast(code, np.intp)
)  # every native integer dtype whose values all fit an index (all but uint64 on 64 bits)
_END: Final = object()

Source: TypeAlias = "Sequence[object] | np.ndarray[Any, Any]"
"""IDs as they are read: a sequence of items, or a plain (non-subclass, unmasked) array."""


@dataclass(frozen=True, slots=True)
class IdProblem:
    """The first fault found while reading, in flat order.

    ``kind`` is ``"type"`` (a non-integer: ``value`` is it), ``"bounds"`` (outside ``[0,
    bound)``: ``value`` is the integer), ``"count"`` (a sequence that yielded another number of
    items than its length: ``value`` is how many it yielded, ``count + 1`` when it had more) or
    ``"dtype"`` (an empty array of a non-integer dtype: ``value`` is the dtype).
    """

    kind: Literal["type", "bounds", "count", "dtype"]
    position: int
    value: object


def flat_source(ids: object, checker: Checker) -> tuple[Source, int]:
    """A flat sequence or one-dimensional array, and how many values it holds (``len()``, read
    once), without reading a value.

    Raises:
        TokenIdContainerError: anything else, a masked array included.
    """
    if isinstance(ids, np.ndarray):
        plain = plain_array(ids, checker)
        if plain.ndim != 1:
            detail = f"expected a one-dimensional array, got {plain.ndim} axes"
            raise TokenIdContainerError(detail, checker=checker)
        return plain, int(plain.size)
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        detail = f"expected a sequence of integers, got {type(ids).__name__}"
        raise TokenIdContainerError(detail, checker=checker)
    try:
        return ids, len(ids)
    except CONVERSION_ERRORS as error:
        detail = f"the length of the sequence: {error}"
        raise TokenIdContainerError(detail, checker=checker) from None


def plain_array(ids: np.ndarray[Any, Any], checker: Checker) -> np.ndarray[Any, Any]:
    """The memory of an ID array as a base-class view.

    Raises:
        TokenIdContainerError: a masked array.
    """
    if is_masked_array(ids):
        detail = "a masked array has missing IDs; pass its filled data"
        raise TokenIdContainerError(detail, checker=checker)
    return plain_view(ids)


def read_ids(source: Source, count: int, bound: int) -> IndexArray | IdProblem:
    """Convert ``count`` values into a new index buffer, each read once, and check them there.

    Returns the buffer if every value is an integer in ``[0, bound)``, else the first problem in
    flat order (a non-integer dtype is found before any buffer is reserved).

    Raises:
        MemoryError: the index buffer cannot be reserved.
    """
    if isinstance(source, np.ndarray) and source.dtype.kind != "O":
        return _read_array(source, bound)
    if type(source) is list and set(map(type, source)) <= {int}:
        try:  # Python ints cannot change: NumPy may read them itself
            indices: IndexArray = np.array(source, dtype=np.intp)
        except OverflowError:
            pass  # an int beyond 64 bits: the item-by-item pass names its position
        else:
            return _first_out_of_bounds(indices, bound) or indices
    items = source.flat if isinstance(source, np.ndarray) else source
    return _read_items(iter(items), count, bound)


def _read_array(array: np.ndarray[Any, Any], bound: int) -> IndexArray | IdProblem:
    if array.dtype.kind not in "iu":
        if array.size == 0:
            return IdProblem("dtype", 0, array.dtype)
        return IdProblem("type", 0, array.flat[0].item())
    wide = array.dtype in _EXACT_AS_INDEX
    owned = _copied(array, np.dtype(np.intp) if wide else array.dtype)
    problem = _first_out_of_bounds(owned, bound)  # uint64: checked in its own dtype
    if problem is not None or wide:
        return problem or owned
    return owned.astype(np.intp)  # every value is below ``bound``, so the conversion is exact


def _copied(array: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """One read of ``array`` (any rank, any layout) into a new flat buffer, in row-major order."""
    try:
        return array.astype(dtype, order="C").reshape(-1)  # a plain ndarray's own method
    except ValueError as error:  # NumPy: the byte count does not fit a signed 64-bit size
        raise MemoryError(f"cannot reserve {array.size} indices") from error


def _first_out_of_bounds(buffer: np.ndarray[Any, Any], bound: int) -> IdProblem | None:
    if buffer.size <= _FEW_IDS:  # Python's min and max beat NumPy's call overhead here
        values = buffer.tolist()
        if not values or (min(values) >= 0 and max(values) < bound):
            return None
    else:  # as unsigned, negative indices wrap to huge values: one maximum checks both ends
        unsigned = buffer.view(np.uintp) if buffer.dtype == np.intp else buffer  # else uint64
        if int(unsigned.max()) < bound:
            return None
    position = int(np.flatnonzero((buffer < 0) | (buffer >= bound))[0])
    return IdProblem("bounds", position, int(buffer[position]))


def _read_items(items: Iterator[object], count: int, bound: int) -> IndexArray | IdProblem:
    try:
        indices: IndexArray = np.empty(count, dtype=np.intp)
    except ValueError as error:  # NumPy: the byte count does not fit a signed 64-bit size
        raise MemoryError(f"cannot reserve {count} indices") from error
    for start in range(0, count, _CHUNK):
        wanted = min(_CHUNK, count - start)
        block = list(islice(items, wanted))
        problem = _converted_block(block, indices[start : start + len(block)], start, bound)
        if problem is not None:
            return problem
        if len(block) < wanted:
            return IdProblem("count", start + len(block), start + len(block))
    if next(items, _END) is not _END:
        return IdProblem("count", count, count + 1)
    return indices


def _converted_block(
    block: list[object], out: IndexArray, offset: int, bound: int
) -> IdProblem | None:
    """Convert ``block`` into ``out`` (as long), each value read once, and check its bounds."""
    if set(map(type, block)) <= {int}:  # Python ints cannot change: NumPy may read them itself
        try:
            out[:] = cast("list[int]", block)
        except OverflowError:
            pass  # an int beyond 64 bits: the value-by-value pass below names its position
        else:
            problem = _first_out_of_bounds(out, bound)
            if problem is None:
                return None
            return IdProblem("bounds", offset + problem.position, problem.value)
    for position, value in enumerate(block):
        converted = _converted(value, offset + position, bound)
        if isinstance(converted, IdProblem):
            return converted
        out[position] = converted
    return None


def _converted(value: object, position: int, bound: int) -> int | IdProblem:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        return IdProblem("type", position, value)
    try:
        as_int = operator.index(value)
    except CONVERSION_ERRORS:
        return IdProblem("type", position, value)
    if not 0 <= as_int < bound:
        return IdProblem("bounds", position, as_int)
    return as_int


# Nested lists (the layer call) -------------------------------------------------------------------

_NESTS: Final = (list, tuple)


def nest_shape(ids: object) -> Shape:
    """The shape nested lists and tuples claim: each level's length, following first items, at
    most ``MAX_AXES`` levels deep (a single ID is shape ``()``). No ID is read.

    Raises:
        TokenIdContainerError: lists nested more than ``MAX_AXES`` deep (``limit`` is set),
            for example a list that contains itself.
    """
    shape: list[int] = []
    probe = ids
    while isinstance(probe, _NESTS):
        if len(shape) == MAX_AXES:
            detail = f"lists nested more than {MAX_AXES} deep"
            raise TokenIdNestingError(detail, limit=MAX_AXES)
        items = probe if type(probe) in _NESTS else _items_of(probe)
        shape.append(len(items))
        if not items:
            break
        probe = items[0]
    return tuple(shape)


def nest_leaves(ids: object, shape: Shape, count: int) -> list[object]:
    """The leaves of a nest that has exactly ``shape``, in row-major order (``count`` of them).

    Raises:
        IndexAllocationError: no room for ``count`` leaves.
        TokenIdContainerError: a ragged nest (the first irregular place in row-major order).
    """
    level: list[object] = [ids]
    try:
        if count > _CHUNK:
            level = [None] * count  # room for the leaves, before the nest is walked
            level = [ids]
        for extent in shape:
            if not set(map(type, level)) <= {list, tuple}:
                level = [_items_of(item) if isinstance(item, _NESTS) else item for item in level]
            nests = cast("list[Sequence[object]]", level)
            if set(map(type, nests)) <= {list, tuple} and set(map(len, nests)) <= {extent}:
                level = list(chain.from_iterable(level))  # type: ignore[arg-type]
            else:
                raise TokenIdContainerError(_ragged(ids, shape))
    except (MemoryError, OverflowError) as error:
        raise IndexAllocationError("embedding index conversion", count) from error
    for kind in set(map(type, level)):
        if issubclass(kind, _NESTS):
            raise TokenIdContainerError(_ragged(ids, shape))
    return level


def _reserve_room(count: int) -> None:
    """Check that ``count`` references fit in memory before an object array is turned into
    lists (its logical size may be far beyond its memory: a stride-0 view).

    Raises:
        IndexAllocationError: no room for ``count`` items.
    """
    if count <= _CHUNK:
        return
    try:
        room: list[None] | None = [None] * count
    except (MemoryError, OverflowError) as error:
        raise IndexAllocationError("embedding index conversion", count) from error
    del room


def _items_of(container: list[object] | tuple[object, ...]) -> Sequence[object]:
    """The items a list or tuple holds, read by the base class (a subclass's overrides of
    ``len``, indexing or iteration do not run)."""
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


# The kernel and its VJP ------------------------------------------------------------------------


def gather_rows_forward(table: Node, plan: RowGatherPlan) -> Node:
    """Copy table row ``indices[p]`` to output position ``p``; the one forward kernel.

    Shape:
        ``table``: ``[V, d]``; output: ``index_shape + (d,)``.

    Raises:
        ReleasedOperandError: the table reaches a released tape.
        OutputAllocationError: the output cannot be allocated (nothing is recorded).
    """

    def gathered() -> tuple[FloatArray, RowGatherPlan]:
        indices, width = plan.indices, plan.table_shape[1]
        try:
            if indices.size * width < COMPILED_KERNEL_MIN_VALUES:
                # mode="clip" skips NumPy's own bounds pass: the plan's indices were checked.
                output = np.take(table.array, indices, axis=0, mode="clip")
            else:
                output = np.empty((indices.size, width), dtype=table.array.dtype)
                gather_rows_into(output, table.array, indices)
        except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
            raise OutputAllocationError("gather_rows", plan.output_elements) from error
        return output.reshape((*plan.index_shape, width)), plan

    return record("gather_rows", (("table", table),), gathered, gather_rows_vjp)


def gather_rows_vjp(plan: RowGatherPlan, upstream: FloatArray) -> Sequence[RowSparseGradient]:
    """Scatter-add upstream rows into a row-sparse ``[V, d]`` table gradient.

    Rows no position selects are absent (exactly zero); repeated indices sum in flat order,
    each sum starting from ``+0.0``. With ``scale_by_frequency`` each row's sum is then divided
    by its use count; a padding row is left out.
    """
    rule = plan.gradient_rule
    flat_upstream = upstream.reshape(plan.indices.size, plan.table_shape[1])
    gradient = RowSparseGradient.from_scatter(
        plan.indices, flat_upstream, plan.table_shape, divide_by_counts=rule.scale_by_frequency
    )
    if rule.padding_row is not None:
        gradient = gradient.without_row(rule.padding_row)
    return (gradient,)
