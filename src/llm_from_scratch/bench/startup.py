"""``llm-from-scratch bench startup``: the chapter demo's process time against importing NumPy.

Both commands run as fresh processes, interleaved, with the same interpreter (see
:mod:`~llm_from_scratch.bench.processes`); the report is the median of each and their ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.bench.processes import (
    DEMO_COMMAND,
    NUMPY_COMMAND,
    interleaved_medians,
    run_timed,
)


@dataclass(frozen=True)
class StartupResult:
    """Median wall times (seconds) of the two processes."""

    numpy_import: float
    demo: float
    runs: int

    @property
    def ratio(self) -> float:
        """``demo / numpy_import``."""
        return self.demo / self.numpy_import


def measure(runs: int) -> StartupResult:
    """Run both commands ``runs`` times each, interleaved, after one warm-up of each."""
    numpy_import, demo = interleaved_medians((NUMPY_COMMAND, DEMO_COMMAND), runs)
    return StartupResult(numpy_import, demo, runs)


def format_result(result: StartupResult) -> str:
    """Two medians and their ratio."""
    return (
        f"python -c 'import numpy'      {result.numpy_import * 1e3:8.1f} ms (median of "
        f"{result.runs})\n"
        f"llm-from-scratch ch18         {result.demo * 1e3:8.1f} ms\n"
        f"ratio demo / import numpy     {result.ratio:8.2f}\n"
    )


def run(runs: int | None = None) -> int:
    """Measure and print; ``runs`` defaults to 21."""
    return run_timed(runs, 21, lambda count: format_result(measure(count)))
