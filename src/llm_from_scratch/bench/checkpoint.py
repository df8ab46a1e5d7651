"""``llm-from-scratch bench checkpoint``: the memory and time of saving and loading a table, ours
and ``safetensors.numpy``'s, each action in a fresh worker (``python -m
llm_from_scratch.bench.checkpoint worker ...``) so that its peak memory is its own."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np

from llm_from_scratch.bench.rounds import lines, worker_json
from llm_from_scratch.files import peak_memory_bytes, resident_memory_bytes

FULL_SHAPE: Final = (128256, 4096)
QUICK_SHAPE: Final = (8192, 1024)
ACTIONS: Final = {
    "save_parameters": "ours",
    "load_parameters": "ours",
    "load_parameters(into=)": "ours",
    "safetensors.numpy.save_file": "theirs",
    "safetensors.numpy.load_file": "ours",
}
"""Each action, and the file it writes or reads."""
TARGET: Final = 1.5
"""The peak resident memory a save or a load may reach, as a multiple of the table's bytes."""

_FILL_CHUNK: Final = 1 << 22
_NAME: Final = "token_embedding.weight"


@dataclass(frozen=True)
class CheckpointMeasurement:
    """What one worker measured for one action on a float32 table of ``table_bytes``."""

    action: str
    table_bytes: int
    seconds: float
    traced_peak_bytes: int
    peak_rss_bytes: int
    rss_before_bytes: int

    @property
    def peak_rss_ratio(self) -> float:
        """The process's peak resident memory over the table's bytes."""
        return self.peak_rss_bytes / self.table_bytes


def filled_table(rows: int, columns: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A float32 table of uniform values in ``[0, 1)``, filled in place in chunks."""
    table = np.empty((rows, columns), dtype=np.float32)
    flat = table.reshape(-1)
    generator = np.random.default_rng(18)
    for start in range(0, flat.size, _FILL_CHUNK):
        generator.random(dtype=np.float32, out=flat[start : start + _FILL_CHUNK])
    return table


def _action(name: str, path: str, rows: int, columns: int) -> Callable[[], object]:
    """The call to measure; a save builds its table first (outside the measurement)."""
    from safetensors.numpy import load_file, save_file

    from llm_from_scratch.autograd.value import parameter_from_owned_array
    from llm_from_scratch.nn import NamedParameter, load_parameters, save_parameters

    if name == "load_parameters":
        return lambda: load_parameters(path)
    if name == "safetensors.numpy.load_file":
        return lambda: load_file(path)
    table = filled_table(rows, columns)
    if name == "safetensors.numpy.save_file":
        return lambda: save_file({_NAME: table}, path)
    parameter = NamedParameter.from_value(_NAME, parameter_from_owned_array(table))
    if name == "load_parameters(into=)":
        return lambda: load_parameters(path, into=[parameter])
    return lambda: save_parameters(path, [parameter])


def measure_in_this_process(name: str, path: str, rows: int, columns: int) -> CheckpointMeasurement:
    """Run one action here and measure it (the worker's job)."""
    action = _action(name, path, rows, columns)
    rss_before = resident_memory_bytes()
    tracemalloc.start()
    start = time.perf_counter()
    result = action()
    seconds = time.perf_counter() - start
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return CheckpointMeasurement(
        name, rows * columns * 4, seconds, traced_peak, peak_memory_bytes(), rss_before
    )


def worker_main(argv: Sequence[str]) -> int:
    """``worker ACTION PATH ROWS COLUMNS``: measure and print the measurement as JSON."""
    if len(argv) != 5 or argv[0] != "worker" or argv[1] not in ACTIONS:
        print(f"usage: worker {{{','.join(ACTIONS)}}} PATH ROWS COLUMNS", file=sys.stderr)
        return 2
    name, path, rows, columns = argv[1], argv[2], int(argv[3]), int(argv[4])
    print(json.dumps(asdict(measure_in_this_process(name, path, rows, columns))))
    return 0


def measure_all(rows: int, columns: int, folder: str) -> list[CheckpointMeasurement]:
    """Every action in turn, each in a fresh worker, on files in ``folder``."""
    command = [sys.executable, "-m", "llm_from_scratch.bench.checkpoint", "worker"]
    measurements = []
    for name, file in ACTIONS.items():
        path = os.path.join(folder, f"{file}.safetensors")
        print(
            f"measuring {name} on a {rows}x{columns} float32 table...", file=sys.stderr, flush=True
        )
        found = worker_json([*command, name, path, str(rows), str(columns)])
        measurements.append(CheckpointMeasurement(**found))
    return measurements


def format_measurements(rows: int, columns: int, measurements: list[CheckpointMeasurement]) -> str:
    """A plain-text table of the measurements and the targets they meet or miss."""
    table_bytes = rows * columns * 4
    report = [
        f"{rows}x{columns} float32 table: {table_bytes:,} bytes ({table_bytes / 2**30:.2f} GiB); "
        "each action in a fresh process",
        f"  {'action':<30}{'seconds':>9}{'traced peak':>14}{'peak RSS':>12}{'RSS before':>12}",
        *(
            f"  {item.action:<30}{item.seconds:>9.2f}"
            f"{item.traced_peak_bytes / table_bytes:>13.3f}x"
            f"{item.peak_rss_ratio:>11.3f}x{item.rss_before_bytes / table_bytes:>11.3f}x"
            for item in measurements
        ),
        "  (traced peak, peak RSS and RSS before: multiples of the table's bytes)",
    ]
    if (rows, columns) != FULL_SHAPE:
        report.append(
            f"  the {TARGET}x targets are for the {FULL_SHAPE[0]}x{FULL_SHAPE[1]} table, where "
            "the interpreter's own memory is small beside it: run without --quick"
        )
        return lines(report)
    for item in measurements:
        if item.action in ("save_parameters", "load_parameters"):
            verdict = "met" if item.peak_rss_ratio < TARGET else "NOT met"
            report.append(
                f"  target: {item.action} peak RSS < {TARGET}x table: {verdict} "
                f"({item.peak_rss_ratio:.3f}x)"
            )
    return lines(report)


def run(quick: bool = False, directory: str | None = None) -> int:
    """Measure every action, print progress to stderr and the table to stdout."""
    rows, columns = QUICK_SHAPE if quick else FULL_SHAPE
    with tempfile.TemporaryDirectory(prefix="bench-checkpoint-", dir=directory) as folder:
        measurements = measure_all(rows, columns, folder)
    sys.stdout.write(format_measurements(rows, columns, measurements))
    return 0


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
