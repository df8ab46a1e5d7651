"""The neighbours figure in a real browser, with the trace figure's checks: both languages, 1280
and 360 px, no sideways overflow, focusable named scroll regions, forced colours, numbers left to
right, no script. Drawn from the MiniLM table (``make pretrained``); without it, or without
Playwright or Chromium, these tests skip outside CI and fail under it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from browser_support import (
    LANGUAGES,
    PAGE_CASES,
    assert_fits_sideways,
    assert_numbers_left_to_right,
    assert_reads_without_script,
    browser,
    opened,
    playwright_api,
    shoot,
    tab_through_regions,
)
from conftest import require_pretrained

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser"]  # the shared fixture, used by name

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


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_the_page_never_overflows_sideways_and_wide_parts_scroll_in_their_region(
    browser: Browser, documents: dict[str, str], tmp_path: Path, lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, requests):
        shoot(page, tmp_path, f"neighbours-{lang}-{width}px")
        assert_fits_sideways(page, width, REGION_COUNT)

    assert requests == []


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_every_scroll_region_is_reached_with_tab_has_a_name_and_shows_its_focus(
    browser: Browser, documents: dict[str, str], lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        reached = tab_through_regions(page, REGION_COUNT)

    assert len(set(reached)) == REGION_COUNT and all(reached)


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
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


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_numbers_stay_left_to_right_under_a_right_to_left_ancestor(
    browser: Browser, documents: dict[str, str], lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        page.evaluate("document.documentElement.setAttribute('dir', 'rtl')")
        assert_numbers_left_to_right(page, documents[lang])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_page_has_no_script_fetches_nothing_and_reads_the_same_without_javascript(
    browser: Browser, documents: dict[str, str], lang: str
) -> None:
    with opened(browser, documents[lang], 1280, java_script_enabled=False) as (page, requests):
        assert_reads_without_script(page, REGION_COUNT)
        playwright_api.expect(page.get_by_role("img")).to_have_accessible_name(re.compile(r"\S"))

    assert requests == []
