"""Plain stochastic gradient descent that updates only the rows a row-sparse gradient touched."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from llm_from_scratch.autograd import RowSparseGradient, TensorValue
from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.optim.kernels import sgd_rows_apply, sgd_rows_stay_finite
from llm_from_scratch.optim.validation import OptimizerError as OptimizerError
from llm_from_scratch.optim.validation import checked_learning_rate
from llm_from_scratch.tensor.storage import FloatArray


class SGD:
    """``value -= learning_rate * gradient`` for each parameter.

    A row-sparse gradient updates only its listed rows; untouched rows are never written. Each
    step marks the parameter's values as changed, so a graph recorded before the step refuses
    to run backward (run the forward again).

    Args:
        parameters: named parameters or parameter leaves.
        learning_rate: a finite positive step size: any real number but a bool (a NumPy
            scalar included), read once (see :func:`checked_learning_rate`).

    Example:
        >>> from llm_from_scratch.nn import Embedding, SplitMix64
        >>> layer = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
        >>> before = layer.table.tensor.value_snapshot().numpy()
        >>> layer([[2, 1, 2]]).sum().backward()
        >>> SGD(layer.parameters(), learning_rate=0.5).step()
        >>> after = layer.table.tensor.numpy()
        >>> bool((after[0] == before[0]).all()), bool((after[2] == before[2] - 1.0).all())
        (True, True)
    """

    def __init__(
        self, parameters: Iterable[NamedParameter | TensorValue], learning_rate: float
    ) -> None:
        rate = checked_learning_rate(learning_rate)
        if not isinstance(parameters, Iterable) or isinstance(parameters, NamedParameter):
            raise OptimizerError(
                f"SGD needs an iterable of parameters, got {type(parameters).__name__}"
            )
        leaves = [p.tensor if isinstance(p, NamedParameter) else p for p in parameters]
        for leaf in leaves:
            if not isinstance(leaf, TensorValue) or leaf.kind != "parameter":
                raise OptimizerError(f"SGD updates parameter leaves, got {leaf!r}")
        self._leaves = tuple(leaves)
        self.learning_rate = rate

    def step(self) -> None:
        """Apply one update to every parameter; if any new value is not finite, change nothing.

        The step is atomic with respect to backward passes and ``zero_grad`` on other threads:
        it reads each gradient and writes each parameter while no gradient of these parameters
        is stored or reset.
        """
        update_leaves_in_place(self._leaves, self._planned_updates)

    def zero_grad(self) -> None:
        """Reset every parameter's gradient."""
        for leaf in self._leaves:
            leaf.zero_grad()

    def _planned_updates(self) -> list[Callable[[FloatArray], None]]:
        return [self._planned_update(leaf) for leaf in self._leaves]

    def _planned_update(self, leaf: TensorValue) -> Callable[[FloatArray], None]:
        """Check that the step keeps every value finite; return the in-place write."""
        table = leaf.numpy()
        rate = table.dtype.type(self.learning_rate)
        sparse = leaf.sparse_gradient
        if sparse is not None:
            if runs_compiled(sparse.values.size):
                return _compiled_row_update(table, sparse, rate)
            return _row_update(table, sparse, rate)
        gradient = leaf.gradient
        if gradient is None:
            raise OptimizerError("SGD updates parameter leaves, which always hold a gradient")
        with np.errstate(over="ignore", invalid="ignore"):
            values = table - rate * gradient.numpy()
        _raise_if_non_finite(values)

        def write_all(array: FloatArray) -> None:
            array[...] = values

        return write_all


def _row_update(
    table: FloatArray, gradient: RowSparseGradient, rate: np.floating[Any]
) -> Callable[[FloatArray], None]:
    rows = gradient.rows
    with np.errstate(over="ignore", invalid="ignore"):
        values = table[rows] - rate * gradient.values
    _raise_if_non_finite(values)

    def write_rows(array: FloatArray) -> None:
        array[rows] = values

    return write_rows


def _compiled_row_update(
    table: FloatArray, gradient: RowSparseGradient, rate: np.floating[Any]
) -> Callable[[FloatArray], None]:
    if not sgd_rows_stay_finite(table, gradient.rows, gradient.values, rate):
        raise OptimizerError("the SGD step would make a parameter value non-finite")

    def write_rows(array: FloatArray) -> None:
        sgd_rows_apply(array, gradient.rows, gradient.values, rate)

    return write_rows


def _raise_if_non_finite(values: FloatArray) -> None:
    if first_non_finite(values) is not None:
        raise OptimizerError("the SGD step would make a parameter value non-finite")
