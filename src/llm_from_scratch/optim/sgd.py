"""Plain stochastic gradient descent that updates only the rows a row-sparse gradient touched."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.optim.optimizer import NewArrays, Optimizer, States
from llm_from_scratch.optim.validation import checked_learning_rate
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import FloatArray


class SGD(Optimizer):
    """``value -= learning_rate * gradient`` for each parameter.

    A row-sparse gradient updates only its listed rows. A graph recorded before a step refuses
    to run backward (run the forward again). SGD keeps no state: its state dict holds ``step``.

    Args:
        parameters: named parameters or parameter leaves (a leaf is named by its position).
        learning_rate: a finite positive real number (not a ``bool``), read once.

    Raises:
        OptionError: the learning rate (checked first), then the parameters.

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

    row_rule = "sgd"

    @pytorch_keywords(params="parameters", lr="learning_rate")
    def __init__(
        self, parameters: Iterable[NamedParameter | TensorValue], learning_rate: float
    ) -> None:
        super().__init__("SGD", parameters, checked_learning_rate(learning_rate, optimizer="SGD"))

    def updated(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        with np.errstate(over="ignore", invalid="ignore"):
            return [("value", values - values.dtype.type(self.learning_rate) * gradient)]

    updated_rows = updated

    def row_constants(self, step: int) -> tuple[float, ...]:
        return (self.learning_rate,)
