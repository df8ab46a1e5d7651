"""Checks every optimizer shares: its hyperparameters, each read once at construction."""

from __future__ import annotations

import math
import numbers

import numpy as np

from llm_from_scratch.errors import StructuredError


class OptimizerError(StructuredError, ValueError):
    """A bad learning rate, a value that is no parameter, or a step that would leave NaN/inf."""

    template = "{detail}"
    detail: str


def checked_learning_rate(learning_rate: object) -> float:
    """``learning_rate`` as a float if it is a finite positive real number.

    Any real number but a bool is accepted: a Python ``int``, ``float`` or ``Fraction``, a
    NumPy scalar such as ``np.float32(0.1)`` or ``np.int64(1)``. It is converted once, by
    ``float()``; the result is what the optimizer uses.

    Raises:
        OptimizerError: a bool, a non-real value, one ``float()`` cannot convert (``10**400``),
            or a result that is not finite and positive.

    Example:
        >>> checked_learning_rate(np.float32(0.5))
        0.5
        >>> try:
        ...     checked_learning_rate(10**400)
        ... except OptimizerError as error:
        ...     print(str(error)[:45])
        learning rate must be finite and positive, go
    """
    rate: float | None = None
    if not isinstance(learning_rate, bool | np.bool_) and isinstance(learning_rate, numbers.Real):
        try:
            rate = float(learning_rate)
        except (TypeError, ValueError, ArithmeticError):
            rate = None
    if rate is None or not math.isfinite(rate) or rate <= 0:
        raise OptimizerError(f"learning rate must be finite and positive, got {learning_rate!r}")
    return rate
