"""``docs/training.md`` is true: its ``ch18 train`` refusals print what it shows (on the fetched
corpus; without it the test skips, saying ``make corpus`` fetches it), and its Python example
runs."""

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
from train_support import write_corpus

PAGE = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def session() -> list[tuple[str, str]]:
    """Each ``$ llm-from-scratch ch18 train`` line of the page with the line after it."""
    text = PAGE.read_text("utf-8")
    return re.findall(r"^ *\$ (llm-from-scratch ch18 train .*)\n *(error: .*)$", text, re.M)


def test_the_page_shows_two_refused_options() -> None:
    assert [command.split()[3] for command, _ in session()] == ["--dim", "--min-count"]


def test_each_refusal_prints_what_the_page_shows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if fetched_texts(default_corpus_folder()) is None:
        unavailable("the Shakespeare corpus is not fetched: make corpus", ci_provides=True)
    for command, printed in session():
        arguments = [*shlex.split(command)[1:], "--output", str(tmp_path / "out")]
        assert main(arguments) == 2
        assert capsys.readouterr().err == f"{printed}\n"
        assert not (tmp_path / "out").exists()


def test_the_python_example_trains_a_table_on_a_corpus_of_ones_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", PAGE.read_text("utf-8"), re.S)
    (tmp_path / "my-texts").mkdir()
    write_corpus(tmp_path / "my-texts")
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(PAGE), "exec"), {})  # the page's own example
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith(("0.", "1.", "2.", "3.", "4.", "5."))
    assert (tmp_path / "out").is_dir()
