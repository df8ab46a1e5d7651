"""The figure of a ``ch18 train`` report: the word groups projected before and after training,
side by side (one marker shape per group in both), with their mean cosines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from llm_from_scratch.figures.render import render_page
from llm_from_scratch.figures.scatter import MARKER_SHAPES, Point, Projection, layout_points
from llm_from_scratch.labels import TRAIN_GROUP_NAMES, TRAIN_LABELS, cosine_text, load_labels

TEMPLATE_NAME: Final = "train.html.j2"
#: Each report group's marker shape, the same in both panels.
GROUP_SHAPES: Final = dict(zip(TRAIN_GROUP_NAMES, MARKER_SHAPES, strict=True))

_WIDTH: Final = 480
_HEIGHT: Final = 380


class MeasuredTable(Protocol):
    """One table the report measured (its ``TableView``)."""

    @property
    def groups(self) -> Sequence[object]: ...

    @property
    def projection(self) -> Projection | None: ...

    @property
    def within(self) -> float: ...

    @property
    def between(self) -> float: ...

    @property
    def separation(self) -> float: ...


class TrainPage(Protocol):
    """The report as the page draws it here (the rest in its template)."""

    @property
    def before(self) -> MeasuredTable: ...

    @property
    def after(self) -> MeasuredTable: ...


@dataclass(frozen=True)
class Panel:
    """One table's side: ``before`` or ``after``, its points (None without a projection), its
    components' shares, and its mean cosines by label key (none without groups)."""

    key: str
    points: tuple[Point, ...] | None
    explained: tuple[str, ...]
    cosines: tuple[tuple[str, str], ...]


def render_train_figure(report: TrainPage, lang: str) -> str:
    """One self-contained HTML document in ``lang``.

    Raises:
        FormatError: ``labels.table``, the language has no table, or a label is missing or blank.
    """
    return render_page(
        TEMPLATE_NAME,
        lang,
        load_labels(lang, TRAIN_LABELS),
        report=report,
        width=_WIDTH,
        height=_HEIGHT,
        panels=[panel("before", report.before), panel("after", report.after)],
        shapes=GROUP_SHAPES,
        cosine=cosine_text,
    )


def panel(key: str, view: MeasuredTable) -> Panel:
    """The panel of one measured table."""
    named = (("inside", view.within), ("between", view.between), ("separation", view.separation))
    cosines = tuple((name, cosine_text(value)) for name, value in named if view.groups)
    if view.projection is None:
        return Panel(key, None, (), cosines)
    points = layout_points(view.projection, GROUP_SHAPES, _WIDTH, _HEIGHT)
    shares = tuple(f"{100 * share:.1f}%" for share in view.projection.explained)
    return Panel(key, tuple(points), shares, cosines)
