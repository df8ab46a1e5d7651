"""Checks of optimizer hyperparameters at the public boundary.

A real number is a Python or NumPy integer or float; ``bool`` is not a number here. Each check
returns a Python ``float`` (or ``bool``) and raises :class:`HyperparameterTypeError` or
:class:`HyperparameterValueError` naming the optimizer and the argument.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from llm_from_scratch.optim.errors import HyperparameterTypeError, HyperparameterValueError

REAL = "a real number"


def checked_real(optimizer: str, name: str, value: object) -> float:
    """``value`` as a float when it is a real number (not ``bool``)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise HyperparameterTypeError(optimizer, name, REAL, value)
    return float(value)


def checked_learning_rate(optimizer: str, value: object) -> float:
    """A finite learning rate above zero.

    Example:
        >>> checked_learning_rate("SGD", np.float32(0.5))
        0.5
        >>> checked_learning_rate("SGD", 0)
        Traceback (most recent call last):
        ...
        llm_from_scratch.optim.errors.HyperparameterValueError: SGD learning_rate must be \
finite and above zero, got 0
    """
    number = checked_real(optimizer, "learning_rate", value)
    if not (math.isfinite(number) and number > 0):
        raise HyperparameterValueError(optimizer, "learning_rate", "finite and above zero", value)
    return number


def checked_non_negative(optimizer: str, name: str, value: object) -> float:
    """A finite number at least zero (``eps``, ``weight_decay``, ``initial_accumulator``)."""
    number = checked_real(optimizer, name, value)
    if not (math.isfinite(number) and number >= 0):
        raise HyperparameterValueError(optimizer, name, "finite and at least zero", value)
    return number


def checked_betas(optimizer: str, value: object) -> tuple[float, float]:
    """A pair of moment decay rates, each in ``[0, 1)``."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise HyperparameterTypeError(optimizer, "betas", "a pair of real numbers", value)
    betas = []
    for position, beta in enumerate(value):
        name = f"betas[{position}]"
        number = checked_real(optimizer, name, beta)
        if not 0 <= number < 1:  # NaN fails too
            raise HyperparameterValueError(optimizer, name, "in [0, 1)", beta)
        betas.append(number)
    return betas[0], betas[1]


def checked_flag(optimizer: str, name: str, value: object) -> bool:
    """A ``bool`` (or NumPy ``bool_``)."""
    if not isinstance(value, bool | np.bool_):
        raise HyperparameterTypeError(optimizer, name, "a bool", value)
    return bool(value)
