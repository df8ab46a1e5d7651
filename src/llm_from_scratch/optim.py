"""Plain stochastic gradient descent that updates only the rows a row-sparse gradient touched."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from llm_from_scratch.autograd import RowSparseGradient, TensorValue
from llm_from_scratch.autograd.gradient import IndexArray, first_non_finite
from llm_from_scratch.autograd.tape import Node, write_parameter_values
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.tensor.storage import FloatArray


class OptimizerError(ValueError):
    """A bad learning rate, a value that is no parameter, or a step that would leave NaN/inf."""


class SGD:
    """``value -= learning_rate * gradient`` for each parameter.

    A row-sparse gradient updates only its listed rows; untouched rows are never written. Each
    step marks the parameter's values as changed, so a graph recorded before the step refuses
    to run backward (run the forward again).

    Args:
        parameters: named parameters or parameter leaves.
        learning_rate: a finite positive step size.

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
        if not (
            isinstance(learning_rate, float | int)
            and math.isfinite(learning_rate)
            and learning_rate > 0
        ):
            raise OptimizerError(
                f"learning rate must be finite and positive, got {learning_rate!r}"
            )
        leaves = [p.tensor if isinstance(p, NamedParameter) else p for p in parameters]
        for leaf in leaves:
            if not isinstance(leaf, TensorValue) or leaf.kind != "parameter":
                raise OptimizerError(f"SGD updates parameter leaves, got {leaf!r}")
        self._leaves = tuple(leaves)
        self.learning_rate = float(learning_rate)

    def step(self) -> None:
        """Apply one update to every parameter; if any new value is not finite, change nothing."""
        planned = [self._planned_update(leaf._node) for leaf in self._leaves]
        for node, rows, values in planned:
            write_parameter_values(node, rows, values)

    def zero_grad(self) -> None:
        """Reset every parameter's gradient."""
        for leaf in self._leaves:
            leaf.zero_grad()

    def _planned_update(self, node: Node) -> tuple[Node, IndexArray | None, FloatArray]:
        gradient = node.gradient
        if gradient is None:
            raise OptimizerError("SGD updates parameter leaves, which always hold a gradient")
        rate = node.array.dtype.type(self.learning_rate)
        with np.errstate(over="ignore", invalid="ignore"):
            if isinstance(gradient, RowSparseGradient):
                rows: IndexArray | None = gradient.rows
                values = node.array[gradient.rows] - rate * gradient.values
            else:
                rows, values = None, node.array - rate * gradient
        if first_non_finite(values) is not None:
            raise OptimizerError("the SGD step would make a parameter value non-finite")
        return node, rows, values
