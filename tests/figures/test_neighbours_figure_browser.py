"""The neighbours figure in a real browser, with the trace figure's checks: both languages, 1280
and 360 px, no sideways overflow, focusable named scroll regions, forced colours, numbers left to
right, no script. Drawn from the MiniLM table (``make pretrained``); without it, or without
Playwright or Chromium, these tests skip outside CI and fail under it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from browser_support import browser, opened, playwright_api, shoot
from conftest import require_pretrained

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser"]  # the shared fixture, used by name

LANGUAGES = ("en", "ru")
WIDTHS = (1280, 360)
CASES = [
    pytest.param(lang, width, id=f"{lang}-{width}px") for lang in LANGUAGES for width in WIDTHS
]
GROUP_COUNT, WORD_COUNT, REGION_COUNT = 5, 20, 3


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    require_pretrained()
    from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
        DEFAULT_COUNT,
        DEFAULT_WORDS,
        neighbours_figure,
    )
    from llm_from_scratch.demos.ch18_token_embeddings.pretrained import open_table, packaged_files
    from llm_from_scratch.figures.neighbours import render_neighbours_figure

    files = packaged_files()
    table, pieces = open_table(files)
    figure = neighbours_figure(table, pieces, DEFAULT_WORDS, DEFAULT_COUNT, files.shown)
    return {lang: render_neighbours_figure(figure, lang) for lang in LANGUAGES}


@pytest.mark.parametrize(("lang", "width"), CASES)
def test_the_page_never_overflows_sideways_and_wide_parts_scroll_in_their_region(
    browser: Browser, documents: dict[str, str], tmp_path: Path, lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, requests):
        shoot(page, tmp_path, f"neighbours-{lang}-{width}px")
        page_width = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        regions = page.eval_on_selector_all(
            "[role=region]",
            """els => els.map(el => ({
                scroll: el.scrollWidth, client: el.clientWidth,
                right: el.getBoundingClientRect().right,
                overflowX: getComputedStyle(el).overflowX}))""",
        )

    assert page_width[0] == page_width[1] == width
    assert len(regions) == REGION_COUNT
    for region in regions:
        assert region["overflowX"] == "auto"
        assert region["right"] <= width
    if width == 360:
        assert any(region["scroll"] > region["client"] for region in regions)
    assert requests == []


@pytest.mark.parametrize(("lang", "width"), CASES)
def test_every_scroll_region_is_reached_with_tab_has_a_name_and_shows_its_focus(
    browser: Browser, documents: dict[str, str], lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        reached = []
        for _ in range(REGION_COUNT):
            page.keyboard.press("Tab")
            focused = page.locator(":focus")
            playwright_api.expect(focused).to_have_attribute("role", "region")
            playwright_api.expect(focused).to_have_accessible_name(re.compile(r"\S"))
            reached.append(focused.get_attribute("aria-label"))
            outline = focused.evaluate(
                "el => { const s = getComputedStyle(el);"
                " return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"
            )
            assert outline[0] != "none" and outline[1] >= 2

    assert len(set(reached)) == REGION_COUNT and all(reached)


@pytest.mark.parametrize(("lang", "width"), CASES)
def test_forced_colours_keep_the_groups_apart_by_marker_shape_and_every_point_has_its_word(
    browser: Browser, documents: dict[str, str], tmp_path: Path, lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width, forced_colors="active") as (page, _):
        assert page.evaluate("matchMedia('(forced-colors: active)').matches")
        shoot(page, tmp_path, f"neighbours-forced-{lang}-{width}px")
        markers = page.eval_on_selector_all(
            ".marker",
            """els => els.map(el => {
                const s = getComputedStyle(el), box = el.getBBox();
                return {group: el.dataset.group, shape: el.dataset.shape,
                        fill: s.fill, stroke: s.stroke, background: getComputedStyle(
                            el.closest('svg.plot') || document.body).backgroundColor,
                        area: box.width * box.height, inLegend: !el.closest('svg.plot')};
            })""",
        )
        labels = page.eval_on_selector_all(
            "svg.plot g.point", "els => els.map(g => g.querySelector('text').textContent)"
        )

    shapes: dict[str, set[str]] = {}
    for marker in markers:
        shapes.setdefault(marker["group"], set()).add(marker["shape"])
        assert marker["area"] > 20
        assert marker["fill"] not in ("none", marker["background"])
    assert len(shapes) == GROUP_COUNT
    assert all(len(found) == 1 for found in shapes.values()), shapes
    assert len({next(iter(found)) for found in shapes.values()}) == GROUP_COUNT
    assert sum(marker["inLegend"] for marker in markers) == GROUP_COUNT
    assert len(labels) == WORD_COUNT and all(label.strip() for label in labels)


@pytest.mark.parametrize(("lang", "width"), CASES)
def test_numbers_stay_left_to_right_under_a_right_to_left_ancestor(
    browser: Browser, documents: dict[str, str], lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        page.evaluate("document.documentElement.setAttribute('dir', 'rtl')")
        numbers = page.eval_on_selector_all(
            ".num",
            """els => els.map(el => {
                const s = getComputedStyle(el);
                const text = el.firstChild;
                const at = i => { const r = document.createRange();
                    r.setStart(text, i); r.setEnd(text, i + 1);
                    return r.getClientRects()[0]; };
                const n = text.length, first = at(0), last = at(n - 1);
                const sameLine = n > 1 && Math.abs(first.top - last.top) < 2;
                return {direction: s.direction, bidi: s.unicodeBidi,
                        leftToRight: !sameLine || first.left < last.left};
            })""",
        )

    assert len(numbers) == documents[lang].count('class="num') > 0
    for number in numbers:
        assert (number["direction"], number["bidi"], number["leftToRight"]) == (
            "ltr",
            "isolate",
            True,
        )


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_page_has_no_script_fetches_nothing_and_reads_the_same_without_javascript(
    browser: Browser, documents: dict[str, str], lang: str
) -> None:
    with opened(browser, documents[lang], 1280, java_script_enabled=False) as (page, requests):
        assert page.locator("script").count() == 0
        playwright_api.expect(page.locator("h1")).to_be_visible()
        playwright_api.expect(page).to_have_title(re.compile(r"\S"))
        description = page.locator("main").get_attribute("aria-describedby")
        assert description is not None
        playwright_api.expect(page.locator(f"#{description}")).to_be_visible()
        playwright_api.expect(page.get_by_role("img")).to_have_accessible_name(re.compile(r"\S"))
        assert page.locator("section").count() == REGION_COUNT

    assert requests == []
