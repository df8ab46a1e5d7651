"""The figure in a real browser: Debian's Chromium, headless, driven by Playwright.

Each figure is drawn from the chapter's golden trace and from the traces of four learner IDs
(a scalar, an empty list, one row three times, a 2x2 permutation), in both languages.
Outside CI these tests skip, saying what to install, when Playwright or Chromium is missing;
under ``CI=true`` either one missing is a failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from llm_from_scratch.demos.ch18_token_embeddings import KNOWN_FIXTURE, render_trace
from llm_from_scratch.figures.render import render_figure
from llm_from_scratch.figures.trace_parser import parse_trace
from llm_from_scratch.labels import LANGUAGES

from browser_support import (
    WIDTHS,
    assert_fits_sideways,
    assert_numbers_left_to_right,
    assert_reads_without_script,
    browser,
    opened,
    shoot,
    tab_through_regions,
)
from conftest import GOLDEN

if TYPE_CHECKING:
    from playwright.sync_api import Browser, FloatRect

__all__ = ["browser"]  # the shared fixture, used by name

STATES = ("unused", "selected-once", "selected-repeated")

#: The trace of spec section 7, byte for byte (LF endings kept: read as bytes).
SPEC_TRACE = (GOLDEN / "ch18_trace.txt").read_bytes().decode("utf-8")
#: The IDs a learner types after ``--ids``, by name.
LEARNER_IDS = {
    "scalar": "2",
    "empty": "[]",
    "one-row-thrice": "[[0,0,0]]",
    "two-by-two": "[[3,2],[1,0]]",
}
TRACES = ("chapter", *LEARNER_IDS)
#: The chapter's figure at both widths; the learner figures at the narrow one, which is the
#: harder case for overflow, scrolling and focus.
CASES = [
    pytest.param(trace, lang, width, id=f"{trace}-{lang}-{width}px")
    for trace in TRACES
    for lang in LANGUAGES
    for width in (WIDTHS if trace == "chapter" else WIDTHS[-1:])
]
PAGES = [pytest.param(trace, lang, id=f"{trace}-{lang}") for trace in TRACES for lang in LANGUAGES]


@pytest.fixture(scope="module")
def documents() -> dict[tuple[str, str], str]:
    """Each figure by trace name and language; the learner traces come from the library."""
    texts = {"chapter": SPEC_TRACE}
    for name, ids in LEARNER_IDS.items():
        texts[name] = render_trace(KNOWN_FIXTURE.with_ids(json.loads(ids)))
    return {
        (name, lang): render_figure(parse_trace(text), lang)
        for name, text in texts.items()
        for lang in LANGUAGES
    }


@pytest.mark.parametrize(("trace", "lang", "width"), CASES)
def test_the_page_never_overflows_sideways_and_wide_tables_scroll_in_their_region(
    browser: Browser,
    documents: dict[tuple[str, str], str],
    tmp_path: Path,
    trace: str,
    lang: str,
    width: int,
) -> None:
    with opened(browser, documents[trace, lang], width) as (page, requests):
        shoot(page, tmp_path, f"token-embeddings-{trace}-{lang}-{width}px")
        assert_fits_sideways(page, width, 4)

    assert requests == []


@pytest.mark.parametrize(("trace", "lang", "width"), CASES)
def test_every_scroll_region_is_reached_with_tab_has_a_name_and_shows_its_focus(
    browser: Browser,
    documents: dict[tuple[str, str], str],
    tmp_path: Path,
    trace: str,
    lang: str,
    width: int,
) -> None:
    with opened(browser, documents[trace, lang], width) as (page, _):
        regions = page.locator("[role=region]")
        count = regions.count()
        reached = tab_through_regions(page, count)
        page.evaluate("document.activeElement.blur(); window.scrollTo(0, 0)")
        box = regions.first.bounding_box()
        assert box is not None
        clip: FloatRect = {
            "x": max(box["x"] - 6, 0),
            "y": max(box["y"] - 6, 0),
            "width": min(box["width"] + 12, width - max(box["x"] - 6, 0)),
            "height": box["height"] + 12,
        }
        regions.first.focus()
        with_focus = page.screenshot(clip=clip)
        page.evaluate("document.activeElement.blur()")
        without_focus = page.screenshot(clip=clip)
        regions.first.focus()
        shoot(page, tmp_path, f"focus-{trace}-{lang}-{width}px")

    names = [name for name in reached if name]
    assert len(names) == len(set(names)) == count == 4
    assert with_focus != without_focus, "the focus outline must change what is shown"


@pytest.mark.parametrize(("trace", "lang", "width"), CASES)
def test_forced_colours_keep_the_row_states_apart_by_border_style_and_symbol(
    browser: Browser,
    documents: dict[tuple[str, str], str],
    tmp_path: Path,
    trace: str,
    lang: str,
    width: int,
) -> None:
    with opened(browser, documents[trace, lang], width, forced_colors="active") as (page, _):
        assert page.evaluate("matchMedia('(forced-colors: active)').matches")
        shoot(page, tmp_path, f"forced-colours-{trace}-{lang}-{width}px")
        marks = page.eval_on_selector_all(
            "[data-state]",
            """els => els.map(el => ({
                state: el.dataset.state,
                border: getComputedStyle(el).borderTopStyle,
                symbol: el.querySelector('.sym').textContent}))""",
        )

    by_state: dict[str, set[tuple[str, str]]] = {}
    for mark in marks:
        by_state.setdefault(mark["state"], set()).add((mark["border"], mark["symbol"]))
    assert sorted(by_state) == sorted(STATES)
    assert all(len(looks) == 1 for looks in by_state.values()), by_state
    borders = {next(iter(looks))[0] for looks in by_state.values()}
    symbols = {next(iter(looks))[1] for looks in by_state.values()}
    assert borders == {"dotted", "solid", "double"}
    assert len(symbols) == 3


@pytest.mark.parametrize(("trace", "lang", "width"), CASES)
def test_numbers_stay_left_to_right_under_a_right_to_left_ancestor(
    browser: Browser,
    documents: dict[tuple[str, str], str],
    tmp_path: Path,
    trace: str,
    lang: str,
    width: int,
) -> None:
    with opened(browser, documents[trace, lang], width) as (page, _):
        page.evaluate("document.documentElement.setAttribute('dir', 'rtl')")
        assert page.evaluate("getComputedStyle(document.querySelector('h1')).direction") == "rtl"
        shoot(page, tmp_path, f"rtl-{trace}-{lang}-{width}px")
        assert_numbers_left_to_right(page, documents[trace, lang])


@pytest.mark.parametrize(("trace", "lang"), PAGES)
def test_the_page_has_no_script_fetches_nothing_and_reads_the_same_without_javascript(
    browser: Browser, documents: dict[tuple[str, str], str], trace: str, lang: str
) -> None:
    with opened(browser, documents[trace, lang], 1280, java_script_enabled=False) as (
        page,
        requests,
    ):
        assert_reads_without_script(page, 4)

    assert requests == []
