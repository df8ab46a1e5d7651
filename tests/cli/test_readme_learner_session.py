"""docs/lesson.md's neighbours and exercises sessions print what the README shows."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest

from llm_from_scratch.cli import main

from conftest import require_pretrained

README = Path(__file__).resolve().parents[2] / "docs" / "lesson.md"  # moved from the README
BLOCK = re.compile(r"^( *)```text\n(.*?)^\1```", re.M | re.S)


def sessions() -> list[str]:
    """The README's text blocks that run ``ch18 neighbours`` or ``ch18 exercises``."""
    blocks = [textwrap.dedent(body) for _, body in BLOCK.findall(README.read_text("utf-8"))]
    return [
        block
        for block in blocks
        if re.search(r"^\$ llm-from-scratch ch18 (neighbours|exercises)", block, re.M)
    ]


def steps(block: str) -> list[tuple[str, str]]:
    """Each ``$ command`` of a block with the text printed after it."""
    found = []
    for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
        command, _, printed = chunk.partition("\n")
        found.append((command, printed))
    return found


def test_the_readme_has_the_four_sessions() -> None:
    commands = [command for block in sessions() for command, _ in steps(block)]
    assert [command.split()[:4] for command in commands if command.startswith("llm")] == [
        ["llm-from-scratch", "ch18", "neighbours", "king"],
        ["llm-from-scratch", "ch18", "neighbours", "tokenization"],
        ["llm-from-scratch", "ch18", "neighbours", "--analogy"],
        ["llm-from-scratch", "ch18", "exercises", "--answers"],
    ]


@pytest.mark.parametrize("block", sessions(), ids=lambda block: block.splitlines()[0][:60])
def test_each_readme_session_prints_what_the_readme_shows(
    block: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if "neighbours" in block:
        require_pretrained()
    monkeypatch.chdir(tmp_path)
    for command, printed in steps(block):
        words = shlex.split(command)
        if words[0] == "echo":
            assert words[2] == ">" and printed == ""
            Path(words[3]).write_text(words[1] + "\n", encoding="utf-8")
            continue
        status = main(words[1:])
        out, err = capsys.readouterr()
        assert out + err == printed
        wrong_answers = "Wrong answers in exercises" in out or "Unanswered exercises" in out
        assert status == (2 if err else 1 if wrong_answers else 0)
