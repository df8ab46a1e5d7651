"""The checks of an optimizer's settings, each read once at construction.

A real number is any ``numbers.Real`` but a ``bool`` (a NumPy scalar and a ``Fraction`` are
real numbers); it is converted once, by ``float()``, and that float is what the optimizer uses.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Final

import numpy as np

from llm_from_scratch.errors import OptionError

POSITIVE: Final = "finite and positive"
NON_NEGATIVE: Final = "finite and at least zero"
UNIT_INTERVAL: Final = "in [0, 1)"


def checked_learning_rate(learning_rate: object, *, optimizer: str = "optimizer") -> float:
    """``learning_rate`` as a float, if it is a finite positive real number.

    Raises:
        OptionError: ``optimizer.setting-type`` for a ``bool`` or a value that is no real
            number; ``optimizer.setting-value`` for one ``float()`` cannot convert
            (``10**400``) or that is not finite and positive.

    Example:
        >>> checked_learning_rate(np.float32(0.5))
        0.5
        >>> checked_learning_rate(0, optimizer="SGD")
        Traceback (most recent call last):
        ...
        llm_from_scratch.errors.OptionError: SGD learning_rate must be finite and positive, got 0
    """
    return _checked_real(optimizer, "learning_rate", learning_rate, POSITIVE, _is_positive)


def checked_non_negative(optimizer: str, name: str, value: object) -> float:
    """A finite real number at least zero (``eps``, ``weight_decay``, ...), read once."""
    return _checked_real(optimizer, name, value, NON_NEGATIVE, _is_non_negative)


def checked_betas(optimizer: str, value: object) -> tuple[float, float]:
    """A pair of moment decay rates, each a real number in ``[0, 1)`` read once."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise _type_error(optimizer, "betas", "a pair of real numbers", value)
    first, second = value
    return (
        _checked_real(optimizer, "betas[0]", first, UNIT_INTERVAL, _is_below_one),
        _checked_real(optimizer, "betas[1]", second, UNIT_INTERVAL, _is_below_one),
    )


def checked_flag(optimizer: str, name: str, value: object) -> bool:
    """A ``bool`` (or NumPy ``bool_``)."""
    if not isinstance(value, bool | np.bool_):
        raise _type_error(optimizer, name, "a bool", value)
    return bool(value)


def _checked_real(
    optimizer: str, name: str, value: object, requirement: str, holds: Callable[[float], bool]
) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise _type_error(optimizer, name, requirement, value)
    fields = {"optimizer": optimizer, "name": name, "requirement": requirement, "value": value}
    try:
        number = float(value)
    except (TypeError, ValueError, ArithmeticError) as error:
        raise OptionError("optimizer.setting-value", **fields) from error
    if not holds(number):
        raise OptionError("optimizer.setting-value", **fields)
    return number


def _type_error(optimizer: str, name: str, requirement: str, value: object) -> OptionError:
    return OptionError(
        "optimizer.setting-type",
        optimizer=optimizer,
        name=name,
        requirement=requirement,
        value=value,
    )


def _is_positive(number: float) -> bool:
    return math.isfinite(number) and number > 0


def _is_non_negative(number: float) -> bool:
    return math.isfinite(number) and number >= 0


def _is_below_one(number: float) -> bool:
    return 0 <= number < 1  # NaN fails too
