"""The embedding layers' options (PyTorch's keyword arguments): frozen records that check
themselves, also when unpickled, for a table of ``vocabulary_size`` rows, each value read once.

Example:
    >>> options = LookupOptions(4, padding_idx=-1, max_norm=1)
    >>> options.padding_idx, options.max_norm, options.norm_type
    (3, 1.0, 2.0)
    >>> try:
    ...     LookupOptions(4, padding_idx=4)
    ... except OptionError as error:
    ...     print(error.rule, error.name, "|", error)
    option.value padding_idx | padding_idx must be an integer in [-4, 4), got 4
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from llm_from_scratch.autograd.bag import BagMode

from llm_from_scratch.autograd.gather import RowGradientRule
from llm_from_scratch.errors import OptionError
from llm_from_scratch.nn.init import read_integer
from llm_from_scratch.tensor.storage import CONVERSION_ERRORS


@dataclass(frozen=True, slots=True)
class LookupOptions:
    """The options of a lookup from a table of ``vocabulary_size`` rows.

    Args:
        vocabulary_size: ``V``, the table's rows: an integer at least 0 (not a bool).
        padding_idx: a row that receives no gradient: an integer in ``[-V, V)`` (a negative one
            counts from the end, and is stored so), or None.
        max_norm: renormalize each looked-up row whose ``norm_type``-norm exceeds it, in place
            before the lookup: a finite real number above zero, or None.
        norm_type: the ``p`` of that norm: a finite real number above zero.
        scale_grad_by_freq: divide each row's gradient by how often the call's IDs name it.

    Raises:
        OptionError: ``option.value`` (``vocabulary_size``, ``padding_idx``, ``max_norm``,
            ``norm_type``; an integer out of range is reported as read), then ``option.type``
            (``scale_grad_by_freq``).
    """

    vocabulary_size: int
    padding_idx: int | None = None
    max_norm: float | None = None
    norm_type: float = 2.0
    scale_grad_by_freq: bool = False
    gradient_rule: RowGradientRule = field(init=False, repr=False, compare=False)
    """How the lookup's VJP departs from the plain sum, built once."""

    def __post_init__(self) -> None:
        _set(self, "vocabulary_size", checked_rows(self.vocabulary_size))
        _check_rows_and_norm(self)
        scale = checked_flag("scale_grad_by_freq", self.scale_grad_by_freq)
        _set(self, "scale_grad_by_freq", scale)
        _set(self, "gradient_rule", RowGradientRule(self.padding_idx, scale))

    def __reduce__(self) -> tuple[object, ...]:
        fields = (self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq)
        return LookupOptions, (self.vocabulary_size, *fields)


@dataclass(frozen=True, slots=True)
class BagOptions:
    """The options of an embedding bag over a table of ``vocabulary_size`` rows: ``mode`` is
    ``"sum"``, ``"mean"`` or ``"max"``, the others as in :class:`LookupOptions`; ``option.value``
    for each, in the order of the fields."""

    vocabulary_size: int
    mode: BagMode = "mean"
    padding_idx: int | None = None
    max_norm: float | None = None
    norm_type: float = 2.0

    def __post_init__(self) -> None:
        _set(self, "vocabulary_size", checked_rows(self.vocabulary_size))
        _set(self, "mode", checked_mode(self.mode))
        _check_rows_and_norm(self)

    def __reduce__(self) -> tuple[object, ...]:
        fields = (self.mode, self.padding_idx, self.max_norm, self.norm_type)
        return BagOptions, (self.vocabulary_size, *fields)


_set = object.__setattr__  # a checked value replaces the caller's


def _check_rows_and_norm(options: LookupOptions | BagOptions) -> None:
    """Check and set ``padding_idx``, ``max_norm`` and ``norm_type``, in this order."""
    _set(options, "padding_idx", checked_padding_idx(options.padding_idx, options.vocabulary_size))
    _set(options, "max_norm", _positive_finite("max_norm", options.max_norm, none=True))
    _set(options, "norm_type", _positive_finite("norm_type", options.norm_type))


def _refused(name: str, requirement: str, value: object) -> OptionError:
    return OptionError("option.value", name=name, requirement=requirement, value=value)


def checked_rows(vocabulary_size: object) -> int:
    """A table's row count read once (``operator.index``), an ``int`` at least 0."""
    if type(vocabulary_size) is int and vocabulary_size >= 0:
        return vocabulary_size  # the usual case: the table's own count
    requirement = "an integer at least 0 (the table's rows)"
    rows = read_integer(vocabulary_size, lambda bad: _refused("vocabulary_size", requirement, bad))
    if rows < 0:
        raise _refused("vocabulary_size", requirement, rows)
    return rows


def checked_padding_idx(padding_idx: object, vocabulary_size: int) -> int | None:
    """``padding_idx`` read once (``operator.index``) as a row in ``[0, V)``, or None."""
    if padding_idx is None:
        return None
    requirement = f"an integer in [-{vocabulary_size}, {vocabulary_size})"
    row = read_integer(padding_idx, lambda bad: _refused("padding_idx", requirement, bad))
    if not -vocabulary_size <= row < vocabulary_size:
        raise _refused("padding_idx", requirement, row)
    return row + vocabulary_size if row < 0 else row


def _positive_finite(name: str, value: object, none: bool = False) -> float | None:
    """``value`` read once (``float()``) if a finite real above zero, not a bool (or None)."""
    if none and value is None:
        return None
    requirement = "a finite real number above zero"
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise _refused(name, requirement, value)
    try:
        converted = float(value)
    except CONVERSION_ERRORS as conversion:
        raise _refused(name, requirement, value) from conversion
    if not math.isfinite(converted) or converted <= 0.0:
        raise _refused(name, requirement, value)
    return converted


def checked_flag(name: str, value: object) -> bool:
    """``value`` as a bool if it is a Python or NumPy bool."""
    if not isinstance(value, bool | np.bool_):
        raise OptionError("option.type", name=name, requirement="a bool", value=value)
    return bool(value)


def checked_mode(mode: object) -> BagMode:
    """``mode`` as ``"sum"``, ``"mean"`` or ``"max"``, a ``str`` subclass read as its plain text."""
    from llm_from_scratch.autograd.bag import BAG_MODES  # the bag machinery loads on first use

    if isinstance(mode, str):
        plain = str.__str__(mode)
        for known in BAG_MODES:
            if plain == known:
                return known
    raise _refused("mode", "'sum', 'mean' or 'max'", mode)
