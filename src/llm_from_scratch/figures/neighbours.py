"""The neighbours figure: the word groups on two principal components, their cosines, and ID
neighbours against vector neighbours, laid out from a computed ``NeighboursFigure``."""

from __future__ import annotations

from typing import Final, Protocol

from llm_from_scratch.figures.render import render_page
from llm_from_scratch.figures.scatter import MARKER_SHAPES, Projection, lay_out
from llm_from_scratch.labels import (
    GROUP_NAMES,
    NEIGHBOUR_LABELS,
    cosine_text,
    load_labels,
    neighbour_text,
    pieces_text,
)

TEMPLATE_NAME: Final = "neighbours.html.j2"
_WIDTH: Final = 640
_HEIGHT: Final = 440


class NeighboursPage(Protocol):
    """What the page draws: its projection here, the rest (groups, neighbours) in its template."""

    @property
    def projection(self) -> Projection: ...


def render_neighbours_figure(figure: NeighboursPage, lang: str) -> str:
    """One self-contained HTML document in ``lang``.

    Raises:
        FormatError: ``labels.table``, the language has no table, or a label is missing or blank.
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
        drawing=lay_out(figure.projection, shapes, _WIDTH, _HEIGHT),
        shapes=shapes,
        cosine=cosine_text,
        neighbour=lambda item: neighbour_text(item.id, item.token, labels),
        pieces=lambda word: pieces_text(((p.token, p.id) for p in word.pieces), labels),
    )
