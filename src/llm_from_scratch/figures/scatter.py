"""The scatter the figures share: words of groups on two principal components, up positive."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

#: One marker shape per group, in the order of the groups.
MARKER_SHAPES: Final = ("circle", "square", "triangle", "diamond", "cross")

_MARGIN: Final = 24
_LABEL_ROOM: Final = 84  # to the right of the rightmost marker, for its word
_RADIUS: Final = 6.0
_LINE: Final = 15.0  # the height of a word label
_CHARACTER: Final = 7.6  # the width of one character of a word label, roughly


@dataclass(frozen=True)
class ProjectedWord:
    """A word's coordinates on the first two principal components."""

    group: str
    word: str
    id: int
    x: float
    y: float


@dataclass(frozen=True)
class Projection:
    """Words on the first two principal components, and each component's share of the variance."""

    words: tuple[ProjectedWord, ...]
    explained: tuple[float, float]


@dataclass(frozen=True)
class Point:
    """A word's marker (centred on ``x``, ``y``) and label in drawing coordinates; ``leader``
    when the label had to move off its marker's line, so that a line ties it to its marker."""

    group: str
    shape: str
    word: str
    path: str
    label_x: float
    label_y: float
    x: float = 0.0
    y: float = 0.0
    leader: bool = False


@dataclass(frozen=True)
class Axes:
    """The two components' axes through the centre of the words (the projection's 0, 0), in
    drawing coordinates: a vertical line at ``x`` and a horizontal one at ``y``."""

    x: float
    y: float


def marker_path(shape: str, x: float, y: float, r: float = _RADIUS) -> str:
    """The SVG path of a marker centred on ``(x, y)``.

    >>> marker_path("square", 10, 10)
    'M4.0 4.0h12.0v12.0h-12.0Z'
    """
    paths = {
        "circle": f"M{x - r:.1f} {y:.1f}a{r} {r} 0 1 0 {2 * r} 0a{r} {r} 0 1 0 {-2 * r} 0Z",
        "square": f"M{x - r:.1f} {y - r:.1f}h{2 * r}v{2 * r}h{-2 * r}Z",
        "triangle": f"M{x:.1f} {y - r - 1:.1f}L{x + r + 1:.1f} {y + r:.1f}L{x - r - 1:.1f} "
        f"{y + r:.1f}Z",
        "diamond": f"M{x:.1f} {y - r - 1:.1f}L{x + r + 1:.1f} {y:.1f}L{x:.1f} {y + r + 1:.1f}"
        f"L{x - r - 1:.1f} {y:.1f}Z",
        "cross": f"M{x - r / 3:.1f} {y - r:.1f}h{2 * r / 3:.1f}v{2 * r / 3:.1f}h{2 * r / 3:.1f}"
        f"v{2 * r / 3:.1f}h{-2 * r / 3:.1f}v{2 * r / 3:.1f}h{-2 * r / 3:.1f}v{-2 * r / 3:.1f}"
        f"h{-2 * r / 3:.1f}v{-2 * r / 3:.1f}h{2 * r / 3:.1f}Z",
    }
    return paths[shape]


def layout_points(
    projection: Projection, shapes: Mapping[str, str], width: int, height: int
) -> list[Point]:
    """One point per word, scaled into a ``width`` x ``height`` drawing with its group's marker
    of ``shapes``, its label moved a line down or up until it covers no earlier one."""
    scale_x, scale_y = _scales(projection, width, height)
    places = [(scale_x(word.x), scale_y(word.y)) for word in projection.words]
    # A label's box is (left, baseline, width); markers take the same kind of box.
    taken = [(x - _RADIUS, y + _RADIUS, 2 * _RADIUS) for x, y in places]
    points = []
    for word, (x, y) in zip(projection.words, places, strict=True):
        label_x, label_y = _free_place(x + _RADIUS + 4, y + 5, len(word.word), taken, height)
        shape = shapes[word.group]
        path, moved = marker_path(shape, x, y), abs(label_y - (y + 5)) > 1
        points.append(
            Point(word.group, shape, word.word, path, label_x, label_y, round(x, 1), round(y, 1),
                  moved)
        )  # fmt: skip
    return points


@dataclass(frozen=True)
class Drawing:
    """A projection laid out (:func:`lay_out`): its points and axes, each component's share of
    the variance and both together, as a page shows them (``12.3%``)."""

    points: tuple[Point, ...]
    axes: Axes
    explained: tuple[str, ...]
    together: str


def lay_out(projection: Projection, shapes: Mapping[str, str], width: int, height: int) -> Drawing:
    """The :func:`layout_points` and :func:`layout_axes` of one drawing, and its shares."""
    points = tuple(layout_points(projection, shapes, width, height))
    explained = tuple(f"{100 * share:.1f}%" for share in projection.explained)
    together = f"{100 * sum(projection.explained):.1f}%"
    return Drawing(points, layout_axes(projection, width, height), explained, together)


def layout_axes(projection: Projection, width: int, height: int) -> Axes:
    """Where the axes of :func:`layout_points`' drawing cross: the projection's origin, kept
    inside the drawing."""
    scale_x, scale_y = _scales(projection, width, height)
    x = min(max(scale_x(0.0), _MARGIN / 2), width - _LABEL_ROOM / 2)
    y = min(max(scale_y(0.0), _MARGIN / 2), height - _MARGIN / 2)
    return Axes(round(x, 1), round(y, 1))


def _scales(
    projection: Projection, width: int, height: int
) -> tuple[functools.partial[float], functools.partial[float]]:
    xs = [word.x for word in projection.words]
    ys = [word.y for word in projection.words]
    scale_x = _scale(min(xs), max(xs), _MARGIN, width - _MARGIN - _LABEL_ROOM)
    scale_y = _scale(max(ys), min(ys), _MARGIN, height - _MARGIN)  # up is positive
    return scale_x, scale_y


def _scale(low: float, high: float, start: float, end: float) -> functools.partial[float]:
    return functools.partial(_linear, low, high, start, end)


def _linear(low: float, high: float, start: float, end: float, value: float) -> float:
    if high == low:
        return (start + end) / 2
    return start + (value - low) / (high - low) * (end - start)


def _free_place(
    x: float, y: float, characters: int, taken: list[tuple[float, float, float]], height: int
) -> tuple[float, float]:
    """The nearest free label place to ``(x, y)``, a line below, above, and so on."""
    width = characters * _CHARACTER
    place = y
    for step in (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6):
        candidate = y + step * _LINE
        if _LINE <= candidate <= height - 4 and not any(
            abs(candidate - other_y) < _LINE and x < other_x + other_width and other_x < x + width
            for other_x, other_y, other_width in taken
        ):
            place = candidate
            break
    taken.append((x, place, width))
    return round(x, 1), round(min(place, height - 4), 1)
