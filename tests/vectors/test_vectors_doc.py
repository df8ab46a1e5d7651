"""docs/vectors.md's examples run as written, on the MiniLM table and gensim's evaluation
files, and print what the page shows."""

from __future__ import annotations

import doctest
import shutil
from pathlib import Path

import pytest

from conftest import require_pretrained
from vectors_support import gensim_data

PAGE = Path(__file__).resolve().parents[2] / "docs" / "vectors.md"


def test_every_example_of_the_vectors_page_prints_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_pretrained()
    for name in ("wordsim353.tsv", "questions-words.txt"):
        shutil.copy(gensim_data(name), tmp_path / name)
    monkeypatch.chdir(tmp_path)
    text = PAGE.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {}, "vectors.md", str(PAGE), 0)
    assert len(test.examples) >= 15
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    runner = doctest.DocTestRunner(optionflags=flags)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
