"""The command line run in this process, as the CLI tests run it."""

from __future__ import annotations

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
