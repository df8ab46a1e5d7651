"""``llm-from-scratch bench startup``: the chapter demo's process time against importing NumPy.

Both commands run as fresh processes, interleaved, with the same interpreter; the report is the
median of each and their ratio. :func:`interleaved_medians` times fresh processes this way for
every process benchmark.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

DEMO_COMMAND: Final = (sys.executable, "-m", "llm_from_scratch", "ch18")
NUMPY_COMMAND: Final = (sys.executable, "-c", "import numpy")


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


def wall_seconds(command: Sequence[str]) -> float:
    """The wall time of one run of ``command`` as a fresh process (its output discarded)."""
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def interleaved_medians(commands: Sequence[Sequence[str]], runs: int) -> tuple[float, ...]:
    """Each command's median wall time over ``runs`` runs: one warm-up run of each, in order,
    then ``runs`` rounds that run every command once, in order."""
    for command in commands:
        wall_seconds(command)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for found, command in zip(times, commands, strict=True):
            found.append(wall_seconds(command))
    return tuple(statistics.median(found) for found in times)


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


def run_timed(
    runs: int | None,
    default_runs: int,
    report: Callable[[int], str],
    ready: Callable[[], bool] = lambda: True,
) -> int:
    """The common part of every process benchmark's ``run``: check the number of runs (exit
    status 2 below one), then that the benchmark is ``ready`` (2 if not; it says why), then
    print the ``report`` of that many runs (0).

    Args:
        runs: ``--repeats`` as given, or None for ``default_runs``.
        default_runs: the benchmark's own number of runs.
        report: measures that many runs and formats the result.
        ready: checks what the benchmark needs before any timing.
    """
    count = runs if runs is not None else default_runs
    if count < 1:
        print("error: --repeats must be at least 1", file=sys.stderr)
        return 2
    if not ready():
        return 2
    print(f"timing {count} runs of each process...", file=sys.stderr, flush=True)
    sys.stdout.write(report(count))
    return 0
