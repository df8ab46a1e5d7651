"""The chapter's number formats: shapes as ``4x2``, floats as ``%.12f``, lists joined by ``,``."""

from __future__ import annotations

from collections.abc import Iterable


def shape_text(shape: Iterable[int]) -> str:
    """``(1, 3, 2)`` -> ``1x3x2``; the scalar shape ``()`` prints as an empty string."""
    return "x".join(str(extent) for extent in shape)


def float_text(value: float) -> str:
    """One float with twelve decimals."""
    return f"{value:.12f}"


def floats_text(values: Iterable[float]) -> str:
    """Floats with twelve decimals, joined by ``,``."""
    return ",".join(float_text(value) for value in values)


def ints_text(values: Iterable[int]) -> str:
    """Integers joined by ``,``."""
    return ",".join(str(value) for value in values)


def bool_text(value: bool) -> str:
    """``true`` or ``false``."""
    return "true" if value else "false"


def list_or_none(text: str) -> str:
    """``none`` for an empty list's text."""
    return text if text else "none"
