"""Render the neighbours figure: the word groups in two dimensions, their cosines, and ID
neighbours against vector neighbours, as one self-contained HTML page in English or Russian.

The numbers come from a computed
:class:`~llm_from_scratch.demos.ch18_token_embeddings.neighbours.NeighboursFigure`; this module
only lays them out, the projection by the figures' shared scatter layout
(:mod:`llm_from_scratch.figures.scatter`: each group's marker shape, labels nudged apart). Every
word comes from the neighbours label table. Jinja2 is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from llm_from_scratch.demos.ch18_token_embeddings.neighbours_text import (
    cosine_text,
    neighbour_text,
    pieces_text,
)
from llm_from_scratch.figures.labels import load_labels
from llm_from_scratch.figures.neighbour_labels import GROUP_NAMES, NEIGHBOUR_LABELS
from llm_from_scratch.figures.render import render_page
from llm_from_scratch.figures.scatter import MARKER_SHAPES, layout_points, marker_path

if TYPE_CHECKING:
    from llm_from_scratch.demos.ch18_token_embeddings.neighbours import NeighboursFigure

__all__ = ["MARKER_SHAPES", "TEMPLATE_NAME", "render_neighbours_figure"]

TEMPLATE_NAME: Final = "neighbours.html.j2"
_WIDTH: Final = 640
_HEIGHT: Final = 440


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
        points=layout_points(figure.projection, shapes, _WIDTH, _HEIGHT),
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
