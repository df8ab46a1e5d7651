"""Render the figure of a ``ch18 train`` report: the word groups projected before training and
after it, side by side, with their mean cosines, as one self-contained HTML page in English or
Russian.

The numbers come from a
:class:`~llm_from_scratch.demos.ch18_token_embeddings.train.TrainReport`; this module only lays
them out: each table's projection by the figures' shared scatter layout
(:mod:`llm_from_scratch.figures.scatter`), each group with one marker shape and one colour in
both panels. Every word comes from the train label table. Jinja2 is imported on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from llm_from_scratch.demos.ch18_token_embeddings.neighbours_text import cosine_text
from llm_from_scratch.figures.render import render_page
from llm_from_scratch.figures.scatter import MARKER_SHAPES, Point, layout_points, marker_path
from llm_from_scratch.figures.train_labels import TRAIN_GROUP_NAMES, TRAIN_LABELS, load_labels

if TYPE_CHECKING:
    from llm_from_scratch.demos.ch18_token_embeddings.train import TableView, TrainReport

__all__ = ["GROUP_SHAPES", "TEMPLATE_NAME", "Panel", "panel", "render_train_figure"]

TEMPLATE_NAME: Final = "train.html.j2"
#: Each report group's marker shape, the same in both panels.
GROUP_SHAPES: Final = dict(zip(TRAIN_GROUP_NAMES, MARKER_SHAPES, strict=True))

_WIDTH: Final = 480
_HEIGHT: Final = 380


@dataclass(frozen=True)
class Panel:
    """One table's side of the figure.

    ``key`` is ``"before"`` or ``"after"`` (the label of its title); ``points`` is None when the
    table has no projection; ``cosines`` pairs a label key (``inside``, ``between``,
    ``separation``) with its number's text, and is empty without groups.
    """

    key: str
    points: tuple[Point, ...] | None
    explained: tuple[str, ...]
    cosines: tuple[tuple[str, str], ...]


def render_train_figure(report: TrainReport, lang: str) -> str:
    """Render the figure of a training report in one language.

    Args:
        report: what :func:`~llm_from_scratch.demos.ch18_token_embeddings.train.train` returned.
        lang: ``"en"`` or ``"ru"``.

    Returns:
        One HTML document with inline CSS and SVG, no script and no external reference.

    Raises:
        LabelError: the language has no table, or a label is missing or blank.

    Example::

        report = train(TrainOptions(Path("corpus.txt"), Path("out")))
        Path("train.html").write_text(render_train_figure(report, "ru"), encoding="utf-8")
    """
    groups = report.before.groups
    return render_page(
        TEMPLATE_NAME,
        lang,
        load_labels(lang, TRAIN_LABELS),
        report=report,
        width=_WIDTH,
        height=_HEIGHT,
        panels=[panel("before", report.before), panel("after", report.after)],
        legend=[
            (group.group, GROUP_SHAPES[group.group], marker_path(GROUP_SHAPES[group.group], 10, 10))
            for group in groups
        ],
        rows=list(zip(groups, report.after.groups, strict=True)),
        cosine=cosine_text,
    )


def panel(key: str, view: TableView) -> Panel:
    """The panel of one measured table: its points laid out, its shares and mean cosines.

    >>> from llm_from_scratch.demos.ch18_token_embeddings.train import TableView
    >>> panel("before", TableView((), (), None))
    Panel(key='before', points=None, explained=(), cosines=())
    """
    cosines = tuple(
        (name, cosine_text(value))
        for name, value in (
            ("inside", view.within),
            ("between", view.between),
            ("separation", view.separation),
        )
        if view.groups
    )
    projection = view.projection
    if projection is None:
        return Panel(key, None, (), cosines)
    points = layout_points(projection, GROUP_SHAPES, _WIDTH, _HEIGHT)
    shares = tuple(f"{100 * share:.1f}%" for share in projection.explained)
    return Panel(key, tuple(points), shares, cosines)
