"""The command line run in this process, as the CLI tests run it."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence

import pytest

from llm_from_scratch.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``llm-from-scratch ARGS`` in process: the exit status (argparse's too), stdout, stderr."""
    try:
        status = main(list(args))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_main(argv: Sequence[str]) -> tuple[int, str, str]:
    """``llm-from-scratch ARGV`` in process with its own captured streams (for a test that
    Hypothesis repeats, where ``capsys`` cannot be used): the exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()
