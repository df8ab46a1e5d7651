"""``ch18 train`` with random options and corpora, under a 2 GiB address-space limit: every run
ends in success with both files, or one error line with status 2 (or 1), never a traceback,
never a table without its tokenizer (``tests/train/cli_under_cap.py`` runs the cases in a
process of its own, under ``ulimit -v``). 100 cases in the quick run, 5,000 in the slow one."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).with_name("cli_under_cap.py")
CAP = 2 << 30


def run_cases(count: int) -> tuple[int, str]:
    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    completed = subprocess.run(
        [sys.executable, str(RUNNER), str(count)],
        capture_output=True,
        text=True,
        preexec_fn=capped,
        check=False,
        cwd=RUNNER.parent,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    ran, statuses = completed.stdout.split(maxsplit=1)
    return int(ran), statuses


def test_a_hundred_hostile_runs_end_in_one_line_or_both_files() -> None:
    ran, statuses = run_cases(100)
    assert ran >= 100 and "0:" in statuses and "2:" in statuses


@pytest.mark.slow
def test_five_thousand_hostile_runs_end_in_one_line_or_both_files() -> None:
    ran, _ = run_cases(5000)
    assert ran >= 5000
