"""Every option of every command is declared once, in ``llm_from_scratch.cli``: its help, its
default and its range, which the parser checks; a number out of its range is refused as it is
parsed, before the command's own modules load, on the one line every command ends with."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import llm_from_scratch
from llm_from_scratch.cli import main
from llm_from_scratch.cli import run as command_line
from llm_from_scratch.errors import OptionError
from llm_from_scratch.exits import REFUSED

from checks import raises_rule
from cli_support import run_cli

SOURCE = Path(llm_from_scratch.__file__).parent
#: The scripts with arguments of their own: ``make errors``, the worker processes of ``bench
#: train``; no command of ``llm-from-scratch`` is among them.
WORKER_SCRIPTS = {"bench/train_runners.py", "error_catalogue.py"}


def declaring_modules() -> set[str]:
    """The modules that call ``add_argument``."""
    found = set()
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            call = node.func if isinstance(node, ast.Call) else None
            if isinstance(call, ast.Attribute) and call.attr == "add_argument":
                found.add(str(path.relative_to(SOURCE)))
    return found


def test_only_the_command_line_declares_the_options_of_a_command() -> None:
    assert declaring_modules() - WORKER_SCRIPTS == {"cli.py"}


def test_no_chapter_or_figure_reads_the_process_arguments_itself() -> None:
    reading = [
        str(path.relative_to(SOURCE))
        for room in ("demos", "figures", "training", "vectors")
        for path in (SOURCE / room).rglob("*.py")
        if "sys.argv" in path.read_text(encoding="utf-8")
    ]
    assert reading == []


@pytest.mark.parametrize(
    ("words", "name", "requirement"),
    [
        (["bench", "small", "--repeats", "0"], "--repeats", "at least 1"),
        (["bench", "startup", "--repeats", "-3"], "--repeats", "at least 1"),
        (["bench", "embedding", "--quick", "--repeats", "0"], "--repeats", "at least 1"),
        (["bench", "train", "--epochs", "0"], "--epochs", "at least 1"),
        (["bench", "train", "--copies", "0"], "--copies", "at least 1"),
        (["bench", "train", "--memory", "--words", "0"], "--words", "at least 1"),
        (["bench", "contention", "--line-ns", "0"], "--line-ns", "above 0"),
        (["bench", "contention", "--line-ns", "nan"], "--line-ns", "above 0"),
        (["bench", "vectors", "--repeats", "0"], "--repeats", "at least 1"),
        (["bench", "digest", "--repeats", "0"], "--repeats", "at least 1"),
        (["bench", "versions", "src", "--rounds", "0"], "--rounds", "at least 1"),
    ],
)
def test_a_number_out_of_its_range_is_refused_by_the_parser(
    words: list[str], name: str, requirement: str
) -> None:
    with raises_rule(OptionError, "option.value", name=name, requirement=requirement):
        command_line(words)


def test_the_refusal_is_the_one_error_line_of_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_cli(capsys, "bench", "contention", "--line-ns", "-1") == (
        REFUSED,
        "",
        "error: --line-ns must be above 0, got -1.0\n",
    )
    assert run_cli(capsys, "bench", "small", "--repeats", "0") == (
        REFUSED,
        "",
        "error: --repeats must be at least 1, got 0\n",
    )


def test_a_refused_benchmark_loads_no_benchmark() -> None:
    code = (
        "import sys; from llm_from_scratch.cli import main;"
        "status = main(['bench', 'train', '--repeats', '0']);"
        "print(status, sorted(m for m in sys.modules if m.startswith('llm_from_scratch.bench')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout == "2 []\n"


@pytest.mark.parametrize("view", ["figure", "trace"])
def test_the_figure_and_the_trace_take_the_declared_options(
    capsys: pytest.CaptureFixture[str], view: str
) -> None:
    status, out, _ = run_cli(capsys, "ch18", view, "--help")

    assert status == 0
    for option in ("--lang {en,ru}", "--ids JSON", "--upstream JSON"):
        assert option in out
    assert ("--output PATH" in out) == (view == "figure")


def test_the_corpus_command_takes_a_folder_and_says_where_the_texts_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run_cli(capsys, "corpus", "--help")
    assert status == 0 and "FOLDER" in out and "SHA256SUMS" in out
    status, _, err = run_cli(capsys, "corpus", "one", "two")
    assert status == REFUSED and "unrecognized arguments: two" in err


def test_a_figure_replaces_its_file_whole(tmp_path: Path) -> None:
    output = tmp_path / "figure.html"
    output.write_text("the earlier page", encoding="utf-8")
    earlier = tmp_path / "earlier.html"
    os.link(output, earlier)

    assert main(["ch18", "figure", "--output", str(output)]) == 0

    assert earlier.read_text(encoding="utf-8") == "the earlier page"
    assert output.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["earlier.html", "figure.html"]
