"""Adagrad: a per-value step size that shrinks with the sum of the squared gradients."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.optim.optimizer import NewArrays, Optimizer, Setting, States, in_dtype
from llm_from_scratch.optim.validation import checked_learning_rate, checked_non_negative
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import FloatArray


class Adagrad(Optimizer):
    """``torch.optim.Adagrad`` without learning-rate decay or weight decay.

    For each value, with gradient ``g``::

        sum   = sum + g * g
        value = value + (-learning_rate * g) / (sqrt(sum) + eps)

    ``sum`` (PyTorch's name) starts at ``initial_accumulator``. A row-sparse gradient updates
    only its rows, bit for bit the dense update when ``sqrt(sum) + eps > 0``: a zero gradient
    leaves a row as it was. With ``eps`` and ``initial_accumulator`` both zero, the dense update
    of a zero gradient over a zero sum is ``0 / 0`` (NaN, as in PyTorch), and is refused.

    Args:
        parameters: named parameters or parameter leaves (a leaf is named by its position).
        learning_rate: a finite step size above zero.
        eps: a finite number at least zero, added to the square root of the sum.
        initial_accumulator: the starting ``sum``, finite and at least zero.

    Raises:
        OptionError: a setting, in the order of the arguments above, then the parameters.

    Example:
        >>> from llm_from_scratch.nn import Embedding, NamedParameter
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = NamedParameter.from_tensor("token_embedding.weight", Tensor((3, 1), [1, 2, 3]))
        >>> layer = Embedding.from_parameter(table)
        >>> optimizer = Adagrad(layer.parameters(), learning_rate=0.5)
        >>> layer([2, 2]).sum().backward()  # the gradient of row 2 is 2.0
        >>> optimizer.step()
        >>> values = layer.table.tensor.numpy().ravel().tolist()
        >>> [round(v, 9) for v in values]  # row 2: 3 - 0.5 * 2 / sqrt(4)
        [1.0, 2.0, 2.5]
        >>> optimizer.state_dict()["token_embedding.weight.sum"].ravel().tolist()
        [0.0, 0.0, 4.0]
    """

    state_names = ("sum",)
    row_rule = "adagrad"
    eps = Setting()
    initial_accumulator = Setting()

    @pytorch_keywords(
        params="parameters", lr="learning_rate", initial_accumulator_value="initial_accumulator"
    )
    def __init__(
        self,
        parameters: Iterable[NamedParameter | TensorValue],
        learning_rate: float,
        eps: float = 1e-10,
        initial_accumulator: float = 0,
    ) -> None:
        rate = checked_learning_rate(learning_rate, optimizer="Adagrad")
        settings = {
            "eps": checked_non_negative("Adagrad", "eps", eps),
            "initial_accumulator": checked_non_negative(
                "Adagrad", "initial_accumulator", initial_accumulator
            ),
        }
        super().__init__("Adagrad", parameters, rate, settings)

    def initial_state(self, values: FloatArray) -> dict[str, FloatArray]:
        # zeros come from calloc: a large table's pages are committed when first touched
        if self.initial_accumulator == 0:
            return super().initial_state(values)
        return {"sum": np.full(values.shape, self.initial_accumulator, dtype=values.dtype)}

    def updated(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        negative_rate, eps = in_dtype(values.dtype, *self.row_constants(step))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            new_sum = states["sum"] + gradient * gradient
            new_values = values + (negative_rate * gradient) / (np.sqrt(new_sum) + eps)
        return [("value", new_values), ("sum", new_sum)]

    def row_constants(self, step: int) -> tuple[float, ...]:
        return -self.learning_rate, self.eps
