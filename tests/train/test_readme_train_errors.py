"""The README's ``ch18 train`` error session prints what the README shows (on the fetched corpus;
without it the test skips, saying ``make corpus`` fetches it)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from llm_from_scratch.cli import main
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import (
    default_corpus_folder,
    fetched_texts,
)

from conftest import unavailable

README = Path(__file__).resolve().parents[2] / "README.md"


def session() -> list[tuple[str, str]]:
    """Each ``$ llm-from-scratch ch18 train`` line of the README with the line after it."""
    text = README.read_text("utf-8")
    return re.findall(r"^ *\$ (llm-from-scratch ch18 train .*)\n *(error: .*)$", text, re.M)


def test_the_readme_shows_two_refused_options() -> None:
    assert [command.split()[3] for command, _ in session()] == ["--dim", "--min-count"]


def test_each_refusal_prints_what_the_readme_shows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if fetched_texts(default_corpus_folder()) is None:
        unavailable("the Shakespeare corpus is not fetched: make corpus", ci_provides=True)
    for command, printed in session():
        arguments = [*shlex.split(command)[1:], "--output", str(tmp_path / "out")]
        assert main(arguments) == 2
        assert capsys.readouterr().err == f"{printed}\n"
        assert not (tmp_path / "out").exists()
