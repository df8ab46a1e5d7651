"""The neighbours figure without a browser: drawn from a small table whose words are the default
groups', every word from its label table, which is checked as strictly as the trace figure's."""

from __future__ import annotations

import copy
import html
import json
import re
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    DEFAULT_GROUPS,
    DEFAULT_WORDS,
    CosineTable,
    neighbours_figure,
)
from llm_from_scratch.errors import FormatError
from llm_from_scratch.figures.neighbours import render_neighbours_figure
from llm_from_scratch.figures.scatter import MARKER_SHAPES
from llm_from_scratch.labels import GROUP_NAMES, NEIGHBOUR_LABELS, check_labels, load_labels

from checks import raises_rule
from neighbours_support import WholeWords, layer_of

LANGUAGES = ("en", "ru")
WORDS = ("[UNK]", *(word for _, words in DEFAULT_GROUPS for word in words), "extra")


@pytest.fixture(scope="module")
def figure() -> object:
    rng = np.random.default_rng(18)
    centres = rng.standard_normal((len(DEFAULT_GROUPS), 8))
    rows = [rng.standard_normal(8)]
    for centre in centres:
        rows += [centre + 0.3 * rng.standard_normal(8) for _ in range(4)]
    rows.append(rng.standard_normal(8))
    table = CosineTable.of(layer_of(rows))
    return neighbours_figure(table, WholeWords(WORDS), DEFAULT_WORDS, 3, "table.safetensors")


def raw_table(lang: str) -> dict[str, object]:
    source = resources.files("llm_from_scratch.labels").joinpath("neighbours", f"{lang}.json")
    table: dict[str, object] = json.loads(source.read_text(encoding="utf-8"))
    return table


def leaves(node: object, prefix: str = "") -> dict[str, str]:
    if isinstance(node, dict):
        return {
            k: v for key, value in node.items() for k, v in leaves(value, f"{prefix}{key}.").items()
        }
    return {prefix[:-1]: str(node)}


def test_the_label_groups_are_the_default_groups_and_shapes_are_one_per_group() -> None:
    assert tuple(group for group, _ in DEFAULT_GROUPS) == GROUP_NAMES
    assert len(set(MARKER_SHAPES)) == len(GROUP_NAMES)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_figure_label_is_on_the_page_and_every_number_is_left_to_right(
    figure: object, lang: str
) -> None:
    page = render_neighbours_figure(figure, lang)  # type: ignore[arg-type]
    shown = html.unescape(re.sub(r"<[^>]+>", " ", page))
    labels = leaves(load_labels(lang, NEIGHBOUR_LABELS))
    for key, text in labels.items():
        # text: the command line's only; no_token: IDs beyond it
        if not key.startswith(("errors.", "usage.", "text.", "no_token")):
            assert text in shown or html.escape(text) in page, key
    assert f'<html lang="{lang}"' in page and "<script" not in page
    assert page.count('class="marker"') == 20 + 5
    assert page.count('class="num" dir="ltr"') > 0


def test_the_group_cosines_and_neighbours_on_the_page_are_the_computed_ones(figure: object) -> None:
    page = render_neighbours_figure(figure, "en")  # type: ignore[arg-type]
    for group in figure.groups:  # type: ignore[attr-defined]
        assert f'<span class="num" dir="ltr">{group.within:.4f}</span>' in page
    for word in figure.neighbours.words:  # type: ignore[attr-defined]
        assert f'<span class="num" dir="ltr">{word.vector_mean_cosine:.4f}</span>' in page


@pytest.mark.parametrize("path", ["groups.colours", "projection.region", "errors.word.unknown"])
def test_a_missing_neighbours_label_fails_with_the_table_language_and_key(path: str) -> None:
    table = copy.deepcopy(raw_table("ru"))
    *parents, last = path.split(".")
    node = table
    for key in parents:
        node = node[key]  # type: ignore[assignment]
    del node[last]

    with raises_rule(FormatError, "labels.table", table="neighbours", key_path=path) as caught:
        check_labels("ru", table, NEIGHBOUR_LABELS)
    caught.match(f"^neighbours ru: {re.escape(path)}: the label is missing$")


def test_a_blank_or_unknown_neighbours_label_fails_by_key() -> None:
    blank = copy.deepcopy(raw_table("en"))
    blank["title"] = " "
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("en", blank, NEIGHBOUR_LABELS)
    caught.match(r"^neighbours en: title: the label is blank$")
    extra = copy.deepcopy(raw_table("en"))
    extra["subtitle"] = "lost"
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("en", extra, NEIGHBOUR_LABELS)
    caught.match(r"^neighbours en: subtitle: unknown label")


def test_both_languages_have_the_same_label_keys() -> None:
    assert leaves(raw_table("en")).keys() == leaves(raw_table("ru")).keys()


def test_the_demo_and_help_import_none_of_the_neighbours_code() -> None:
    code = "\n".join(
        [
            "import contextlib, io, sys",
            "from llm_from_scratch.cli import main",
            "with contextlib.redirect_stdout(io.StringIO()):",
            "    main(['ch18'])",
            "found = [m for m in sys.modules if m.split('.')[0] == 'tokenizers'",
            "         or m.rsplit('.', 1)[-1] in",
            "         ('neighbours', 'pretrained', 'exercises', 'exercise_session')]",
            "print(sorted(found))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_plot_has_axes_their_shares_and_the_share_both_explain(
    figure: object, lang: str
) -> None:
    page = render_neighbours_figure(figure, lang)  # type: ignore[arg-type]
    labels = leaves(load_labels(lang, NEIGHBOUR_LABELS))
    explained = figure.projection.explained  # type: ignore[attr-defined]
    plot = re.search(r'<svg class="plot".*?</svg>', page, re.S)
    assert plot is not None

    assert plot[0].count('<line class="axis"') == 2
    for number, share in enumerate(explained, start=1):
        assert f"{labels['projection.component']} {number} ({100 * share:.1f}%)" in plot[0]
    together = f"{100 * sum(explained):.1f}%"
    assert f'{labels["projection.together"]} <span class="num" dir="ltr">{together}</span>' in page


def test_every_label_moved_off_its_marker_is_tied_to_it_by_a_line(figure: object) -> None:
    page = render_neighbours_figure(figure, "en")  # type: ignore[arg-type]
    points = re.findall(r'<g class="point".*?</g>', page, re.S)

    assert len(points) == 20
    for point in points:
        path = re.search(r' d="M([0-9.]+) ([0-9.]+)', point)
        text = re.search(r'<text x="([0-9.]+)" y="([0-9.]+)"', point)
        assert path is not None and text is not None
        leader = re.search(r'<line class="leader" x1="([0-9.]+)" y1="([0-9.]+)"', point)
        marker_y = float(path[2])
        off_line = abs(float(text[2]) - marker_y) > 20  # the label left its marker's line
        if off_line:
            assert leader is not None, point
