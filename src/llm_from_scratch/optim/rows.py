"""A row-sparse gradient as the optimizers' row updates read it: stored, or deferred unsummed.

Both read the same way: row ``rows[slot]`` sums ``upstream[order[e]]`` for ``e`` in
``starts[slot]:starts[slot + 1]``, from ``+0.0``, in the tape's scatter order. A stored gradient
(:class:`~llm_from_scratch.autograd.RowSparseGradient`) is one upstream vector per row, never
``-0.0``, so adding it to ``+0.0`` gives it back bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_from_scratch.autograd import RowSparseGradient
from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.optim.fused import DeferredRowGradient
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@dataclass(frozen=True, slots=True)
class RowGroups:
    """What a compiled row update reads (see the module docstring).

    Shape:
        ``rows``: ``[k]``; ``upstream``: ``[n, d]`` (C-contiguous); ``starts``: ``[k + 1]``;
        ``order``: ``[n]``.
    """

    rows: IndexArray
    upstream: FloatArray
    starts: IndexArray
    order: IndexArray


@dataclass(frozen=True, slots=True)
class RowGradient:
    """A row-sparse gradient, stored or deferred, for one optimizer step."""

    source: RowSparseGradient | DeferredRowGradient

    @property
    def compiled(self) -> bool:
        """True when the update runs a compiled kernel."""
        source = self.source
        if isinstance(source, DeferredRowGradient):
            return source.runs_compiled
        return runs_compiled(source.values.size)

    def groups(self) -> RowGroups:
        """The rows and their upstream groups, for a compiled kernel."""
        source = self.source
        if isinstance(source, DeferredRowGradient) and not source.sums_by_position:
            rows, starts, order = source.row_groups()
            return RowGroups(rows, source.upstream, starts, order)
        if isinstance(source, DeferredRowGradient):  # summed first, front to back
            rows, values = source.position_sums()
        else:
            rows, values = source.rows, np.ascontiguousarray(source.values)
        slots = np.arange(rows.size + 1, dtype=np.intp)
        return RowGroups(rows, values, slots, slots[:-1])

    def summed(self) -> tuple[IndexArray, FloatArray]:
        """Sorted unique rows and their summed gradients (a deferred gradient is summed now,
        raising the tape's error for a sum that is not finite)."""
        source = self.source
        if isinstance(source, DeferredRowGradient):
            source = source.materialized()
        return source.rows, source.values
