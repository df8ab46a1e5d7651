"""The fused step: one backward pass whose table gradients go straight into an optimizer update.

A parameter reached only through one :func:`deferrable` operation (a plain row gather, or a
``sum``/``mean`` bag without weights), whose stored gradient is empty, does not get that VJP run:
the optimizer gets the IDs and the upstream rows (a :class:`DeferredRowGradient`) and sums and
updates each row in one pass. To other threads the commit is one backward, step and ``zero_grad``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from llm_from_scratch.autograd import GraphRetention, TensorValue
from llm_from_scratch.autograd.bag import BagSaved, entry_upstream
from llm_from_scratch.autograd.gather import RowGatherPlan, counts_non_finite_upstream
from llm_from_scratch.autograd.gradient import Gradient, RowSparseGradient, add_gradients
from llm_from_scratch.autograd.tape import (
    Node,
    Operation,
    Step,
    backward,
    raise_if_non_finite,
    zero_gradient,
)
from llm_from_scratch.autograd.threads import Write, write_parameters
from llm_from_scratch.autograd.value import (
    converted_seed,
    node_of,
    raise_if_non_finite_seed,
    unit_seed,
)
from llm_from_scratch.errors import TapeError
from llm_from_scratch.tensor.storage import FloatArray, IndexArray

RowGradient: TypeAlias = "RowSparseGradient | DeferredRowGradient"
StepGradient: TypeAlias = "FloatArray | RowGradient"
Finish: TypeAlias = Callable[[list["StepGradient | None"]], Sequence[Write]]
"""The optimizer's planner: one gradient per parameter (None when not reached), one write each."""


@dataclass(frozen=True, slots=True)
class DeferredRowGradient:
    """The gradient ``g[indices[p]] += upstream[sources[p]]`` (``sources`` None: ``upstream[p]``)
    of a ``[V, d]`` table by ``gather_rows`` or ``embedding_bag``, not yet summed; checked finite
    unless it is the seed of a pass whose root is this gather (the kernel counts non-finite sums).

    Shape:
        ``indices``: ``[N]``, validated and read-only; ``upstream``: ``[N, d]`` (a gather) or
        ``[B, d]`` (a bag), C-contiguous; ``shape``: ``(V, d)``; ``sources``: ``[N]``.
    """

    operation: str
    indices: IndexArray
    upstream: FloatArray
    shape: tuple[int, int]
    sources: IndexArray | None = None

    def materialized(self) -> RowSparseGradient:
        """The row-sparse gradient the VJP would have stored, checked as the tape checks it."""
        terms = self.upstream if self.sources is None else self.upstream[self.sources]
        gradient = RowSparseGradient.from_scatter(self.indices, terms, self.shape)
        raise_if_non_finite(self.operation, gradient)
        return gradient


def deferrable(saved: object) -> bool:
    """True when the VJP that saved ``saved`` may be deferred: a row gather with the plain
    gradient rule, or a ``sum`` or ``mean`` bag without per-sample weights."""
    if isinstance(saved, RowGatherPlan):
        return saved.has_plain_gradient
    return (
        isinstance(saved, BagSaved)
        and saved.max_rows is None
        and saved.weights is None
        and saved.table_gradient
    )


def deferred_gradient(saved: object, upstream: FloatArray) -> DeferredRowGradient:
    """The table gradient of a :func:`deferrable` VJP, from its upstream, not yet summed."""
    if isinstance(saved, RowGatherPlan):
        flat = upstream.reshape(saved.indices.size, saved.table_shape[1])
        return DeferredRowGradient(
            "gather_rows", saved.indices, np.ascontiguousarray(flat), saved.table_shape
        )
    assert isinstance(saved, BagSaved)  # deferrable() chose it
    plan = saved.plan
    per_bag = np.ascontiguousarray(entry_upstream(saved, upstream))
    return DeferredRowGradient(
        "embedding_bag", plan.entry_rows, per_bag, plan.table_shape, plan.entry_bags
    )


def fused_backward_step(
    output: TensorValue, seed: object, retention: object, leaves: Sequence[Node], finish: Finish
) -> None:
    """Reverse mode from ``output`` fused with an in-place update of the parameter ``leaves``,
    raising what ``backward_with_seed`` raises in its order, then what ``finish`` and its writes
    raise (having changed nothing). The seed of a large plain gather is checked finite only
    when the step fails (its kernel counts non-finite sums), and then first."""
    checked = unit_seed(output) if seed is None else converted_seed(output, seed)
    root = node_of(output)
    counted = counts_non_finite_upstream(root)
    if not counted:
        raise_if_non_finite_seed(checked)
    try:
        if not isinstance(retention, GraphRetention):
            raise TapeError("tape.retention-type", retention=retention)
        backward(root, checked, retention, FusedStep(leaves, finish))
    except Exception:
        if counted:
            raise_if_non_finite_seed(checked)
        raise


class FusedStep:
    """The tape's :class:`~llm_from_scratch.autograd.tape.PassConsumer` of a fused step."""

    def __init__(self, leaves: Sequence[Node], finish: Finish) -> None:
        self.leaves = leaves
        self._finish = finish
        self._positions = {id(leaf): position for position, leaf in enumerate(leaves)}
        self._uses: dict[int, tuple[Operation, int]] = {}

    def deferred(self, steps: Sequence[Step]) -> dict[int, FloatArray | None]:
        """The operations whose VJP the pass defers: each leaf's only use, if it is one
        deferrable operation of no other parent and the leaf's stored gradient is empty (read
        without the lock: :meth:`commit` looks again)."""
        uses: dict[int, list[Step]] = {}
        for node, operation in steps:
            for parent in operation.parents:
                if id(parent) in self._positions:
                    uses.setdefault(id(parent), []).append((node, operation))
        for leaf in self.leaves:
            found = uses.get(id(leaf), [])
            if len(found) != 1 or not _holds_no_rows(leaf):
                continue
            node, operation = found[0]
            if len(operation.parents) == 1 and deferrable(operation.saved):
                self._uses[id(node)] = (operation, self._positions[id(leaf)])
        return dict.fromkeys(self._uses)

    def commit(
        self, updates: list[tuple[Node, Gradient]], deferred: dict[int, FloatArray | None]
    ) -> list[tuple[Node, Gradient]]:
        """Hand the optimizer one gradient per leaf, run its writes, and return the gradients
        to store: zero for every leaf, the pass's for every other parameter (the caller holds
        the locks)."""
        given: list[StepGradient | None] = [None] * len(self.leaves)
        late: list[tuple[Node, Gradient]] = []
        for node_id, (operation, position) in self._uses.items():
            upstream = deferred[node_id]
            if upstream is None:
                continue
            leaf = self.leaves[position]
            if _holds_no_rows(leaf):
                given[position] = deferred_gradient(operation.saved, upstream)
                continue
            # A concurrent pass filled the store since this one began: run the VJP now.
            raise_if_non_finite(operation.name, upstream)  # a root's seed is not checked yet
            (gradient,) = operation.vjp(operation.saved, upstream)
            if gradient is not None:
                raise_if_non_finite(operation.name, gradient)
                stored = leaf.gradient
                late.append((leaf, gradient if stored is None else _added(stored, gradient)))
        others: list[tuple[Node, Gradient]] = []
        for node, gradient in [*updates, *late]:
            at = self._positions.get(id(node))
            if at is None:
                others.append((node, gradient))
            else:
                given[at] = gradient
        write_parameters(self.leaves, self._finish(given))
        return [*((leaf, zero_gradient(leaf.array)) for leaf in self.leaves), *others]


def _added(stored: Gradient, gradient: Gradient) -> Gradient:
    total = add_gradients(stored, gradient)
    raise_if_non_finite("accumulated parameter", total)
    return total


def _holds_no_rows(leaf: Node) -> bool:
    stored = leaf.gradient
    return isinstance(stored, RowSparseGradient) and stored.lists_no_rows()
