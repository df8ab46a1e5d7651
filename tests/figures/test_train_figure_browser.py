"""The training report's figure in a real browser, with the other figures' checks: both
languages, 1280 and 360 px, no sideways overflow, focusable named scroll regions, forced colours,
numbers left to right, no script; and the two panels side by side when the page is wide. Drawn
from a run on a small corpus; without Playwright or Chromium these tests skip outside CI and fail
under it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from llm_from_scratch.demos.ch18_token_embeddings.train import TrainReport, train
from llm_from_scratch.figures.train import render_train_figure
from llm_from_scratch.training.options import TrainOptions

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
from train_support import write_corpus

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

__all__ = ["browser"]  # the shared fixture, used by name

REGION_COUNT = 4  # the two plots, the loss curve and the table of groups


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> TrainReport:
    folder = tmp_path_factory.mktemp("train")
    corpus, output = write_corpus(folder), folder / "out"
    options = TrainOptions(corpus, output, dim=8, window=2, epochs=2, min_count=2, threads=1)
    return train(options, 1)


@pytest.fixture(scope="module")
def documents(report: TrainReport) -> dict[str, str]:
    return {lang: render_train_figure(report, lang) for lang in LANGUAGES}


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_the_page_never_overflows_sideways_and_wide_parts_scroll_in_their_region(
    browser: Browser, documents: dict[str, str], tmp_path: Path, lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, requests):
        shoot(page, tmp_path, f"train-{lang}-{width}px")
        assert_fits_sideways(page, width, REGION_COUNT)

    assert requests == []


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_the_panels_stand_side_by_side_when_wide_and_one_above_the_other_when_narrow(
    browser: Browser, documents: dict[str, str], lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        boxes = page.eval_on_selector_all(
            "section.panel",
            "els => els.map(el => { const r = el.getBoundingClientRect();"
            " return {top: r.top, left: r.left, right: r.right, bottom: r.bottom}; })",
        )

    before, after = boxes
    if width == 1280:
        assert before["top"] == after["top"] and before["right"] < after["left"]
    else:
        assert before["bottom"] <= after["top"]


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_every_scroll_region_is_reached_with_tab_has_a_name_and_shows_its_focus(
    browser: Browser, documents: dict[str, str], lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        reached = tab_through_regions(page, REGION_COUNT)

    assert len(set(reached)) == REGION_COUNT and all(reached)


def markers_of(page: Page) -> list[dict[str, object]]:
    """Each marker's group, shape, fill, size and place (plot or legend)."""
    found: list[dict[str, object]] = page.eval_on_selector_all(
        ".marker",
        """els => els.map(el => {
            const s = getComputedStyle(el), box = el.getBBox();
            return {group: el.dataset.group, shape: el.dataset.shape,
                    fill: s.fill, background: getComputedStyle(
                        el.closest('svg.plot') || document.body).backgroundColor,
                    area: box.width * box.height, inLegend: !el.closest('svg.plot')};
        })""",
    )
    return found


def one_per_group(markers: list[dict[str, object]], field: str) -> dict[object, object]:
    """Each group's one value of ``field``; fails when a group has two."""
    values: dict[object, set[object]] = {}
    for marker in markers:
        values.setdefault(marker["group"], set()).add(marker[field])
    assert all(len(found) == 1 for found in values.values()), values
    return {group: next(iter(found)) for group, found in values.items()}


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_each_group_has_its_own_marker_shape_and_its_own_colour(
    browser: Browser, documents: dict[str, str], report: TrainReport, lang: str, width: int
) -> None:
    with opened(browser, documents[lang], width) as (page, _):
        markers = markers_of(page)

    groups = len(report.before.groups)
    for field in ("shape", "fill"):
        chosen = one_per_group(markers, field)
        assert len(chosen) == len(set(chosen.values())) == groups, field


@pytest.mark.parametrize(("lang", "width"), PAGE_CASES)
def test_forced_colours_keep_the_groups_apart_by_marker_shape_and_every_point_has_its_word(
    browser: Browser,
    documents: dict[str, str],
    report: TrainReport,
    tmp_path: Path,
    lang: str,
    width: int,
) -> None:
    with opened(browser, documents[lang], width, forced_colors="active") as (page, _):
        assert page.evaluate("matchMedia('(forced-colors: active)').matches")
        shoot(page, tmp_path, f"train-forced-{lang}-{width}px")
        markers = markers_of(page)
        labels = page.eval_on_selector_all(
            "svg.plot g.point", "els => els.map(g => g.querySelector('text').textContent)"
        )

    groups = len(report.before.groups)
    for marker in markers:
        assert isinstance(marker["area"], int | float) and marker["area"] > 20
        assert marker["fill"] not in ("none", marker["background"])
    shapes = one_per_group(markers, "shape")
    assert len(shapes) == len(set(shapes.values())) == groups
    assert sum(bool(marker["inLegend"]) for marker in markers) == groups
    views = (report.before, report.after)
    words = [word.word for view in views if view.projection for word in view.projection.words]
    assert labels == words


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
        images = page.get_by_role("img")
        assert images.count() == 3  # the two projections and the loss curve
        for index in range(3):
            playwright_api.expect(images.nth(index)).to_have_accessible_name(re.compile(r"\S"))

    assert requests == []
