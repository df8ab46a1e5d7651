"""The figure of a ``ch18 train`` report without a browser, drawn from a real run on a small
corpus: both panels, each group's words, the report's numbers, the words of one language, a view
without a projection; and ``ch18 train --figure FILE``."""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import re
from importlib import resources
from pathlib import Path

import pytest
from markupsafe import escape

from llm_from_scratch.demos.ch18_token_embeddings.train import TableView, TrainReport, train
from llm_from_scratch.errors import FormatError
from llm_from_scratch.figures.train import GROUP_SHAPES, render_train_figure
from llm_from_scratch.labels import TRAIN_GROUP_NAMES, TRAIN_LABELS, check_labels, load_labels
from llm_from_scratch.training.options import TrainOptions

from checks import raises_rule
from train_support import run_train, write_corpus

LANGUAGES = ("en", "ru")
OTHER = {"en": "ru", "ru": "en"}
RUN = {"dim": 8, "window": 2, "epochs": 2, "min_count": 2, "seed": 3, "threads": 1}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def report(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> TrainReport:
    return train(TrainOptions(corpus, tmp_path_factory.mktemp("trained") / "out", **RUN), 1)


def leaves(node: object, prefix: str = "") -> dict[str, str]:
    if isinstance(node, dict):
        return {
            k: v for key, value in node.items() for k, v in leaves(value, f"{prefix}{key}.").items()
        }
    return {prefix[:-1]: str(node)}


def shown_text(page: str) -> str:
    """The text a reader meets: the title, the body without its tags, the regions' names."""
    title = page[page.index("<title>") : page.index("</title>")]
    body = page[page.index("<body>") :]
    names = re.findall(r'aria-label="([^"]*)"', body)
    return html.unescape(re.sub(r"<[^>]+>", " ", title + body) + "\n".join(names))


def number(value: float) -> str:
    return f'<span class="num" dir="ltr">{value:.4f}</span>'


def without_projection(report: TrainReport, *, keep_groups: bool) -> TrainReport:
    def view(old: TableView) -> TableView:
        return TableView(old.neighbours, old.groups if keep_groups else (), None)

    return dataclasses.replace(report, before=view(report.before), after=view(report.after))


def test_the_small_run_has_groups_and_a_projection_in_both_tables(report: TrainReport) -> None:
    for view in (report.before, report.after):
        assert len(view.groups) >= 2 and view.projection is not None
    assert set(GROUP_SHAPES) == set(TRAIN_GROUP_NAMES)
    assert len(set(GROUP_SHAPES.values())) == len(TRAIN_GROUP_NAMES)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_page_holds_both_panels_with_every_group_word_in_each(
    report: TrainReport, lang: str
) -> None:
    page = render_train_figure(report, lang)
    labels = load_labels(lang, TRAIN_LABELS)
    words = labels["figure"]
    assert isinstance(words, dict)
    for key in ("before", "after"):
        assert f'<section class="part panel" aria-labelledby="{key}-title">' in page
        assert f'aria-label="{html.escape(words[key]["region"])}"' in page  # type: ignore[index]
    plots = page.split('<svg class="plot"')[1:]
    assert len(plots) == 2
    for plot, view in zip(plots, (report.before, report.after), strict=True):
        assert view.projection is not None
        drawn = re.findall(r'<text x="[\d.]+" y="[\d.]+" direction="ltr">([^<]*)</text>', plot)
        assert drawn == [word.word for word in view.projection.words]
        for group in view.groups:
            for word in group.words:
                assert drawn.count(word) == 1
                assert f'data-shape="{GROUP_SHAPES[group.group]}"' in plot
    for group in report.before.groups:
        assert f"<td>{', '.join(group.words)}</td>" in page


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_numbers_on_the_page_are_the_report_s(report: TrainReport, lang: str) -> None:
    page = render_train_figure(report, lang)
    for view in (report.before, report.after):
        for value in (view.within, view.between, view.separation):
            assert number(value) in page
        for old in view.groups:
            assert number(old.within) in page and number(old.between) in page
        assert view.projection is not None
        for share in view.projection.explained:
            assert f'<span class="num" dir="ltr">{100 * share:.1f}%</span>' in page
    assert f'<span class="num" dir="ltr">{report.vocabulary_size}</span>' in page
    assert f'<span class="num" dir="ltr">{len(report.epochs)}</span>' in page


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_figure_word_is_in_the_page_s_language_and_none_of_the_other(
    report: TrainReport, lang: str
) -> None:
    page = render_train_figure(report, lang)
    shown = shown_text(page)
    labels = leaves(load_labels(lang, TRAIN_LABELS))
    other = leaves(load_labels(OTHER[lang], TRAIN_LABELS))
    used = [key for key in labels if key.startswith(("figure.", "group_header.", "before"))]
    used += ["after", "all_groups"]
    used += [f"group_names.{group.group}" for group in report.before.groups]
    for key in used:
        if key != "figure.no_projection":
            assert labels[key] in shown, key
    for key in used:
        if other[key] != labels[key]:
            assert other[key] not in shown, key
        assert "." not in key or key not in shown
    assert f'<html lang="{lang}"' in page and "<script" not in page
    assert f"<title>{html.escape(labels['figure.title'])}</title>" in page


def test_the_page_is_accessible_as_the_other_figures_are(report: TrainReport) -> None:
    page = render_train_figure(report, "en")
    assert '<main aria-labelledby="figure-title" aria-describedby="figure-description">' in page
    for key in ("before", "after"):
        assert f'role="img" aria-labelledby="{key}-plot-title {key}-plot-description"' in page
        assert f'<title id="{key}-plot-title">' in page
        assert f'<desc id="{key}-plot-description">' in page
    named = re.findall(r'aria-(?:labelledby|describedby)="([^"]+)"', page)
    for name in {name for names in named for name in names.split()}:
        assert page.count(f'id="{name}"') == 1, name
    regions = re.findall(
        r'<div class="region" role="region" aria-label="\S[^"]*" tabindex="0">', page
    )
    assert len(regions) == page.count('role="region"') == 4
    words = [view.projection.words for view in (report.before, report.after) if view.projection]
    points = sum(len(found) for found in words)
    titled = re.findall(r'<g class="point" data-group="\w+">\n<title>[^<]+: [^<]+</title>', page)
    assert page.count('<g class="point"') == len(titled) == points
    assert page.count('class="marker"') == points + len(report.before.groups)


def test_each_group_has_its_own_colour(report: TrainReport) -> None:
    page = render_train_figure(report, "en")
    fills = dict(re.findall(r'\[data-group="(\w+)"\] \{ fill: (#[0-9a-f]{6}); \}', page))
    assert set(fills) == set(TRAIN_GROUP_NAMES)
    assert len(set(fills.values())) == len(TRAIN_GROUP_NAMES)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("keep_groups", [True, False], ids=["groups", "no-groups"])
def test_a_view_without_a_projection_says_so_in_words(
    report: TrainReport, lang: str, keep_groups: bool
) -> None:
    page = render_train_figure(without_projection(report, keep_groups=keep_groups), lang)
    labels = load_labels(lang, TRAIN_LABELS)
    shown = shown_text(page)
    assert shown.count(leaves(labels)["figure.no_projection"]) == 2
    assert '<svg class="plot"' not in page
    assert (number(report.before.within) in page) is keep_groups
    assert (leaves(labels)["no_groups"] in shown) is not keep_groups


def test_a_missing_figure_label_fails_with_the_table_language_and_key() -> None:
    source = resources.files("llm_from_scratch.labels").joinpath("train", "ru.json")
    table = json.loads(source.read_text(encoding="utf-8"))
    broken = copy.deepcopy(table)
    del broken["figure"]["after"]["region"]
    with raises_rule(FormatError, "labels.table", table="train", lang="ru") as caught:
        check_labels("ru", broken, TRAIN_LABELS)
    caught.match(r"^train ru: figure\.after\.region: the label is missing$")


def test_both_languages_have_the_same_train_label_keys() -> None:
    assert (
        leaves(load_labels("en", TRAIN_LABELS)).keys()
        == leaves(load_labels("ru", TRAIN_LABELS)).keys()
    )


# ch18 train --figure FILE ------------------------------------------------------------------------


def test_the_figure_option_writes_the_figure_of_the_run_s_report(
    corpus: Path, report: TrainReport, tmp_path: Path
) -> None:
    figure = tmp_path / "train.html"
    options = ["--seed", "3", "--threads", "1", "--lang", "ru", "--figure", str(figure)]
    status, out, err = run_train(corpus, tmp_path / "out", *options)
    assert status == 0, err
    assert "Записаны" in out
    assert figure.read_text(encoding="utf-8") == render_train_figure(report, "ru")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "train.html"]


@pytest.mark.parametrize("where", ["missing-folder", "a-folder", "file-as-folder"])
def test_a_figure_file_that_cannot_be_written_fails_before_training(
    corpus: Path, tmp_path: Path, where: str
) -> None:
    (tmp_path / "note.txt").write_text("a file\n", encoding="utf-8")
    figure = {
        "missing-folder": tmp_path / "none" / "train.html",
        "a-folder": tmp_path,
        "file-as-folder": tmp_path / "note.txt" / "train.html",
    }[where]
    status, out, err = run_train(corpus, tmp_path / "out", "--figure", str(figure))
    assert status == 2
    assert out == ""
    assert err.startswith(f"error: {figure}: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["note.txt"]


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_loss_curve_has_one_labelled_point_per_epoch_falling_where_the_loss_falls(
    report: TrainReport, lang: str
) -> None:
    page = render_train_figure(report, lang)
    words = leaves(load_labels(lang, TRAIN_LABELS))
    curve = re.search(r'<svg class="plot curve".*?</svg>', page, re.S)
    assert curve is not None

    dots = re.findall(r'<circle class="dot" cx="([0-9.]+)" cy="([0-9.]+)"', curve[0])
    value = r'<text x="[0-9.]+" y="[0-9.]+" text-anchor="middle">([0-9.]+)</text>'
    values = re.findall(value, curve[0])
    losses = [epoch.mean_loss for epoch in report.epochs]
    assert len(dots) == len(losses) >= 2
    assert values == [f"{loss:.4f}" for loss in losses]
    xs, ys = [float(x) for x, _ in dots], [float(y) for _, y in dots]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    for k in range(len(losses) - 1):
        assert (losses[k + 1] < losses[k]) == (ys[k + 1] > ys[k])  # a lower loss is drawn lower
    assert words["figure.loss.title"] in page and words["figure.loss.epoch"] in curve[0]


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_page_says_the_panels_are_separate_projections_and_draws_their_axes(
    report: TrainReport, lang: str
) -> None:
    page = render_train_figure(report, lang)
    words = leaves(load_labels(lang, TRAIN_LABELS))

    assert str(escape(words["figure.separate"])) in page
    for view in (report.before, report.after):
        assert view.projection is not None
        together = f"{100 * sum(view.projection.explained):.1f}%"
        assert f'{words["figure.together"]} <span class="num" dir="ltr">{together}</span>' in page
    panels = re.findall(r'<svg class="plot" .*?</svg>', page, re.S)
    assert len(panels) == 2
    for panel in panels:
        assert panel.count('<line class="axis"') == 2
        assert panel.count(f"{words['figure.component']} 1 (") == 1
