"""What every process benchmark shares: fresh processes timed interleaved, their medians, and the
``run`` that checks ``--repeats`` and prints the report.

Each command runs as a fresh process with its output discarded. Every command runs once to warm
up, then the commands take turns, so that a slow spell of the machine falls on all of them.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Final

DEMO_COMMAND: Final = (sys.executable, "-m", "llm_from_scratch", "ch18")
"""The chapter demo, as a fresh process of this interpreter."""
NUMPY_COMMAND: Final = (sys.executable, "-c", "import numpy")
"""Importing NumPy alone, the floor every process benchmark compares with."""


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


def run_timed(
    runs: int | None,
    default_runs: int,
    report: Callable[[int], str],
    ready: Callable[[], bool] = lambda: True,
) -> int:
    """A process benchmark's ``run``: check the number of runs (exit status 2 below one), then
    that the benchmark is ``ready`` (2 if not; it says why), then print the ``report`` of that
    many runs (0).

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
