"""Render the neighbours figure: the word groups in two dimensions, their cosines, and ID
neighbours against vector neighbours, as one self-contained HTML page in English or Russian.

The numbers come from a computed
:class:`~llm_from_scratch.demos.ch18_token_embeddings.neighbours.NeighboursFigure`; this module
only lays them out: it scales the projection into the drawing, picks each group's marker shape
and nudges a word's text label down until it does not cover an earlier one. Every word comes
from the neighbours label table. Jinja2 is imported on first use.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from llm_from_scratch.demos.ch18_token_embeddings.neighbours_text import (
    cosine_text,
    neighbour_text,
    pieces_text,
)
from llm_from_scratch.figures.labels import load_labels
from llm_from_scratch.figures.neighbour_labels import GROUP_NAMES, NEIGHBOUR_LABELS
from llm_from_scratch.figures.render import render_page

if TYPE_CHECKING:
    from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
        NeighboursFigure,
        Projection,
    )

__all__ = ["MARKER_SHAPES", "TEMPLATE_NAME", "render_neighbours_figure"]

TEMPLATE_NAME: Final = "neighbours.html.j2"
#: One marker shape per group, in the order of the groups.
MARKER_SHAPES: Final = ("circle", "square", "triangle", "diamond", "cross")

_WIDTH: Final = 640
_HEIGHT: Final = 440
_MARGIN: Final = 24
_LABEL_ROOM: Final = 84  # to the right of the rightmost marker, for its word
_RADIUS: Final = 6.0
_LINE: Final = 15.0  # the height of a word label
_CHARACTER: Final = 7.6  # the width of one character of a word label, roughly


@dataclass(frozen=True)
class Point:
    """A word's marker and label in drawing coordinates."""

    group: str
    shape: str
    word: str
    path: str
    label_x: float
    label_y: float


def render_neighbours_figure(figure: NeighboursFigure, lang: str) -> str:
    """Render the figure in one language.

    Args:
        figure: the computed figure.
        lang: ``"en"`` or ``"ru"``.

    Returns:
        One HTML document with inline CSS and SVG, no script and no external reference.

    Raises:
        LabelError: the language has no table, or a label is missing or blank.
    """
    labels = load_labels(lang, NEIGHBOUR_LABELS)
    shapes = dict(zip(GROUP_NAMES, MARKER_SHAPES, strict=True))
    return render_page(
        TEMPLATE_NAME,
        lang,
        labels,
        figure=figure,
        width=_WIDTH,
        height=_HEIGHT,
        points=_points(figure.projection, shapes),
        legend=[
            (group.group, shapes[group.group], marker_path(shapes[group.group], 10, 10))
            for group in figure.groups
        ],
        explained=[f"{100 * share:.1f}%" for share in figure.projection.explained],
        neighbour_rows=[
            (word, list(zip(word.id_neighbours, word.vector_neighbours, strict=True)))
            for word in figure.neighbours.words
        ],
        table_file=figure.neighbours.table_path,
        cosine=cosine_text,
        neighbour=lambda item: neighbour_text(item, labels),
        pieces=lambda word: pieces_text(word, labels),
    )


def marker_path(shape: str, x: float, y: float, r: float = _RADIUS) -> str:
    """The SVG path of a marker centred on ``(x, y)``."""
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


def _points(projection: Projection, shapes: dict[str, str]) -> list[Point]:
    xs = [word.x for word in projection.words]
    ys = [word.y for word in projection.words]
    scale_x = _scale(min(xs), max(xs), _MARGIN, _WIDTH - _MARGIN - _LABEL_ROOM)
    scale_y = _scale(max(ys), min(ys), _MARGIN, _HEIGHT - _MARGIN)  # up is positive
    places = [(scale_x(word.x), scale_y(word.y)) for word in projection.words]
    # A label's box is (left, baseline, width); markers take the same kind of box.
    taken = [(x - _RADIUS, y + _RADIUS, 2 * _RADIUS) for x, y in places]
    points = []
    for word, (x, y) in zip(projection.words, places, strict=True):
        label_x, label_y = _free_place(x + _RADIUS + 4, y + 5, len(word.word), taken)
        shape = shapes[word.group]
        points.append(
            Point(word.group, shape, word.word, marker_path(shape, x, y), label_x, label_y)
        )
    return points


def _scale(low: float, high: float, start: float, end: float) -> functools.partial[float]:
    return functools.partial(_linear, low, high, start, end)


def _linear(low: float, high: float, start: float, end: float, value: float) -> float:
    if high == low:
        return (start + end) / 2
    return start + (value - low) / (high - low) * (end - start)


def _free_place(
    x: float, y: float, characters: int, taken: list[tuple[float, float, float]]
) -> tuple[float, float]:
    """The first place at or below ``(x, y)`` where a label does not cover an earlier one."""
    width = characters * _CHARACTER
    for _ in range(8):
        if not any(
            abs(y - other_y) < _LINE and x < other_x + other_width and other_x < x + width
            for other_x, other_y, other_width in taken
        ):
            break
        y += _LINE
    taken.append((x, y, width))
    return round(x, 1), round(min(y, _HEIGHT - 4), 1)
