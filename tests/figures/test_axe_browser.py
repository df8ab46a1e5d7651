"""axe-core, the accessibility engine, finds no violation on any figure page: the trace figure
(the chapter's and a learner's IDs), the neighbours page and the training page, in both
languages, at 1280 and 360 px. axe-core comes with ``axe-playwright-python`` (the test extra)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from llm_from_scratch.labels import LANGUAGES

from browser_support import WIDTHS, browser, opened
from conftest import import_optional, require_pretrained
from train_support import write_corpus

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser"]  # the shared fixture, used by name

PAGES = ("chapter", "learner-ids", "neighbours", "train")


def page_document(name: str, lang: str, folder: Path) -> str:
    from llm_from_scratch.demos.ch18_token_embeddings import KNOWN_FIXTURE, render_trace
    from llm_from_scratch.figures.render import render_figure
    from llm_from_scratch.figures.trace_parser import parse_trace

    if name == "chapter":
        return render_figure(parse_trace(render_trace()), lang)
    if name == "learner-ids":
        fixture = KNOWN_FIXTURE.with_ids([[3, 3], [0, 3]])
        return render_figure(parse_trace(render_trace(fixture)), lang)
    if name == "neighbours":
        return neighbours_page(lang)
    return train_page(lang, folder)


def neighbours_page(lang: str) -> str:
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
    return render_neighbours_figure(figure, lang)


def train_page(lang: str, folder: Path) -> str:
    from llm_from_scratch.demos.ch18_token_embeddings.train import train
    from llm_from_scratch.figures.train import render_train_figure
    from llm_from_scratch.training.options import TrainOptions

    corpus, output = write_corpus(folder), folder / "out"
    options = TrainOptions(corpus, output, dim=8, window=2, epochs=3, min_count=2, threads=1)
    return render_train_figure(train(options, 1), lang)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", PAGES)
def test_axe_core_finds_no_violation_on_the_page(
    browser: Browser, tmp_path: Path, name: str, lang: str, width: int
) -> None:
    axe = import_optional("axe_playwright_python.sync_playwright", "axe-playwright-python").Axe()
    document = page_document(name, lang, tmp_path)

    with opened(browser, document, width) as (page, _):
        results = axe.run(page)

    violations = results.response["violations"]
    assert violations == [], [(v["id"], v["help"], len(v["nodes"])) for v in violations]


def test_axe_core_runs_and_flags_a_figure_without_its_language(
    browser: Browser,
) -> None:
    axe = import_optional("axe_playwright_python.sync_playwright", "axe-playwright-python").Axe()
    document = page_document("chapter", "en", Path("."))
    broken = document.replace('<html lang="en" dir="ltr">', "<html>")

    with opened(browser, broken, 1280) as (page, _):
        results = axe.run(page)

    found = {violation["id"] for violation in results.response["violations"]}
    assert found == {"html-has-lang"}
