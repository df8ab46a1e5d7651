"""A table gradient before its scatter, for optimizers that fuse their update.

A backward pass that defers a VJP (see
:func:`~llm_from_scratch.autograd.value.backward_with_deferred_row_gradients`) hands the
consumer the IDs and the upstream rows instead of the summed row-sparse gradient, so that an
optimizer can sum each row and update it in one pass without storing the gradient. Two VJPs
are deferred (:func:`deferrable`): a row gather whose gradient is the plain scatter-add (no
padding row, no division by frequency), and a ``sum`` or ``mean`` embedding bag without
per-sample weights, whose entries all receive their bag's upstream row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_from_scratch.autograd.bag import BagSaved, entry_upstream
from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.errors import NonFiniteGradientError
from llm_from_scratch.autograd.gather import RowGatherPlan
from llm_from_scratch.autograd.gradient import RowSparseGradient, first_non_finite
from llm_from_scratch.autograd.kernels import row_groups
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@dataclass(frozen=True, slots=True)
class DeferredRowGradient:
    """The gradient ``g[indices[p]] += upstream[sources[p]]`` of a ``[V, d]`` table, not yet
    summed (``sources`` None: ``upstream[p]``).

    Attributes:
        operation: the deferred operation's name (``gather_rows``, ``embedding_bag``), for
            error messages.
        indices: the validated flat IDs, read-only, shape ``[N]``.
        upstream: the upstream rows, C-contiguous: ``[N, d]`` for a gather, ``[B, d]`` for a
            bag. They have passed the tape's finiteness checks, except when they are the seed
            of a pass whose root is this (compiled-size) gather: then the consumer's kernel
            must count every non-finite row sum, and the pass checks the seed if anything
            fails.
        shape: the table's shape ``(V, d)``.
        sources: the upstream row of each position (a bag's entries: their bag), or None.
    """

    operation: str
    indices: IndexArray
    upstream: FloatArray
    shape: tuple[int, int]
    sources: IndexArray | None = None

    @property
    def runs_compiled(self) -> bool:
        """True when summing this gradient runs a compiled kernel (many terms)."""
        return runs_compiled(self.indices.size * self.shape[1])

    def row_groups(self) -> tuple[IndexArray, IndexArray, IndexArray]:
        """Sorted unique rows, group starts and, for each group in order, the upstream rows
        it sums (see :func:`~llm_from_scratch.autograd.kernels.row_groups`)."""
        rows, starts, order = row_groups(self.indices, self.shape[0])
        if self.sources is not None:
            order = self.sources[order]
        return rows, starts, order

    def materialized(self) -> RowSparseGradient:
        """The row-sparse gradient the VJP would have stored, checked like the tape checks it.

        Raises:
            NonFiniteGradientError: a summed row is not finite.
        """
        terms = self.upstream if self.sources is None else self.upstream[self.sources]
        gradient = RowSparseGradient.from_scatter(self.indices, terms, self.shape)
        found = first_non_finite(gradient)
        if found is not None:
            raise NonFiniteGradientError(self.operation, found[0], found[1])
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
    if not isinstance(saved, BagSaved):
        raise TypeError(f"no deferred gradient for {type(saved).__name__}")
    plan = saved.plan
    per_bag = np.ascontiguousarray(entry_upstream(saved, upstream))
    return DeferredRowGradient(
        "embedding_bag", plan.entry_rows, per_bag, plan.table_shape, plan.entry_bags
    )
