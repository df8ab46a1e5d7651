"""The central-difference gradient probe (contract section 5), for any function of one parameter:
the loss runs on fresh leaves holding copies of the values, never on the caller's parameter."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np

from llm_from_scratch.autograd import TensorValue, no_grad
from llm_from_scratch.errors import OptionError
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.tensor.storage import FloatArray

DEFAULT_STEP: Final = 1e-6
DEFAULT_TOLERANCE: Final = 2e-6

Loss = Callable[[TensorValue], TensorValue]


@dataclass(frozen=True)
class GradientCheck:
    """The probe's result: both gradients and the worst coordinate.

    Attributes:
        analytic: the tape's gradient, shape of the parameter.
        numeric: the central differences, same shape.
        max_abs_error: the largest ``|analytic - numeric|``.
        worst_index: the flat index of that coordinate.
        tolerance: the absolute tolerance the probe used.
    """

    analytic: FloatArray
    numeric: FloatArray
    max_abs_error: float
    worst_index: int
    tolerance: float

    @property
    def passed(self) -> bool:
        """True when every coordinate agrees within :attr:`tolerance`."""
        return self.max_abs_error <= self.tolerance


def check_gradient(
    loss: Loss,
    parameter: TensorValue,
    step: float = DEFAULT_STEP,
    tolerance: float = DEFAULT_TOLERANCE,
) -> GradientCheck:
    """Compare the tape's gradient of ``loss`` with central differences ``(L(+h) - L(-h)) / 2h``.

    Args:
        loss: builds a scalar loss from a parameter leaf.
        parameter: the parameter whose values are probed (not modified).
        step: the perturbation ``h`` of each coordinate: a finite real number above zero
            (not a bool) whose double is finite, read once by ``float()``.
        tolerance: the largest absolute disagreement that passes: a finite real number, zero
            or above (not a bool), read once by ``float()``.

    Raises:
        OptionError: ``gradcheck.argument``, in this order: ``loss`` is not callable,
            ``parameter`` is no parameter leaf, a bad ``step``, a bad ``tolerance``; then a loss
            that is no scalar TensorValue, or a step that takes a value out of the finite range.

    Example:
        >>> w = TensorValue.parameter(Tensor((2,), [3.0, -1.0]))
        >>> check_gradient(lambda p: p.mul(p).sum(), w).passed
        True
    """
    if not callable(loss):
        raise _argument_error(f"the loss must be callable, got {type(loss).__name__}")
    if not isinstance(parameter, TensorValue) or parameter.kind != "parameter":
        kind = parameter.kind if isinstance(parameter, TensorValue) else type(parameter).__name__
        raise _argument_error(f"the probe needs a parameter leaf, got a {kind}")
    h = _real(step)
    if not (h > 0 and math.isfinite(2.0 * h)):
        detail = f"the step must be a real number above zero whose double is finite, got {step!r}"
        raise _argument_error(detail)
    limit = _real(tolerance)
    if not (limit >= 0 and math.isfinite(limit)):
        detail = f"the tolerance must be a finite real number, zero or above, got {tolerance!r}"
        raise _argument_error(detail)
    values = parameter.value_snapshot().numpy()
    analytic = _analytic(loss, values)
    numeric = _numeric(loss, values, h)
    errors = np.abs(analytic - numeric).reshape(-1)
    worst = int(np.argmax(errors)) if errors.size else 0
    largest = float(errors[worst]) if errors.size else 0.0
    return GradientCheck(analytic, numeric, largest, worst, limit)


def _numeric(loss: Loss, values: FloatArray, h: float) -> FloatArray:
    numeric = np.zeros(values.shape, dtype=np.float64)
    flat_values, flat_numeric = values.reshape(-1), numeric.reshape(-1)
    for index in range(flat_values.size):
        plus, minus = (np.array(flat_values, dtype=values.dtype) for _ in range(2))
        with np.errstate(over="ignore"):
            plus[index] += h
            minus[index] -= h
        if not (np.isfinite(plus[index]) and np.isfinite(minus[index])):
            where = f"the value at flat position {index}"
            raise _argument_error(f"the step {h!r} takes {where} out of the finite range")
        difference = _loss_value(loss, plus, values.shape) - _loss_value(loss, minus, values.shape)
        flat_numeric[index] = difference / (2.0 * h)
    return numeric


def _argument_error(detail: str) -> OptionError:
    return OptionError("gradcheck.argument", detail=detail)


def _real(value: object) -> float:
    """``float(value)`` (one read) for a real number that is not a bool, else NaN."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, ArithmeticError):
        return math.nan


def _analytic(loss: Loss, values: FloatArray) -> FloatArray:
    leaf = TensorValue.parameter(Tensor(values.shape, values, dtype=values.dtype))
    result = _scalar(loss(leaf))
    result.backward()
    gradient = leaf.gradient_snapshot()
    if gradient is None:
        raise _argument_error("the probed leaf has no gradient")
    return np.array(gradient.numpy(), dtype=np.float64)


def _loss_value(loss: Loss, flat: FloatArray, shape: tuple[int, ...]) -> float:
    leaf = TensorValue.parameter(Tensor(shape, flat, dtype=flat.dtype))
    with no_grad():
        return float(_scalar(loss(leaf)).numpy())


def _scalar(result: object) -> TensorValue:
    if not isinstance(result, TensorValue):
        raise _argument_error(f"the loss must return a TensorValue, got {type(result).__name__}")
    if result.shape != ():
        raise _argument_error(f"the loss must be a scalar, got shape {list(result.shape)}")
    return result
