from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.cli import main

from conftest import GOLDEN

SPEC = Path(__file__).resolve().parents[1] / "docs" / "spec" / "ch18-token-embeddings.md"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        status = main(list(args))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_ch18_prints_the_demo_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "ch18")
    assert status == 0
    assert out == (GOLDEN / "ch18_demo.txt").read_text()
    assert len(out.splitlines()) == 13


def test_ch18_trace_prints_the_trace_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "ch18", "trace")
    assert status == 0
    assert out == (GOLDEN / "ch18_trace.txt").read_text()
    assert len(out.splitlines()) == 15


def test_golden_files_are_the_contract_text() -> None:
    blocks = re.findall(r"```\n(.*?)```", SPEC.read_text(), re.S)
    assert (GOLDEN / "ch18_demo.txt").read_text() in blocks
    assert (GOLDEN / "ch18_trace.txt").read_text() in blocks


@pytest.mark.parametrize("args", [[], ["ch18"], ["ch18", "trace"], ["ch18", "figure"]])
def test_help_works_at_every_level(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    status, out, _ = run_cli(capsys, *args, "--help")
    assert status == 0 and "usage:" in out


def test_a_bad_subcommand_exits_2_with_usage(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "ch99")
    assert status == 2 and "usage:" in err
    status, _, err = run_cli(capsys, "ch18", "tracee")
    assert status == 2 and "usage:" in err


def test_python_dash_m_runs_the_same_demo() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "llm_from_scratch", "ch18"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == (GOLDEN / "ch18_demo.txt").read_text()
