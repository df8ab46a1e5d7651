"""The embedding bag: one tape operation that reduces the rows of each bag of IDs to one row by
``sum``, ``mean`` or ``max`` (PyTorch's ``embedding_bag``; the sums and their order are the
contract's section 9.6). Entries whose ID is the padding row are skipped. Large bags run
compiled kernels (:mod:`~llm_from_scratch.autograd.bag_kernels`) with the same sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import numpy as np

from llm_from_scratch.autograd.bag_kernels import (
    bag_maxima_into,
    bag_row_sums,
    bag_sums_into,
    max_row_sums,
    weight_gradients_into,
)
from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.gradient import Gradient, RowSparseGradient, scatter_sums
from llm_from_scratch.autograd.tape import Node, output_allocation_error, record
from llm_from_scratch.autograd.value import TensorValue, node_of, value_of
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, read_only_view

BagMode: TypeAlias = Literal["sum", "mean", "max"]
BAG_MODES: Final[tuple[BagMode, ...]] = ("sum", "mean", "max")


@dataclass(frozen=True, slots=True, eq=False, init=False)
class BagPlan:
    """Checked facts of one embedding bag (built only by :func:`bag_plan_from_validated`) and
    its entries: the positions whose ID is not the padding row.

    Shape:
        ``indices``: ``[N]``; ``bag_starts``: ``[B + 1]``, from ``0`` to ``N``, never
        decreasing; ``table_shape``: ``(V, d)``; ``entry_rows``, ``entry_bags``: ``[M]``, each
        entry's row and bag; ``entry_starts``: ``[B + 1]``; ``entry_positions``: ``[M]``, each
        entry's flat position, or None when every position is one. Output ``[B, d]``.
    """

    indices: IndexArray
    bag_starts: IndexArray
    table_shape: tuple[int, int]
    mode: BagMode
    padding_row: int | None
    entry_rows: IndexArray
    entry_starts: IndexArray
    entry_bags: IndexArray
    entry_positions: IndexArray | None

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a bag plan is built only by bag_plan_from_validated")

    @property
    def bags(self) -> int:
        """``B``, the number of bags."""
        return int(self.bag_starts.shape[0]) - 1

    def entry_weights(self, weights: FloatArray | None) -> FloatArray | None:
        """The per-sample weights ``[N]`` of the entries only."""
        if weights is None or self.entry_positions is None:
            return weights
        return weights[self.entry_positions]


def bag_plan_from_validated(
    indices: IndexArray,
    bag_starts: IndexArray,
    table_shape: tuple[int, int],
    mode: BagMode,
    padding_row: int | None,
) -> BagPlan:
    """The trusted constructor: the caller checked every field (see :class:`BagPlan`); takes
    the arrays over."""
    entry_rows, entry_starts, entry_positions = indices, bag_starts, None
    if padding_row is not None:
        kept = indices != padding_row
        if not bool(kept.all()):
            entry_positions = np.flatnonzero(kept).astype(np.intp, copy=False)
            entry_rows = indices[entry_positions]
            entry_starts = np.concatenate(([0], np.cumsum(kept, dtype=np.intp)))[bag_starts]
    sizes = np.diff(entry_starts)
    entry_bags = np.repeat(np.arange(sizes.shape[0], dtype=np.intp), sizes)
    plan = object.__new__(BagPlan)
    fields = {
        "indices": read_only_view(indices),
        "bag_starts": read_only_view(bag_starts),
        "table_shape": table_shape,
        "mode": mode,
        "padding_row": padding_row,
        "entry_rows": read_only_view(entry_rows),
        "entry_starts": read_only_view(entry_starts),
        "entry_bags": read_only_view(entry_bags),
        "entry_positions": None if entry_positions is None else read_only_view(entry_positions),
    }
    for name, value in fields.items():
        object.__setattr__(plan, name, value)
    return plan


@dataclass(frozen=True, slots=True)
class BagSaved:
    """What the bag's VJP needs: ``sizes`` (``mean``), ``max_rows``, the row of each output
    coordinate, ``-1`` in an empty bag (``max``), the entries' weights, and the table and the
    weights' shape when the weights need a gradient."""

    plan: BagPlan
    sizes: IndexArray | None
    max_rows: IndexArray | None
    weights: FloatArray | None
    table: FloatArray | None
    table_gradient: bool
    weights_shape: tuple[int, ...] | None


def bag_forward(table: Node, plan: BagPlan, weights: Node | None) -> Node:
    """Reduce each bag's rows of ``table`` (``[V, d]``) to one output row (``[B, d]``)."""
    operands = [("table", table)]
    if weights is not None:
        operands.append(("per_sample_weights", weights))

    def compute() -> tuple[FloatArray, object]:
        entry_weights = None if weights is None else plan.entry_weights(weights.array.reshape(-1))
        output = _allocated(plan, table.array.dtype)
        sizes, max_rows = _reduced_into(output, table.array, plan, entry_weights)
        weights_need = weights is not None and weights.requires_grad
        saved = BagSaved(
            plan,
            sizes,
            max_rows,
            entry_weights,
            table.array if weights_need else None,
            table.requires_grad,
            None if weights is None or not weights_need else weights.array.shape,
        )
        return output, saved

    return record("embedding_bag", operands, compute, bag_vjp)


def embedding_bag_with_plan(
    table: TensorValue, plan: BagPlan, weights: TensorValue | None
) -> TensorValue:
    """The embedding bag of ``table`` by a checked plan (``weights``: the IDs' shape)."""
    weights_node = None if weights is None else node_of(weights)
    return value_of(bag_forward(node_of(table), plan, weights_node))


def bag_vjp(saved: BagSaved, upstream: FloatArray) -> Sequence[Gradient | None]:
    """The table's row-sparse gradient and, with weights, theirs (zero for a padding entry)."""
    table = _table_gradient(saved, upstream) if saved.table_gradient else None
    if saved.weights is None:
        return (table,)
    return table, _weights_gradient(saved, upstream)


def _allocated(plan: BagPlan, dtype: np.dtype[Any]) -> FloatArray:
    shape = (plan.bags, plan.table_shape[1])
    try:
        return np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
        raise output_allocation_error("embedding_bag", shape[0] * shape[1]) from error


def _reduced_into(
    output: FloatArray, table: FloatArray, plan: BagPlan, weights: FloatArray | None
) -> tuple[IndexArray | None, IndexArray | None]:
    """Fill ``output``; return the bag sizes (``mean``) and the maximum rows (``max``)."""
    compiled = runs_compiled(plan.entry_rows.size * plan.table_shape[1])
    rows, starts = plan.entry_rows, plan.entry_starts
    if plan.mode == "max":
        if compiled:
            return None, bag_maxima_into(output, table, rows, starts)
        return None, _maxima_by_rounds(output, table, plan)
    if compiled:
        bag_sums_into(output, table, rows, starts, weights)
    else:
        taken = np.take(table, rows, axis=0)
        if weights is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                taken *= weights.reshape(-1, 1)
        output[...] = 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            np.add.at(output, plan.entry_bags, taken)  # unbuffered: each bag adds in order
    if plan.mode != "mean":
        return None, None
    sizes = np.diff(starts)
    with np.errstate(over="ignore", invalid="ignore"):
        np.divide(output, np.maximum(sizes, 1).reshape(-1, 1).astype(output.dtype), out=output)
    return sizes, None


def _maxima_by_rounds(output: FloatArray, table: FloatArray, plan: BagPlan) -> IndexArray:
    """Round ``k`` compares the ``k``-th entry of every bag: each bag sees them in flat order."""
    output[...] = 0.0
    max_rows = np.full(output.shape, -1, dtype=np.intp)
    starts = plan.entry_starts[:-1]
    lengths = np.diff(plan.entry_starts)
    for entry in range(int(lengths.max(initial=0))):
        bags = np.flatnonzero(lengths > entry)
        rows = plan.entry_rows[starts[bags] + entry]
        candidates = table[rows]
        current = output[bags]
        chosen = max_rows[bags]
        wins = (chosen < 0) | (candidates > current)
        output[bags] = np.where(wins, candidates, current)
        max_rows[bags] = np.where(wins, rows.reshape(-1, 1), chosen)
    return max_rows


def entry_upstream(saved: BagSaved, upstream: FloatArray) -> FloatArray:
    """What each entry of bag ``b`` receives before any weight: ``upstream[b]`` (``mean``:
    ``/ size[b]``)."""
    if saved.sizes is None:
        return upstream
    return upstream / np.maximum(saved.sizes, 1).reshape(-1, 1).astype(upstream.dtype)


def _table_gradient(saved: BagSaved, upstream: FloatArray) -> RowSparseGradient:
    plan = saved.plan
    if saved.max_rows is not None:
        return _max_gradient(saved.max_rows, upstream, plan.table_shape)
    if plan.entry_rows.size == 0:
        return RowSparseGradient.empty(plan.table_shape, upstream.dtype)
    per_bag = entry_upstream(saved, upstream)
    rows, bags, weights = plan.entry_rows, plan.entry_bags, saved.weights
    if runs_compiled(rows.size * plan.table_shape[1]):
        listed, values, counts = bag_row_sums(rows, per_bag, bags, weights, plan.table_shape[0])
    else:
        terms = per_bag[bags]
        if weights is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                terms *= weights.reshape(-1, 1)
        listed, values, counts = scatter_sums(rows, terms)
    # A row that copies one term is finite when the upstream is, unless a weight scaled it.
    summed = np.flatnonzero(counts > 1).astype(np.intp, copy=False) if weights is None else None
    return RowSparseGradient(listed, values, plan.table_shape, summed)


def _max_gradient(
    max_rows: IndexArray, upstream: FloatArray, table_shape: tuple[int, int]
) -> RowSparseGradient:
    if runs_compiled(max_rows.size):
        rows, values = max_row_sums(max_rows, upstream, table_shape[0])
    else:
        flat_rows = max_rows.reshape(-1)
        coordinates = np.flatnonzero(flat_rows >= 0)
        rows, slots = np.unique(flat_rows[coordinates], return_inverse=True)
        values = np.zeros((rows.size, table_shape[1]), dtype=upstream.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            np.add.at(
                values,
                (slots.reshape(-1), coordinates % table_shape[1]),
                upstream.reshape(-1)[coordinates],
            )
    return RowSparseGradient(rows.astype(np.intp, copy=False), values, table_shape)


def _weights_gradient(saved: BagSaved, upstream: FloatArray) -> FloatArray | None:
    if saved.table is None or saved.weights_shape is None:
        return None  # the weights are a constant
    plan = saved.plan
    per_entry = np.empty(plan.entry_rows.shape, dtype=upstream.dtype)
    if runs_compiled(plan.entry_rows.size * plan.table_shape[1]):
        weight_gradients_into(per_entry, upstream, saved.table, plan.entry_rows, plan.entry_bags)
    else:  # feature by feature, left to right, as the compiled kernel adds
        per_entry[...] = 0.0
        per_bag, rows = upstream[plan.entry_bags], saved.table[plan.entry_rows]
        with np.errstate(over="ignore", invalid="ignore"):
            for feature in range(plan.table_shape[1]):
                per_entry += per_bag[:, feature] * rows[:, feature]
    if plan.entry_positions is None:
        return per_entry.reshape(saved.weights_shape)
    gradient = np.zeros(plan.indices.shape, dtype=upstream.dtype)  # a padding entry's is 0
    gradient[plan.entry_positions] = per_entry
    return gradient.reshape(saved.weights_shape)
