"""``llm-from-scratch bench neighbours``: loading the MiniLM table and answering one query, as a
fresh process, against the 2-second budget and against the chapter demo's process.

Three commands run as fresh processes, interleaved, with the same interpreter: one
``ch18 neighbours king`` query (imports, the tokenizer, the 30522x384 table through
``load_parameters``, the unit rows, the cosines to every row), the ``ch18`` demo, and
``python -c 'import numpy'``. The report is each one's median wall time and the query's ratio
to the budget and to the demo.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Final

from llm_from_scratch.bench.processes import (
    DEMO_COMMAND,
    NUMPY_COMMAND,
    interleaved_medians,
    run_timed,
)

QUERY_COMMAND: Final = (sys.executable, "-m", "llm_from_scratch", "ch18", "neighbours", "king")
#: The time one query may take, load included.
BUDGET_SECONDS: Final = 2.0


@dataclass(frozen=True)
class NeighboursResult:
    """Median wall times (seconds) of the three processes."""

    query: float
    demo: float
    numpy_import: float
    runs: int


def measure(runs: int) -> NeighboursResult:
    """Run the three commands ``runs`` times each, interleaved, after one warm-up of each."""
    commands = (QUERY_COMMAND, DEMO_COMMAND, NUMPY_COMMAND)
    query, demo, numpy_import = interleaved_medians(commands, runs)
    return NeighboursResult(query, demo, numpy_import, runs)


def format_result(result: NeighboursResult) -> str:
    """The three medians, and the query's ratios to the budget and to the demo."""
    return (
        f"llm-from-scratch ch18 neighbours king  {result.query * 1e3:8.1f} ms (median of "
        f"{result.runs})\n"
        f"llm-from-scratch ch18                  {result.demo * 1e3:8.1f} ms\n"
        f"python -c 'import numpy'               {result.numpy_import * 1e3:8.1f} ms\n"
        f"query / {BUDGET_SECONDS:.0f} s budget                  "
        f"{result.query / BUDGET_SECONDS:8.2f}\n"
        f"query / demo                           {result.query / result.demo:8.2f}\n"
    )


def run(runs: int | None = None) -> int:
    """Measure and print; ``runs`` defaults to 11. Needs ``make pretrained``."""
    return run_timed(runs, 11, lambda count: format_result(measure(count)), _query_runs)


def _query_runs() -> bool:
    """Whether one query succeeds; if not, its error output goes to standard error."""
    check = subprocess.run(QUERY_COMMAND, capture_output=True, text=True, check=False)
    if check.returncode != 0:
        sys.stderr.write(check.stderr)
    return check.returncode == 0
