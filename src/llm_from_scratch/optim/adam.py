"""Adam and AdamW: moment estimates of the gradient and its square, and a bias-corrected step."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.optim.optimizer import NewArrays, Optimizer, Setting, States, in_dtype
from llm_from_scratch.optim.validation import (
    checked_betas,
    checked_flag,
    checked_learning_rate,
    checked_non_negative,
)
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import FloatArray


class Adam(Optimizer):
    """Adam (``torch.optim.Adam``), or AdamW with ``decoupled=True`` (``torch.optim.AdamW``).

    **Dense gradients** follow PyTorch's update of every value. At step ``t`` with gradient
    ``g``::

        g     = g + weight_decay * value              (Adam, when weight_decay > 0)
        value = value * (1 - lr * weight_decay)       (AdamW)
        m     = lerp(m, g, 1 - beta1)
        v     = v * beta2 + (1 - beta2) * g * g
        value = value - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    **Row-sparse gradients** (an embedding table's) follow ``torch.optim.SparseAdam``'s *lazy*
    rule: only the listed rows change (an untouched row keeps its value, ``m`` and ``v``); weight
    decay applies to them only; the bias correction uses the step count; ``eps`` comes before the
    second moment's correction: ``value - lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m /
    (sqrt(v) + eps)``, with ``m + (g - m) * (1 - beta1)`` and ``v + (g * g - v) * (1 - beta2)``.
    A table whose stored gradient is dense gets the dense update.

    State: ``exp_avg`` (``m``) and ``exp_avg_sq`` (``v``), as PyTorch names them, and ``t``.

    Args:
        parameters: named parameters or parameter leaves (a leaf is named by its position).
        learning_rate: ``lr``, a finite step size above zero.
        betas: ``(beta1, beta2)``, each in ``[0, 1)``.
        eps: a finite number at least zero.
        weight_decay: a finite number at least zero.
        decoupled: AdamW's weight decay (scales the values) instead of Adam's (adds to ``g``).

    Raises:
        OptionError: a setting, in the order of the arguments above, then the parameters.

    Example:
        >>> from llm_from_scratch.autograd import TensorValue
        >>> from llm_from_scratch.tensor import Tensor
        >>> weight = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))  # a bare leaf: named "0"
        >>> optimizer = Adam([weight], learning_rate=0.1)
        >>> (weight * weight).sum().backward()
        >>> optimizer.step()  # the first step moves every value by about lr
        >>> [round(v, 6) for v in weight.numpy().tolist()], sorted(optimizer.state_dict())
        ([0.9, 1.9], ['0.exp_avg', '0.exp_avg_sq', 'step'])
    """

    state_names = ("exp_avg", "exp_avg_sq")
    row_rule = "adam"
    betas = Setting()
    eps = Setting()
    weight_decay = Setting()
    decoupled = Setting()

    @pytorch_keywords(params="parameters", lr="learning_rate")
    def __init__(
        self,
        parameters: Iterable[NamedParameter | TensorValue],
        learning_rate: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled: bool = False,
    ) -> None:
        kind = "AdamW" if isinstance(decoupled, bool | np.bool_) and decoupled else "Adam"
        rate = checked_learning_rate(learning_rate, optimizer=kind)
        settings = {
            "betas": checked_betas(kind, betas),
            "eps": checked_non_negative(kind, "eps", eps),
            "weight_decay": checked_non_negative(kind, "weight_decay", weight_decay),
            "decoupled": checked_flag(kind, "decoupled", decoupled),
        }
        super().__init__(kind, parameters, rate, settings)

    def updated(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """torch.optim.Adam's or AdamW's update."""
        dtype = values.dtype.type
        lr, (beta1, beta2), decay = self.learning_rate, self.betas, self.weight_decay
        g, m, v = gradient, states["exp_avg"], states["exp_avg_sq"]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if decay != 0 and not self.decoupled:
                g = g + dtype(decay) * values
            if decay != 0 and self.decoupled:
                values = values * dtype(1 - lr * decay)
            weight = 1 - beta1  # torch's lerp, whose form depends on the weight
            small = weight < 0.5
            m = m + dtype(weight) * (g - m) if small else g - (g - m) * dtype(1 - weight)
            v = v * dtype(beta2) + (dtype(1 - beta2) * g) * g
            step_size = lr / (1 - beta1**step)
            denominator = np.sqrt(v) / dtype((1 - beta2**step) ** 0.5) + dtype(self.eps)
            new_values = values + (dtype(-step_size) * m) / denominator
        return [("value", new_values), ("exp_avg", m), ("exp_avg_sq", v)]

    def updated_rows(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """torch.optim.SparseAdam's lazy update, term by term as the compiled kernel does it."""
        beta1_weight, beta2_weight, eps, negative_step_size, decay, value_decay, coupled = in_dtype(
            values.dtype, *self.row_constants(step)
        )
        g, m, v = gradient, states["exp_avg"], states["exp_avg_sq"]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if coupled:
                g = g + decay * values
            m_update = (g - m) * beta1_weight
            v_update = (g * g - v) * beta2_weight
            ratio = (m_update + m) / (np.sqrt(v_update + v) + eps)
            new_values = values * value_decay + negative_step_size * ratio
        return [("value", new_values), ("exp_avg", m + m_update), ("exp_avg_sq", v + v_update)]

    def row_constants(self, step: int) -> tuple[float, ...]:
        """``1 - beta1``, ``1 - beta2``, ``eps``, ``-step_size``, the weight decay, the
        decoupled decay factor, and 1 when the decay adds to the gradient (else 0)."""
        lr, (beta1, beta2), decay = self.learning_rate, self.betas, self.weight_decay
        step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        value_decay = 1 - lr * decay if self.decoupled else 1.0
        coupled = float(decay != 0 and not self.decoupled)
        return 1 - beta1, 1 - beta2, self.eps, -step_size, decay, value_decay, coupled


SparseAdam = Adam
"""``torch.optim.SparseAdam`` is :class:`Adam`: on a row-sparse gradient its update is lazy."""


class AdamW(Adam):
    """AdamW (``torch.optim.AdamW``): :class:`Adam` with ``decoupled=True``; the weight decay
    scales the values (``value * (1 - lr * weight_decay)``), by default PyTorch's ``0.01``."""

    @pytorch_keywords(params="parameters", lr="learning_rate")
    def __init__(
        self,
        parameters: Iterable[NamedParameter | TensorValue],
        learning_rate: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        super().__init__(parameters, learning_rate, betas, eps, weight_decay, decoupled=True)
