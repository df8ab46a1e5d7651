"""Support for the browser tests of the figures: Debian's Chromium, headless, driven by
Playwright. Outside CI the tests skip, saying what to install, when Playwright or Chromium is
missing; under ``CI=true`` either one missing is a failure."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conftest import import_optional, unavailable

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

playwright_api = import_optional("playwright.sync_api", "playwright")

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
