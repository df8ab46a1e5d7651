"""A row gather's table gradient before its scatter, for optimizers that fuse their update.

A backward pass that defers a row gather's VJP (see
:func:`~llm_from_scratch.autograd.value.backward_with_deferred_row_gradients`) hands the
consumer the gathered IDs and the upstream rows instead of the summed row-sparse gradient, so
that an optimizer can sum each row and update it in one pass without storing the gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.errors import NonFiniteGradientError
from llm_from_scratch.autograd.gradient import RowSparseGradient, first_non_finite
from llm_from_scratch.autograd.kernels import row_groups
from llm_from_scratch.tensor.storage import FloatArray, IndexArray


@dataclass(frozen=True, slots=True)
class DeferredRowGradient:
    """The gradient ``g[indices[p]] += upstream[p]`` of a ``[V, d]`` table, not yet summed.

    Attributes:
        operation: the deferred operation's name (``gather_rows``), for error messages.
        indices: the validated flat IDs, read-only, shape ``[N]``.
        upstream: the upstream gradient of the gather, C-contiguous, shape ``[N, d]``. It has
            passed the tape's finiteness checks, except when it is the seed of a pass whose
            root is this (compiled-size) gather: then the consumer's kernel must count every
            non-finite row sum, and the pass checks the seed if anything fails.
        shape: the table's shape ``(V, d)``.
    """

    operation: str
    indices: IndexArray
    upstream: FloatArray
    shape: tuple[int, int]

    @property
    def runs_compiled(self) -> bool:
        """True when summing this gradient runs a compiled kernel (a large upstream)."""
        return runs_compiled(self.upstream.size)

    def row_groups(self) -> tuple[IndexArray, IndexArray, IndexArray]:
        """Sorted unique rows, group starts and grouped positions (see
        :func:`~llm_from_scratch.autograd.kernels.row_groups`)."""
        return row_groups(self.indices, self.shape[0])

    def materialized(self) -> RowSparseGradient:
        """The row-sparse gradient the VJP would have stored, checked like the tape checks it.

        Raises:
            NonFiniteGradientError: a summed row is not finite.
        """
        gradient = RowSparseGradient.from_scatter(self.indices, self.upstream, self.shape)
        found = first_non_finite(gradient)
        if found is not None:
            raise NonFiniteGradientError(self.operation, found[0], found[1])
        return gradient
