"""``llm-from-scratch bench startup``: the chapter demo's process time against importing NumPy.

Both commands run as fresh processes, interleaved, with the same interpreter; the report is the
median of each and their ratio.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

DEMO_COMMAND = (sys.executable, "-m", "llm_from_scratch", "ch18")
NUMPY_COMMAND = (sys.executable, "-c", "import numpy")


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


def _wall_seconds(command: tuple[str, ...]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(runs: int) -> StartupResult:
    """Run both commands ``runs`` times each, interleaved, after one warm-up of each."""
    _wall_seconds(NUMPY_COMMAND)
    _wall_seconds(DEMO_COMMAND)
    numpy_times, demo_times = [], []
    for _ in range(runs):
        numpy_times.append(_wall_seconds(NUMPY_COMMAND))
        demo_times.append(_wall_seconds(DEMO_COMMAND))
    return StartupResult(statistics.median(numpy_times), statistics.median(demo_times), runs)


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
    count = runs if runs is not None else 21
    if count < 1:
        print("error: --repeats must be at least 1", file=sys.stderr)
        return 2
    print(f"timing {count} runs of each process...", file=sys.stderr, flush=True)
    sys.stdout.write(format_result(measure(count)))
    return 0
