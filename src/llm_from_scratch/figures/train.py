"""The figure of a ``ch18 train`` report: the word groups projected before and after training,
side by side (one marker shape per group in both), with their mean cosines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from llm_from_scratch.figures.curve import Curve, lay_out_curve
from llm_from_scratch.figures.render import render_page
from llm_from_scratch.figures.scatter import MARKER_SHAPES, Drawing, Projection, lay_out
from llm_from_scratch.labels import TRAIN_GROUP_NAMES, TRAIN_LABELS, cosine_text, load_labels

if TYPE_CHECKING:
    from llm_from_scratch.training.run import EpochSummary

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
    def epochs(self) -> Sequence[EpochSummary]: ...

    @property
    def before(self) -> MeasuredTable: ...

    @property
    def after(self) -> MeasuredTable: ...


@dataclass(frozen=True)
class Panel:
    """One table's side: ``before`` or ``after``, its mean cosines by label key (none without
    groups), and its drawing (None without a projection)."""

    key: str
    cosines: tuple[tuple[str, str], ...]
    drawing: Drawing | None


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
        loss=loss_curve(report.epochs),
    )


def loss_curve(epochs: Sequence[EpochSummary]) -> Curve | None:
    """The mean loss of each epoch as a curve (None for a run of no epochs)."""
    if not epochs:
        return None
    steps = [str(epoch.epoch) for epoch in epochs]
    return lay_out_curve(steps, [epoch.mean_loss for epoch in epochs], lambda v: f"{v:.4f}")


def panel(key: str, view: MeasuredTable) -> Panel:
    """The panel of one measured table."""
    named = (("inside", view.within), ("between", view.between), ("separation", view.separation))
    cosines = tuple((name, cosine_text(value)) for name, value in named if view.groups)
    if view.projection is None:
        return Panel(key, cosines, None)
    return Panel(key, cosines, lay_out(view.projection, GROUP_SHAPES, _WIDTH, _HEIGHT))
