"""The row gather (course chapter 16): one checked entry, one trusted plan, one kernel, one VJP.

Public boundaries (``TensorValue.gather_rows``, ``Embedding.forward`` and the layer call) validate
the caller's IDs once with :func:`checked_row_gather_plan` (or, for an array whose own shape is
the index shape, :func:`checked_row_gather_plan_of_array`): the same checks in the same order,
each boundary naming failures with its own error family (:class:`IdErrors`). The IDs are read
once into a new index buffer (:mod:`~llm_from_scratch.autograd.ids`) and checked there; that
very buffer goes into a :class:`RowGatherPlan` through the package-internal trusted constructor
:func:`row_gather_plan_from_validated_indices`, which re-checks nothing; the boundary hands the
plan to :func:`~llm_from_scratch.autograd.value.gather_rows_with_plan`. The single kernel
:func:`gather_rows_forward` copies one table row per index; its VJP :func:`gather_rows_vjp`
scatter-adds upstream rows into a row-sparse table gradient. A plan carries a
:class:`RowGradientRule` (a padding row that receives no gradient, or sums divided by how often
each row was selected): it is part of the operation's saved record, so every consumer of the VJP
gets the table gradient from :func:`table_gradient` with the rule applied.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, cast

import numpy as np

from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.errors import (
    GatherIndexCountError,
    GatherIndexDtypeError,
    GatherIndexOutOfBoundsError,
    GatherIndexTypeError,
    IndexContainerError,
    InvalidShapeError,
    OutputAllocationError,
)
from llm_from_scratch.autograd.gradient import Gradient, RowSparseGradient
from llm_from_scratch.autograd.ids import FlatIds, IdContainerError, IdProblem
from llm_from_scratch.autograd.kernels import gather_rows_into
from llm_from_scratch.autograd.tape import Node, check_operands, record
from llm_from_scratch.sealed import Sealed
from llm_from_scratch.tensor.storage import (
    FloatArray,
    IndexArray,
    Shape,
    ShapeOverflowError,
    TensorError,
    checked_row_major_layout,
    checked_shape_and_count,
    numpy_can_describe,
    read_only_view,
)

# The plan ----------------------------------------------------------------------------------

_TRUSTED: Final = object()


@dataclass(frozen=True, slots=True)
class RowGradientRule:
    """How a row gather's table gradient departs from the plain sum of upstream rows.

    Attributes:
        padding_row: a row that receives no gradient: it is left out of the row-sparse
            gradient (so exactly zero), or None.
        scale_by_frequency: each row's sum is divided by the number of positions that
            selected it (PyTorch's ``scale_grad_by_freq``).
    """

    padding_row: int | None = None
    scale_by_frequency: bool = False

    @property
    def is_plain(self) -> bool:
        """True when the gradient is the plain sum (no padding row, no scaling)."""
        return self.padding_row is None and not self.scale_by_frequency


PLAIN_GRADIENT: Final = RowGradientRule()


@dataclass(frozen=True, eq=False)
class RowGatherPlan(
    Sealed, key=_TRUSTED, hint="a row-gather plan is built only by the package's constructors"
):
    """Validated facts for one row gather. Built only by
    :func:`row_gather_plan_from_validated_indices` (through :func:`checked_row_gather_plan`)
    and :func:`with_gradient_rule`.

    Shape:
        ``indices``: ``[N]`` with ``N = prod(index_shape)``; ``table_shape``: ``(V, d)``;
        ``output_shape``: ``index_shape + (d,)``.
    """

    __slots__ = (
        "gradient_rule",
        "index_shape",
        "indices",
        "output_elements",
        "output_shape",
        "table_shape",
    )
    indices: IndexArray
    index_shape: Shape
    table_shape: tuple[int, int]
    output_shape: Shape
    output_elements: int
    gradient_rule: RowGradientRule

    @property
    def has_plain_gradient(self) -> bool:
        """True when the table gradient is the plain scatter-add of the upstream rows."""
        return self.gradient_rule.is_plain


def row_gather_plan_from_validated_indices(
    indices: IndexArray, index_shape: Shape, table_shape: tuple[int, int]
) -> RowGatherPlan:
    """The plan's trusted constructor (package-internal): the caller has checked the rank, the
    count, every index and the output layout (:func:`checked_output_layout`), and none of it is
    repeated. The plan's gradient is the plain sum.

    Takes ownership of ``indices`` (it becomes read-only).
    """
    output_shape = (*index_shape, table_shape[1])
    return RowGatherPlan(
        read_only_view(indices),
        index_shape,
        table_shape,
        output_shape,
        math.prod(output_shape),
        PLAIN_GRADIENT,
        key=_TRUSTED,
    )


def with_gradient_rule(plan: RowGatherPlan, rule: RowGradientRule) -> RowGatherPlan:
    """``plan`` whose VJP applies ``rule`` (package-internal: a padding row the caller has
    checked against the table's rows)."""
    if rule == plan.gradient_rule:
        return plan
    return RowGatherPlan(
        plan.indices,
        plan.index_shape,
        plan.table_shape,
        plan.output_shape,
        plan.output_elements,
        rule,
        key=_TRUSTED,
    )


@dataclass(frozen=True, slots=True)
class IdErrors:
    """How one public boundary names the failure of each ID check (its own error family)."""

    shape: Callable[[object, TensorError], Exception]
    output_shape: Callable[[object, Shape, TensorError], Exception]
    container: Callable[[str], Exception]
    count: Callable[[int, int], Exception]
    non_integer: Callable[[int, object], Exception]
    non_integer_dtype: Callable[[str], Exception]
    out_of_bounds: Callable[[int, int, int], Exception]
    allocation: Callable[[int], Exception]


def checked_output_layout(
    index_shape: Shape, table_shape: tuple[int, int], itemsize: int
) -> tuple[Shape, int]:
    """The output shape ``index_shape + (d,)`` and its element count, checked before any ID.

    An output with elements whose bytes do not fit is no layout error: allocating it fails.

    Raises:
        TensorError: the output shape has more than ``MAX_AXES`` axes, overflows the
            row-major layout, or has no elements and NumPy cannot describe it
            (:class:`ShapeOverflowError`).
    """
    output_shape = (*index_shape, table_shape[1])
    _, elements = checked_row_major_layout(output_shape)
    if elements == 0 and not numpy_can_describe(output_shape, itemsize):
        raise ShapeOverflowError(output_shape)
    return output_shape, elements


def checked_row_gather_plan(
    ids: object,
    index_shape: object,
    table_shape: tuple[int, int],
    itemsize: int,
    errors: IdErrors,
) -> RowGatherPlan:
    """Check caller IDs once, in the contract's order, then build the plan through the trusted
    constructor.

    Order: the index shape's layout; the container; the count; the output shape's layout (all
    before any ID is read); an array of a non-integer dtype; the owned index buffer; the first
    non-integer or out-of-range ID in flat order, checked in that buffer.

    Args:
        ids: flat IDs (a sequence or a one-dimensional array).
        index_shape: the caller's shape for them.
        table_shape: ``(V, d)``.
        itemsize: the table's bytes per value (the output's dtype).
        errors: how this boundary names each failure.

    Raises:
        The exception ``errors`` builds for the first failing check, as
        ``shape(index_shape, cause)``, ``container(detail)``, ``count(expected, actual)``,
        ``output_shape(index_shape, output_shape, cause)``, ``non_integer(position, value)``,
        ``non_integer_dtype(dtype)``, ``allocation(elements)`` or
        ``out_of_bounds(position, id, rows)``.
    """
    shape, expected = _checked_index_shape(index_shape, errors)
    try:
        flat = FlatIds(ids)
    except IdContainerError as container:
        raise errors.container(container.detail) from None
    return _checked_plan(flat, index_shape, shape, expected, table_shape, itemsize, errors)


def checked_row_gather_plan_of_array(
    ids: np.ndarray[Any, Any], table_shape: tuple[int, int], itemsize: int, errors: IdErrors
) -> RowGatherPlan:
    """As :func:`checked_row_gather_plan` for an array of any rank whose own shape is the index
    shape (the container comes first: it defines the shape)."""
    try:
        flat = FlatIds.of_array(ids)
    except IdContainerError as container:
        raise errors.container(container.detail) from None
    shape, expected = _checked_index_shape(flat.shape, errors)
    return _checked_plan(flat, flat.shape, shape, expected, table_shape, itemsize, errors)


def _checked_index_shape(index_shape: object, errors: IdErrors) -> tuple[Shape, int]:
    try:
        shape, expected = checked_shape_and_count(index_shape)
    except TensorError as error:
        raise errors.shape(index_shape, error) from error
    return shape, expected


def _checked_plan(
    flat: FlatIds,
    index_shape: object,
    shape: Shape,
    expected: int,
    table_shape: tuple[int, int],
    itemsize: int,
    errors: IdErrors,
) -> RowGatherPlan:
    if flat.count != expected:
        raise errors.count(expected, flat.count)
    try:
        checked_output_layout(shape, table_shape, itemsize)
    except TensorError as error:
        raise errors.output_shape(index_shape, (*shape, table_shape[1]), error) from error
    try:
        read = flat.read(table_shape[0])
    except MemoryError as error:  # the index buffer itself
        raise errors.allocation(expected) from error
    if isinstance(read, IdProblem):
        raise _id_error(read, expected, table_shape[0], errors)
    return row_gather_plan_from_validated_indices(read, shape, table_shape)


def _id_error(problem: IdProblem, expected: int, rows: int, errors: IdErrors) -> Exception:
    if problem.kind == "type":
        return errors.non_integer(problem.position, problem.value)
    if problem.kind == "dtype":
        return errors.non_integer_dtype(str(problem.value))
    if problem.kind == "count":
        return errors.count(expected, cast(int, problem.value))
    return errors.out_of_bounds(problem.position, cast(int, problem.value), rows)


def _gather_output_shape_error(
    index_shape: object, output_shape: Shape, cause: TensorError
) -> Exception:
    return InvalidShapeError("row gather output shape", output_shape, cause)


GATHER_ID_ERRORS: Final = IdErrors(
    shape=partial(InvalidShapeError, "gather index shape"),
    output_shape=_gather_output_shape_error,
    container=IndexContainerError,
    count=GatherIndexCountError,
    non_integer=GatherIndexTypeError,
    non_integer_dtype=partial(GatherIndexDtypeError, None, None),
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
    except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
        raise OutputAllocationError("gather_rows", plan.output_elements) from error
    shaped = output.reshape(plan.output_shape)  # the plan's output layout was checked
    if runs_compiled(plan.output_elements):
        gather_rows_into(output, table.array, plan.indices)
    else:
        # mode="clip" skips NumPy's own bounds pass: the plan's own indices were checked.
        np.take(table.array, plan.indices, axis=0, out=output, mode="clip")
    return shaped


def gather_rows_vjp(plan: RowGatherPlan, upstream: FloatArray) -> Sequence[Gradient]:
    """Scatter-add upstream rows into a row-sparse ``[V, d]`` table gradient.

    Rows no position selects are absent (exactly zero); repeated indices sum in flat order;
    the plan's :class:`RowGradientRule` applies (see :func:`table_gradient`).
    """
    flat_upstream = upstream.reshape(plan.indices.size, plan.table_shape[1])
    return (table_gradient(plan, flat_upstream),)


def table_gradient(plan: RowGatherPlan, flat_upstream: FloatArray) -> RowSparseGradient:
    """The row-sparse table gradient of one gather, from its ``[N, d]`` upstream rows.

    Every consumer of a row gather's VJP gets the gradient here, so the plan's rule holds for
    all of them: with ``scale_by_frequency`` each row's flat-order sum is divided by its use
    count; the padding row is then left out.
    """
    rule = plan.gradient_rule
    gradient = RowSparseGradient.from_scatter(
        plan.indices, flat_upstream, plan.table_shape, divide_by_counts=rule.scale_by_frequency
    )
    if rule.padding_row is not None:
        gradient = gradient.without_row(rule.padding_row)
    return gradient
