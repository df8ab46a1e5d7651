"""The HTML figure: self-contained, escaped, labelled, and built only from the trace."""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Iterator

import pytest
from markupsafe import escape

from llm_from_scratch.errors import FormatError
from llm_from_scratch.figures import render
from llm_from_scratch.figures.render import render_figure
from llm_from_scratch.figures.trace_parser import Trace, parse_trace
from llm_from_scratch.labels import LABEL_KEYS, LANGUAGES, Labels, label_error, load_labels

from checks import raises_rule, shown_vector
from conftest import GOLDEN

#: The trace of spec section 7, byte for byte (LF endings kept: read as bytes).
SPEC_TRACE = (GOLDEN / "ch18_trace.txt").read_bytes().decode("utf-8")


@pytest.fixture(scope="module")
def trace_text() -> str:
    """The 15-line trace of spec section 7."""
    return SPEC_TRACE


#: A valid trace in which no ID repeats (other vocabulary, width, shape and numbers).
NO_REPEAT_TRACE = """\
TRACE token-embeddings-v1 BEGIN
FIXTURE name=one-id parameter=emb.weight vocabulary=2 width=1 table-shape=2x1 id-shape=1 \
output-shape=1x1 upstream-shape=1x1 gradient-shape=2x1 accumulation=scatter-add
IDS values=1 repeated-id=none repeated-flat-positions=none
TABLE row=0 uses=0 state=unused values=1.000000000000
TABLE row=1 uses=1 state=selected-once values=-2.250000000000
LOOKUP flat=0 coordinate=0 id=1 sharing=single-row one-hot=0,1 selected-row=1 \
output=-2.250000000000 upstream=0.500000000000
ROW-GRADIENT row=0 flat-positions=none contributions=none rule=unused-zero \
accumulated=0.000000000000
ROW-GRADIENT row=1 flat-positions=0 contributions=0.500000000000 rule=single-copy \
accumulated=0.500000000000
TRACE token-embeddings-v1 END
"""


def label_texts(labels: Labels) -> Iterator[tuple[str, str]]:
    for path in LABEL_KEYS:
        node: str | Labels = labels
        for key in path.split("."):
            assert isinstance(node, dict)
            node = node[key]
        assert isinstance(node, str)
        yield path, node


@pytest.fixture(scope="module")
def trace(trace_text: str) -> Trace:
    return parse_trace(trace_text)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_figure_is_one_self_contained_document_without_script(trace: Trace, lang: str) -> None:
    page = render_figure(trace, lang)

    assert page.startswith("<!DOCTYPE html>\n")
    assert f'<html lang="{lang}" dir="ltr">' in page
    assert "<style>" in page
    assert "<script" not in page.lower()
    assert not re.search(r"(?i)https?:|//[a-z]|src=|href=|@import|url\(", page)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_label_of_the_language_is_shown_by_a_trace_with_or_without_a_repeat(
    trace: Trace, lang: str
) -> None:
    no_repeat = parse_trace(NO_REPEAT_TRACE)
    pages = render_figure(trace, lang) + render_figure(no_repeat, lang)

    for path, text in label_texts(load_labels(lang)):
        assert str(escape(text)) in pages, path


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_figure_has_a_title_and_a_description(trace: Trace, lang: str) -> None:
    page = render_figure(trace, lang)
    labels = load_labels(lang)

    assert f"<title>{html.escape(str(labels['title']))}</title>" in page
    assert 'aria-labelledby="figure-title" aria-describedby="figure-description"' in page
    assert '<p id="figure-description"' in page


def test_every_lexeme_of_the_trace_appears_without_its_trailing_zeros(trace: Trace) -> None:
    page = render_figure(trace, "en")

    for row, gradient in zip(trace.table_rows, trace.row_gradients, strict=True):
        assert shown_vector(row.values) in page
        assert shown_vector(gradient.accumulated) in page
    for lookup in trace.lookups:
        assert shown_vector(lookup.upstream) in page
    assert ".000000000000" not in page.replace("4.000000000000)", "")  # the note's example
    assert "[30, 31]" in page and "[4, 4]" in page


def test_the_two_contributions_into_row_two_converge_on_its_accumulated_gradient(
    trace: Trace,
) -> None:
    page = render_figure(trace, "en")
    card = page[page.index('data-state="selected-repeated">\n<h3>') :]
    card = card[: card.index("</li>")]

    first = card.index("[1, 0]")
    second = card.index("[3, 4]")
    total = card.index('class="line total sum"')
    assert first < second < total
    assert card.index("[4, 4]") > total
    assert '<span class="op">+</span>' in card


def test_every_number_sits_in_a_left_to_right_isolate(trace: Trace) -> None:
    page = render_figure(trace, "ru")

    assert ".num { direction: ltr; unicode-bidi: isolate;" in page
    numbers = list(re.finditer(r"<([^<>]*)>(\[?-?[0-9][0-9.,x ]*\]?)<", page))
    assert len(numbers) > 40
    for number in numbers:
        assert number.group(1).startswith('span class="num'), number.group(0)


def test_the_renderer_shows_the_lexemes_without_recomputing_them(trace: Trace) -> None:
    row = trace.row_gradients[2]
    odd = dataclasses.replace(row, accumulated=("9.250000000000", "-7.000000000000"))
    inconsistent = dataclasses.replace(
        trace, row_gradients=(*trace.row_gradients[:2], odd, trace.row_gradients[3])
    )

    page = render_figure(inconsistent, "en")

    assert "[9.25, -7]" in page
    assert "[4, 4]" not in page


def test_labels_are_escaped_by_the_template_engine(
    trace: Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = load_labels("en")
    labels["title"] = '<b>E</b> & "rows"'
    monkeypatch.setattr(render, "load_labels", lambda lang: labels)

    page = render_figure(trace, "en")

    assert "<b>E</b>" not in page
    assert "&lt;b&gt;E&lt;/b&gt; &amp; &#34;rows&#34;" in page


def test_a_bad_label_table_stops_the_rendering_with_its_key_path(
    trace: Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(lang: str) -> Labels:
        raise label_error(lang, "reverse.title", "the label is blank", "token-embeddings")

    monkeypatch.setattr(render, "load_labels", broken)

    with raises_rule(FormatError, "labels.table", lang="ru", key_path="reverse.title") as caught:
        render_figure(trace, "ru")
    assert str(caught.value) == "ru: reverse.title: the label is blank"


def test_every_wide_table_sits_in_a_labelled_focusable_scroll_region(trace: Trace) -> None:
    page = render_figure(trace, "en")

    tables = page.count("<table")
    regions = re.findall(
        r'<div class="region" role="region" aria-label="([^"]+)" tabindex="0">\n'
        r"<table",
        page,
    )
    assert len(regions) == tables == 4
    assert all(name.strip() for name in regions)
    assert ".region { overflow-x: auto;" in page


def test_row_states_differ_by_text_border_style_and_symbol(trace: Trace) -> None:
    page = render_figure(trace, "en")

    assert '[data-state="unused"] { border-style: dotted;' in page
    assert '[data-state="selected-once"] { border-style: solid;' in page
    assert '[data-state="selected-repeated"] { border-style: double;' in page
    for symbol, text in (("○", "unused"), ("●", "selected once"), ("◎", "selected repeatedly")):
        assert f'<span class="sym" aria-hidden="true">{symbol}</span> {text}</span>' in page


def test_jinja2_is_not_imported_until_a_figure_is_rendered() -> None:
    import subprocess
    import sys

    code = (
        "import sys, llm_from_scratch.figures.cli, llm_from_scratch.figures.render;"
        "import llm_from_scratch.figures.trace_parser;"
        "print('jinja2' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "False"


def test_the_upstream_sits_on_the_reverse_rail_and_not_the_forward_one(trace: Trace) -> None:
    page = render_figure(trace, "en")
    forward = page[page.index('id="forward-title"') : page.index('id="reverse-title"')]
    reverse = page[page.index('id="reverse-title"') :]

    assert "Upstream" not in forward and "upstream" not in forward.lower().split("<svg")[0]
    rows = re.findall(r'<table class="upstream">.*?</table>', reverse, re.S)
    assert len(rows) == 1
    for lookup in trace.lookups:
        cells = f'<th scope="row"><span class="num" dir="ltr">{lookup.flat}</span></th>'
        assert cells + f"<td>{shown_html(lookup.upstream)}</td>" in rows[0]


def shown_html(lexemes: tuple[str, ...]) -> str:
    return f'<span class="num" dir="ltr">{shown_vector(lexemes)}</span>'


@pytest.mark.parametrize("rail", ["forward", "reverse"])
def test_each_rail_draws_one_arrow_from_each_position_to_its_row(trace: Trace, rail: str) -> None:
    page = render_figure(trace, "en")
    svg = re.search(rf'<svg class="arrows"[^>]*{rail}-links-title.*?</svg>', page, re.S)
    assert svg is not None

    link = r'<g class="link( shared)?" data-flat="(\d+)" data-row="(\d+)"><line '
    lines = re.findall(link, svg[0])
    expected = [(lookup.flat, lookup.selected_row) for lookup in trace.lookups]
    assert [(flat, row) for _, flat, row in lines] == expected
    assert [bool(shared) for shared, _, _ in lines] == [
        lookup.sharing == "repeated-row" for lookup in trace.lookups
    ]
    assert svg[0].count('<path class="head" d="M') == len(trace.lookups)
    heads = [float(x) for x in re.findall(r'<path class="head" d="M([0-9.]+) ', svg[0])]
    assert all(x > 200 for x in heads) if rail == "reverse" else all(x < 200 for x in heads)
    for row in trace.table_rows:
        assert f">row {row.row}</text>" in svg[0]


def test_the_forward_rail_shows_each_positions_one_hot_product(trace: Trace) -> None:
    page = render_figure(trace, "en")

    products = re.findall(
        r'<td class="product"><var>e</var><sub><span class="num" dir="ltr">(\d+)</span></sub>'
        r"<var>E</var></td>",
        page,
    )
    assert products == [lookup.id for lookup in trace.lookups]
    assert '<th scope="col">One-hot product</th>' in page


def test_only_a_sum_of_several_contributions_gets_the_double_rule(trace: Trace) -> None:
    page = render_figure(trace, "en")
    cards = re.findall(r'<li class="card" data-state="([^"]+)">(.*?)</li>', page, re.S)

    for state, card in cards:
        assert ('class="line total sum"' in card) == (state == "selected-repeated"), state
    assert ".sum > * { border-top: 3px double" in page
    assert ".total > * { border-top" not in page
