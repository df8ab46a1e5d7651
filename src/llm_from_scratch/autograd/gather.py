"""The row gather (course chapter 16): one checked entry, one trusted plan, one kernel, one VJP.

Public boundaries (``TensorValue.gather_rows`` and ``Embedding.forward``) validate the caller's
IDs once with :func:`checked_row_gather_plan`, the same checks in the same order, each boundary
naming failures with its own error family (:class:`IdErrors`). It builds a
:class:`RowGatherPlan` through the package-internal trusted constructor
:func:`row_gather_plan_from_validated_indices`, which re-checks nothing; the boundary hands the
plan to :func:`~llm_from_scratch.autograd.value.gather_rows_with_plan`. The single kernel
:func:`gather_rows_forward` copies one table row per index; its VJP :func:`gather_rows_vjp`
scatter-adds upstream rows into a row-sparse table gradient.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal, cast

import numpy as np

from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.errors import (
    GatherIndexCountError,
    GatherIndexOutOfBoundsError,
    GatherIndexTypeError,
    IndexContainerError,
    InvalidShapeError,
    OutputAllocationError,
)
from llm_from_scratch.autograd.gradient import Gradient, RowSparseGradient
from llm_from_scratch.autograd.kernels import gather_rows_into
from llm_from_scratch.autograd.tape import Node, check_operands, record
from llm_from_scratch.errors import StructuredError
from llm_from_scratch.sealed import Sealed
from llm_from_scratch.tensor.storage import (
    FloatArray,
    IndexArray,
    Shape,
    ShapeOverflowError,
    TensorError,
    checked_row_major_layout,
    checked_shape,
    read_only_view,
)

# Validating caller IDs ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IdProblem:
    """The first ID, in flat order, that is not an integer row: its position and value."""

    kind: Literal["type", "bounds"]
    position: int
    value: object


class IdContainerError(StructuredError):
    """IDs that are not a flat sequence or a one-dimensional array; ``detail`` says why."""

    template = "{detail}"
    detail: str


class FlatIds:
    """A caller's flat IDs, normalized but not yet validated.

    Args:
        ids: a sequence of Python or NumPy integers, or a one-dimensional NumPy array.

    Raises:
        IdContainerError: anything else (each boundary maps it to its own error class).
    """

    __slots__ = ("_array", "_items")

    def __init__(self, ids: object) -> None:
        self._array: np.ndarray[Any, Any] | None = None
        self._items: Sequence[object] | None = None
        if isinstance(ids, np.ndarray):
            if ids.ndim != 1:
                raise IdContainerError(f"expected a one-dimensional array, got {ids.ndim} axes")
            if ids.dtype.kind == "O":
                self._items = ids.tolist()
            else:
                self._array = ids
        elif isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
            raise IdContainerError(f"expected a sequence of integers, got {type(ids).__name__}")
        else:
            self._items = ids  # not copied yet: a count mismatch must not read a single ID

    @property
    def count(self) -> int:
        """How many IDs there are."""
        return len(self._array) if self._array is not None else len(self._items or ())

    def first_problem(self, rows: int) -> IdProblem | None:
        """Scan once, in flat order, for the first non-integer or out-of-range ID.

        A sequence is copied first, so later changes to the caller's list cannot reach the
        index buffer (may raise ``MemoryError``).
        """
        if self._array is None:
            return self._first_item_problem(rows)
        return _first_array_problem(self._array, rows)

    def to_indices(self) -> IndexArray:
        """Convert validated IDs into a new index buffer (may raise ``MemoryError``)."""
        if self._array is not None:
            return self._array.astype(np.intp, copy=True)
        return np.array(self._items, dtype=np.intp)

    def _first_item_problem(self, rows: int) -> IdProblem | None:
        items = list(self._items or ())
        self._items = items
        if set(map(type, items)) <= {int}:
            try:
                as_array = np.array(items, dtype=np.int64)
            except OverflowError:
                pass  # a huge int: the item-by-item scan below names its position
            else:
                self._items, self._array = None, as_array
                return _first_array_problem(as_array, rows)
        for position, value in enumerate(items):
            problem = _item_problem(position, value, rows)
            if problem is not None:
                return problem
        return None


def _item_problem(position: int, value: object, rows: int) -> IdProblem | None:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        return IdProblem("type", position, value)
    as_int = int(value)
    if not 0 <= as_int < rows:
        return IdProblem("bounds", position, as_int)
    return None


def _first_array_problem(array: np.ndarray[Any, Any], rows: int) -> IdProblem | None:
    if array.size == 0:
        return None
    if array.dtype.kind not in "iu":
        return IdProblem("type", 0, array[0].item())
    low, high = int(array.min()), int(array.max())
    if low >= 0 and high < rows:
        return None
    position = int(np.flatnonzero((array < 0) | (array >= rows))[0])
    return IdProblem("bounds", position, int(array[position]))


# The plan ----------------------------------------------------------------------------------

_TRUSTED: Final = object()


@dataclass(frozen=True, eq=False)
class RowGatherPlan(
    Sealed, key=_TRUSTED, hint="a row-gather plan is built only by the package's constructors"
):
    """Validated facts for one row gather. Built only by
    :func:`row_gather_plan_from_validated_indices` (through :func:`checked_row_gather_plan`).

    Shape:
        ``indices``: ``[N]`` with ``N = prod(index_shape)``; ``table_shape``: ``(V, d)``;
        ``output_shape``: ``index_shape + (d,)``.
    """

    __slots__ = ("index_shape", "indices", "output_elements", "output_shape", "table_shape")
    indices: IndexArray
    index_shape: Shape
    table_shape: tuple[int, int]
    output_shape: Shape
    output_elements: int


def row_gather_plan_from_validated_indices(
    indices: IndexArray, index_shape: Shape, table_shape: tuple[int, int]
) -> RowGatherPlan:
    """The plan's trusted constructor (package-internal): the caller has checked the rank, the
    count and every index, and none of it is repeated.

    Takes ownership of ``indices`` (it becomes read-only).

    Raises:
        InvalidShapeError: the output shape ``index_shape + (d,)`` overflows a row-major layout.
    """
    output_shape = (*index_shape, table_shape[1])
    try:
        _, output_elements = checked_row_major_layout(output_shape)
    except TensorError as error:
        raise InvalidShapeError("row gather output shape", output_shape, error) from error
    return RowGatherPlan(
        read_only_view(indices),
        index_shape,
        table_shape,
        output_shape,
        output_elements,
        key=_TRUSTED,
    )


@dataclass(frozen=True, slots=True)
class IdErrors:
    """How one public boundary names the failure of each ID check (its own error family)."""

    shape: Callable[[object, TensorError], Exception]
    container: Callable[[str], Exception]
    count: Callable[[int, int], Exception]
    non_integer: Callable[[int, object], Exception]
    out_of_bounds: Callable[[int, int, int], Exception]
    allocation: Callable[[int], Exception]


def checked_row_gather_plan(
    ids: object, index_shape: object, table_shape: tuple[int, int], errors: IdErrors
) -> RowGatherPlan:
    """Check caller IDs once, in the contract's order, then build the plan through the trusted
    constructor.

    Order: the index shape's layout; the container; the count; the first non-integer or
    out-of-range ID in flat order; the conversion into an owned index buffer.

    Raises:
        The exception ``errors`` builds for the first failing check, as
        ``shape(index_shape, cause)``, ``container(detail)``, ``count(expected, actual)``,
        ``non_integer(position, value)``, ``out_of_bounds(position, id, rows)`` or
        ``allocation(elements)``.
    """
    try:
        shape = checked_shape(index_shape)
        _, expected = checked_row_major_layout(shape)
    except TensorError as error:
        raise errors.shape(index_shape, error) from error
    try:
        flat = FlatIds(ids)
    except IdContainerError as container:
        raise errors.container(container.detail) from None
    if flat.count != expected:
        raise errors.count(expected, flat.count)
    try:
        problem = flat.first_problem(table_shape[0])
        if problem is None:
            indices = flat.to_indices()
    except MemoryError as error:  # copying a long sequence, or the index buffer itself
        raise errors.allocation(expected) from error
    if problem is not None:
        if problem.kind == "type":
            raise errors.non_integer(problem.position, problem.value)
        raise errors.out_of_bounds(problem.position, cast(int, problem.value), table_shape[0])
    return row_gather_plan_from_validated_indices(indices, shape, table_shape)


GATHER_ID_ERRORS: Final = IdErrors(
    shape=partial(InvalidShapeError, "gather index shape"),
    container=IndexContainerError,
    count=GatherIndexCountError,
    non_integer=GatherIndexTypeError,
    out_of_bounds=GatherIndexOutOfBoundsError,
    allocation=partial(OutputAllocationError, "gather index conversion"),
)


# The kernel and its VJP --------------------------------------------------------------------


def gather_rows_forward(table: Node, plan: RowGatherPlan) -> Node:
    """Copy table row ``indices[p]`` to output position ``p``; the one forward kernel.

    Shape:
        ``table``: ``[V, d]``; output: ``index_shape + (d,)``.

    Raises:
        ReleasedOperandError: the table reaches a released tape.
        OutputAllocationError: the output cannot be allocated (nothing is recorded).
    """
    check_operands("gather_rows", (("table", table),))
    return record(
        "gather_rows",
        (("table", table),),
        partial(_gathered_rows, table, plan),
        plan,
        gather_rows_vjp,
    )


def _gathered_rows(table: Node, plan: RowGatherPlan) -> FloatArray:
    """A new array holding table row ``indices[p]`` at output position ``p``."""
    rows_out = plan.indices.size
    try:
        output = np.empty((rows_out, plan.table_shape[1]), dtype=table.array.dtype)
        shaped = output.reshape(plan.output_shape)
    except MemoryError as error:
        raise OutputAllocationError("gather_rows", plan.output_elements) from error
    except ValueError:  # a zero-element shape whose byte count NumPy cannot describe
        overflow = ShapeOverflowError(plan.output_shape)
        raise InvalidShapeError("row gather output shape", overflow.shape, overflow) from overflow
    if runs_compiled(plan.output_elements):
        gather_rows_into(output, table.array, plan.indices)
    else:
        # mode="clip" skips NumPy's own bounds pass (the plan's indices are valid).
        np.take(table.array, plan.indices, axis=0, out=output, mode="clip")
    return shaped


def gather_rows_vjp(plan: RowGatherPlan, upstream: FloatArray) -> Sequence[Gradient]:
    """Scatter-add upstream rows into a row-sparse ``[V, d]`` table gradient.

    Rows no position selects are absent (exactly zero); repeated indices sum in flat order.
    """
    flat_upstream = upstream.reshape(plan.indices.size, plan.table_shape[1])
    return (RowSparseGradient.from_scatter(plan.indices, flat_upstream, plan.table_shape),)
