"""The checks of an optimizer's settings: a real number is any ``numbers.Real`` but a ``bool``,
read once by ``float()``, and that float is what the optimizer uses.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from llm_from_scratch.errors import OptionError


def checked_learning_rate(learning_rate: object, *, optimizer: str = "optimizer") -> float:
    """``learning_rate`` as a float, if it is a finite positive real number:
    ``optimizer.setting-type`` for a ``bool`` or no real number, ``optimizer.setting-value`` for
    one ``float()`` cannot convert (``10**400``) or that is not finite and positive."""
    return _checked_real(optimizer, "learning_rate", learning_rate, "finite and positive")


def checked_non_negative(optimizer: str, name: str, value: object) -> float:
    """A finite real number at least zero (``eps``, ``weight_decay``, ...), read once."""
    return _checked_real(optimizer, name, value, "finite and at least zero")


def checked_betas(optimizer: str, value: object) -> tuple[float, float]:
    """A pair of moment decay rates, each a real number in ``[0, 1)`` read once."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise _error("setting-type", optimizer, "betas", "a pair of real numbers", value)
    first, second = value
    return (
        _checked_real(optimizer, "betas[0]", first, "in [0, 1)"),
        _checked_real(optimizer, "betas[1]", second, "in [0, 1)"),
    )


def checked_flag(optimizer: str, name: str, value: object) -> bool:
    """A ``bool`` (or NumPy ``bool_``)."""
    if not isinstance(value, bool | np.bool_):
        raise _error("setting-type", optimizer, name, "a bool", value)
    return bool(value)


_HOLDS: dict[str, Callable[[float], bool]] = {
    "finite and positive": lambda number: math.isfinite(number) and number > 0,
    "finite and at least zero": lambda number: math.isfinite(number) and number >= 0,
    "in [0, 1)": lambda number: 0 <= number < 1,  # NaN fails too
}


def _checked_real(optimizer: str, name: str, value: object, requirement: str) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise _error("setting-type", optimizer, name, requirement, value)
    try:
        number = float(value)
    except (TypeError, ValueError, ArithmeticError) as error:
        raise _error("setting-value", optimizer, name, requirement, value) from error
    if not _HOLDS[requirement](number):
        raise _error("setting-value", optimizer, name, requirement, value)
    return number


def _error(rule: str, optimizer: str, name: str, requirement: str, value: object) -> OptionError:
    fields = {"name": name, "requirement": requirement, "value": value}
    return OptionError(f"optimizer.{rule}", optimizer=optimizer, **fields)
