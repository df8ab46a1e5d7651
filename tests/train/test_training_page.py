"""``docs/training.md`` is true: its ``ch18 train`` refusals print what it shows (on the fetched
corpus; without it the test skips, saying ``make corpus`` fetches it), and its Python example
trains from a list of token lists and from a pre-tokenized file, saves, queries and continues."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import pytest

from llm_from_scratch.cli import main
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import (
    default_corpus_folder,
    fetched_texts,
)
from llm_from_scratch.nn import load_metadata

from conftest import unavailable

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


def test_the_python_example_trains_saves_queries_and_continues_as_gensim_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", PAGE.read_text("utf-8"), re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(PAGE), "exec"), {})  # the page's own example
    printed = capsys.readouterr().out.splitlines()
    neighbours = ast.literal_eval(printed[0])
    assert [type(score) for _, score in neighbours] == [float, float]
    assert {word for word, _ in neighbours} <= {"we", "moved", "to", "in", "2024", "is", "big"}
    assert [line.split()[:2] for line in printed[1:6]] == [["epoch", str(n)] for n in range(1, 6)]
    assert all(line.endswith(" 8") for line in printed[1:6])  # eight words, [UNK] left out
    assert printed[6].endswith("(32,)") and printed[7] == "20 words outside the vocabulary"
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "model.safetensors",
        "table.safetensors",
        "tokenizer.json",
    ]
    assert load_metadata(out / "table.safetensors")["epochs"] == "7"  # 5, then 2 more
    assert "new_york" in json.loads((out / "tokenizer.json").read_text("utf-8"))["model"]["vocab"]
