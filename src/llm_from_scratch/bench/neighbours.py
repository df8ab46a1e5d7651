"""``llm-from-scratch bench neighbours``: one ``ch18 neighbours king`` query as a fresh process
(load included) against the 2-second budget, the chapter demo and importing NumPy, in turns."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from llm_from_scratch.bench.rounds import DEMO_COMMAND, NUMPY_COMMAND, process_report, run_processes

QUERY_COMMAND: Final = (sys.executable, "-m", "llm_from_scratch", "ch18", "neighbours", "king")
BUDGET_SECONDS: Final = 2.0
"""The time one query may take, load included."""
COMMANDS: Final = {
    "llm-from-scratch ch18 neighbours king": QUERY_COMMAND,
    "llm-from-scratch ch18": DEMO_COMMAND,
    "python -c 'import numpy'": NUMPY_COMMAND,
}


@dataclass(frozen=True)
class NeighboursResult:
    """Median wall times (seconds) of the three processes."""

    query: float
    demo: float
    numpy_import: float
    runs: int


def format_result(result: NeighboursResult) -> str:
    """The three medians, and the query's ratios to the budget and to the demo."""
    medians = dict(zip(COMMANDS, (result.query, result.demo, result.numpy_import), strict=True))
    ratios = {
        f"query / {BUDGET_SECONDS:.0f} s budget": result.query / BUDGET_SECONDS,
        "query / demo": result.query / result.demo,
    }
    return process_report(medians, ratios, result.runs)


def run(repeats: int) -> int:
    """Measure and print, ``repeats`` runs of each process. Needs ``make pretrained``."""
    return run_processes(COMMANDS, repeats, _report, _query_runs)


def _report(medians: Sequence[float], runs: int) -> str:
    query, demo, numpy_import = medians
    return format_result(NeighboursResult(query, demo, numpy_import, runs))


def _query_runs() -> bool:
    """Whether one query succeeds; if not, its error output goes to standard error."""
    check = subprocess.run(QUERY_COMMAND, capture_output=True, text=True, check=False)
    sys.stderr.write(check.stderr if check.returncode else "")
    return check.returncode == 0
