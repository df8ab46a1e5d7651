"""A line chart of one value per step (the loss of each epoch), laid out for SVG: axes, ticks,
the line and a labelled point per step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

_LEFT: Final = 72  # room for the value axis' tick labels
_RIGHT: Final = 24
_TOP: Final = 40
_BOTTOM: Final = 40  # room for the step axis' tick labels


@dataclass(frozen=True)
class CurvePoint:
    """One step: its place in the drawing, its step's name and its value as text."""

    x: float
    y: float
    step: str
    value: str


@dataclass(frozen=True)
class Curve:
    """The chart: its points, the line through them, its plot area and the lowest and highest
    values as the value axis' two ticks (``(y, text)``)."""

    points: tuple[CurvePoint, ...]
    line: str
    width: int
    height: int
    left: int
    bottom: int
    ticks: tuple[tuple[float, str], ...]


def lay_out_curve(
    steps: Sequence[str],
    values: Sequence[float],
    text: Callable[[float], str],
    width: int = 480,
    height: int = 240,
) -> Curve:
    """One point per step, from left to right, the values upwards between the lowest and the
    highest (a single value in the middle).

    >>> curve = lay_out_curve(["1", "2"], [2.0, 1.0], lambda v: f"{v:.1f}")
    >>> [(point.x, point.y, point.value) for point in curve.points], curve.line
    ([(72.0, 40.0, '2.0'), (456.0, 200.0, '1.0')], 'M72.0 40.0L456.0 200.0')
    """
    low, high = min(values), max(values)
    right, bottom = width - _RIGHT, height - _BOTTOM
    span = max(len(values) - 1, 1)

    def place_y(value: float) -> float:
        if high == low:
            return round((_TOP + bottom) / 2, 1)
        return round(_TOP + (high - value) / (high - low) * (bottom - _TOP), 1)

    points = tuple(
        CurvePoint(round(_LEFT + (right - _LEFT) * index / span, 1), place_y(value), step,
                   text(value))
        for index, (step, value) in enumerate(zip(steps, values, strict=True))
    )  # fmt: skip
    line = "M" + "L".join(f"{point.x} {point.y}" for point in points)
    ticks = tuple(dict.fromkeys(((place_y(high), text(high)), (place_y(low), text(low)))))
    return Curve(points, line, width, height, _LEFT, bottom, ticks)
