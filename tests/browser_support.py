"""Support for the browser tests of the figures: Debian's Chromium, headless, driven by
Playwright. Outside CI the tests skip, saying what to install, when Playwright or Chromium is
missing; under ``CI=true`` either one missing is a failure."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from llm_from_scratch.labels import LANGUAGES

from conftest import import_optional, unavailable

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

playwright_api = import_optional("playwright.sync_api", "playwright")

#: The widths every figure is drawn at: a desktop window and a narrow phone.
WIDTHS = (1280, 360)
#: Each language at each width, as test parameters named like ``en-1280px``.
PAGE_CASES = [
    pytest.param(lang, width, id=f"{lang}-{width}px") for lang in LANGUAGES for width in WIDTHS
]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """Debian's ``chromium`` on the PATH, or at its usual place."""
    found = shutil.which("chromium")
    if found is None and Path("/usr/bin/chromium").is_file():
        found = "/usr/bin/chromium"
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        unavailable(
            "no Chromium found; install Debian's chromium: apt-get install chromium",
            ci_provides=True,
        )
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@contextmanager
def opened(
    browser: Browser, document: str, width: int, **options: Any
) -> Iterator[tuple[Page, list[str]]]:
    """Open the document in a fresh context; yield the page and every URL it requested."""
    context = browser.new_context(viewport={"width": width, "height": 900}, **options)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.set_content(document, wait_until="load")
        yield page, requests
    finally:
        context.close()


def shoot(page: Page, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000


# Checks shared by the figures' browser tests (each runs on an open page) ------------------------

_REGIONS_JS = """els => els.map(el => ({
    scroll: el.scrollWidth, client: el.clientWidth,
    right: el.getBoundingClientRect().right,
    overflowX: getComputedStyle(el).overflowX}))"""

_NUMBERS_JS = """els => els.map(el => {
    const s = getComputedStyle(el);
    const text = el.firstChild;
    const at = i => { const r = document.createRange();
        r.setStart(text, i); r.setEnd(text, i + 1);
        return r.getClientRects()[0]; };
    const n = text.length, first = at(0), last = at(n - 1);
    const sameLine = n > 1 && Math.abs(first.top - last.top) < 2;
    return {text: text.data, direction: s.direction, bidi: s.unicodeBidi,
            leftToRight: !sameLine || first.left < last.left};
})"""


def assert_fits_sideways(page: Page, width: int, region_count: int) -> None:
    """The page is exactly ``width`` wide; each of its ``region_count`` scroll regions ends
    inside it and scrolls sideways itself, and at 360 px at least one of them has to."""
    page_width = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    regions = page.eval_on_selector_all("[role=region]", _REGIONS_JS)
    assert page_width[0] == page_width[1] == width
    assert len(regions) == region_count
    for region in regions:
        assert region["overflowX"] == "auto"
        assert region["right"] <= width
    if width == 360:
        assert any(region["scroll"] > region["client"] for region in regions)


def tab_through_regions(page: Page, count: int) -> list[str | None]:
    """Press Tab ``count`` times; each press must focus a named scroll region that shows a
    visible outline. Returns the regions' ``aria-label`` in the order reached."""
    reached = []
    for _ in range(count):
        page.keyboard.press("Tab")
        focused = page.locator(":focus")
        playwright_api.expect(focused).to_have_attribute("role", "region")
        playwright_api.expect(focused).to_have_accessible_name(re.compile(r"\S"))
        reached.append(focused.get_attribute("aria-label"))
        outline = focused.evaluate(
            "el => { const s = getComputedStyle(el);"
            " return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"
        )
        assert outline[0] != "none" and outline[1] >= 2, outline
    return reached


def assert_numbers_left_to_right(page: Page, document: str) -> None:
    """Every ``.num`` of ``document`` (there is at least one) is an isolated left-to-right run
    whose first digit stands left of its last, whatever the direction around it."""
    numbers = page.eval_on_selector_all(".num", _NUMBERS_JS)
    assert len(numbers) == document.count('class="num') > 0
    for number in numbers:
        assert number["direction"] == "ltr", number
        assert number["bidi"] == "isolate", number
        assert number["leftToRight"], number


def assert_reads_without_script(page: Page, section_count: int) -> None:
    """No script element; the heading, the title and the description the main region names
    are there, with ``section_count`` sections."""
    assert page.locator("script").count() == 0
    playwright_api.expect(page.locator("h1")).to_be_visible()
    playwright_api.expect(page).to_have_title(re.compile(r"\S"))
    description = page.locator("main").get_attribute("aria-describedby")
    assert description is not None
    playwright_api.expect(page.locator(f"#{description}")).to_be_visible()
    assert page.locator("section").count() == section_count
