"""Checks every optimizer shares: its hyperparameters, each read once at construction.

A real number is a Python or NumPy integer or float, a ``Fraction``, or any other
``numbers.Real``; ``bool`` is not a number here. Each real hyperparameter is converted once, by
``float()``, and the result is what the optimizer uses. Each check raises
:class:`HyperparameterTypeError` or :class:`HyperparameterValueError` (both an
:class:`OptimizerError`) naming the optimizer and the argument.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Final

import numpy as np

from llm_from_scratch.optim.errors import HyperparameterTypeError, HyperparameterValueError
from llm_from_scratch.optim.errors import OptimizerError as OptimizerError

POSITIVE: Final = "finite and positive"
NON_NEGATIVE: Final = "finite and at least zero"
UNIT_INTERVAL: Final = "in [0, 1)"


def checked_learning_rate(learning_rate: object, *, optimizer: str = "optimizer") -> float:
    """``learning_rate`` as a float if it is a finite positive real number.

    Any real number but a bool is accepted: a Python ``int``, ``float`` or ``Fraction``, a
    NumPy scalar such as ``np.float32(0.1)`` or ``np.int64(1)``. It is converted once, by
    ``float()``; the result is what the optimizer uses. Every optimizer checks its learning
    rate here, naming itself in ``optimizer``.

    Raises:
        HyperparameterTypeError: a bool or a value that is not a real number.
        HyperparameterValueError: one ``float()`` cannot convert (``10**400``), or a result
            that is not finite and positive.

    Example:
        >>> checked_learning_rate(np.float32(0.5))
        0.5
        >>> try:
        ...     checked_learning_rate(10**400)
        ... except OptimizerError as error:
        ...     print(error.detail[:45])
        learning rate must be finite and positive, go
        >>> checked_learning_rate(0, optimizer="SGD")
        Traceback (most recent call last):
        ...
        llm_from_scratch.optim.errors.HyperparameterValueError: SGD learning_rate must be \
finite and positive, got 0
    """
    return _checked_real(optimizer, "learning_rate", learning_rate, POSITIVE, _is_positive)


def checked_non_negative(optimizer: str, name: str, value: object) -> float:
    """A finite real number at least zero (``eps``, ``weight_decay``, ``initial_accumulator``),
    read once like a learning rate."""
    return _checked_real(optimizer, name, value, NON_NEGATIVE, _is_non_negative)


def checked_betas(optimizer: str, value: object) -> tuple[float, float]:
    """A pair of moment decay rates, each a real number in ``[0, 1)`` read once."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise HyperparameterTypeError(optimizer, "betas", "a pair of real numbers", value)
    first, second = value
    return (
        _checked_real(optimizer, "betas[0]", first, UNIT_INTERVAL, _is_below_one),
        _checked_real(optimizer, "betas[1]", second, UNIT_INTERVAL, _is_below_one),
    )


def checked_flag(optimizer: str, name: str, value: object) -> bool:
    """A ``bool`` (or NumPy ``bool_``)."""
    if not isinstance(value, bool | np.bool_):
        raise HyperparameterTypeError(optimizer, name, "a bool", value)
    return bool(value)


def _checked_real(
    optimizer: str, name: str, value: object, requirement: str, holds: Callable[[float], bool]
) -> float:
    """``float(value)``, read once, for a real number (not a bool) whose float ``holds``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise HyperparameterTypeError(optimizer, name, requirement, value)
    try:
        number = float(value)
    except (TypeError, ValueError, ArithmeticError) as error:
        raise HyperparameterValueError(optimizer, name, requirement, value) from error
    if not holds(number):
        raise HyperparameterValueError(optimizer, name, requirement, value)
    return number


def _is_positive(number: float) -> bool:
    return math.isfinite(number) and number > 0


def _is_non_negative(number: float) -> bool:
    return math.isfinite(number) and number >= 0


def _is_below_one(number: float) -> bool:
    return 0 <= number < 1  # NaN fails too
