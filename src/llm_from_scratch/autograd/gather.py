"""The row gather (course chapter 16): one trusted plan, one kernel, one VJP.

A :class:`RowGatherPlan` owns an index buffer whose bounds were checked on that very buffer
(:func:`~llm_from_scratch.autograd.ids.plan_of_ids` reads every lookup's IDs into one): what was
checked is what the kernel :func:`gather_rows_forward` gathers. Its VJP :func:`gather_rows_vjp`
scatter-adds the upstream rows into a row-sparse table gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.gradient import RowSparseGradient
from llm_from_scratch.autograd.kernels import gather_rows_into
from llm_from_scratch.autograd.tape import Node, output_allocation_error, record
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, Shape


@dataclass(frozen=True, slots=True)
class RowGradientRule:
    """How a row gather's table gradient departs from the plain sum of upstream rows.

    Attributes:
        padding_row: a row that receives no gradient (left out, so exactly zero), or None.
        scale_by_frequency: each row's sum is divided by the number of positions that selected
            it (PyTorch's ``scale_grad_by_freq``).
    """

    padding_row: int | None = None
    scale_by_frequency: bool = False


PLAIN_GRADIENT: Final = RowGradientRule()


@dataclass(frozen=True, slots=True, init=False)
class RowGatherPlan:
    """Checked facts for one row gather, built only by :func:`plan_from_validated_indices`
    (the ID reader calls it); any other call raises ``TypeError``.

    Shape:
        ``indices``: ``[N]`` (read-only), ``N = prod(index_shape)``; ``table_shape``:
        ``(V, d)``; :attr:`output_shape`: ``index_shape + (d,)``.
    """

    indices: IndexArray
    index_shape: Shape
    table_shape: tuple[int, int]
    gradient_rule: RowGradientRule

    def __init__(self, *args: object, **kwargs: object) -> None:
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
        return self.gradient_rule == PLAIN_GRADIENT


def plan_from_validated_indices(
    indices: IndexArray,
    index_shape: Shape,
    table_shape: tuple[int, int],
    rule: RowGradientRule = PLAIN_GRADIENT,
) -> RowGatherPlan:
    """The trusted constructor: the caller checked every index and the output layout; takes
    ``indices`` over (it becomes read-only)."""
    indices.flags.writeable = False
    plan = object.__new__(RowGatherPlan)  # the fields set as the dataclass sets them
    object.__setattr__(plan, "indices", indices)
    object.__setattr__(plan, "index_shape", index_shape)
    object.__setattr__(plan, "table_shape", table_shape)
    object.__setattr__(plan, "gradient_rule", rule)
    return plan


# The kernel and its VJP ------------------------------------------------------------------------

take_rows: Final = np.ndarray.take
"""NumPy's row copy for small gathers, called as the array method (``np.take`` adds a Python
wrapper, a third of a small lookup's kernel time)."""


def gather_rows_forward(table: Node, plan: RowGatherPlan) -> Node:
    """Copy table row ``indices[p]`` to output position ``p`` (``[V, d]`` to
    ``index_shape + (d,)``); no memory is ``output.allocation``, nothing recorded."""

    def gathered() -> tuple[FloatArray, RowGatherPlan]:
        indices, width = plan.indices, plan.table_shape[1]
        try:
            if not runs_compiled(indices.size * width):
                # mode="clip" skips NumPy's own bounds pass: the plan's indices were checked.
                output = take_rows(table.array, indices, axis=0, mode="clip")
            else:
                output = np.empty((indices.size, width), dtype=table.array.dtype)
                gather_rows_into(output, table.array, indices)
        except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
            raise output_allocation_error("gather_rows", plan.output_elements) from error
        return output.reshape((*plan.index_shape, width)), plan

    return record("gather_rows", (("table", table),), gathered, gather_rows_vjp)


def counts_non_finite_upstream(node: Node) -> bool:
    """True when ``node`` is a large plain row gather, whose VJP counts non-finite upstream."""
    operation = node.operation
    if operation is None or not isinstance(operation.saved, RowGatherPlan):
        return False
    plan = operation.saved
    return plan.has_plain_gradient and runs_compiled(plan.output_elements)


def gather_rows_vjp(plan: RowGatherPlan, upstream: FloatArray) -> Sequence[RowSparseGradient]:
    """Scatter-add upstream rows into a row-sparse ``[V, d]`` table gradient, by the plan's
    :class:`RowGradientRule`."""
    rule = plan.gradient_rule
    flat_upstream = upstream.reshape(plan.indices.size, plan.table_shape[1])
    if rule == PLAIN_GRADIENT and runs_compiled(flat_upstream.size):
        return (RowSparseGradient.summed_when_read(plan.indices, flat_upstream, plan.table_shape),)
    gradient = RowSparseGradient.from_scatter(
        plan.indices, flat_upstream, plan.table_shape, divide_by_counts=rule.scale_by_frequency
    )
    if rule.padding_row is not None:
        gradient = gradient.without_row(rule.padding_row)
    return (gradient,)
