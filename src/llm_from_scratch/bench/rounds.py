"""What every benchmark shares: actions taking turns in rounds (a slow spell of the machine falls
on all of them alike), their medians, our steps and PyTorch's, fresh processes, report rows."""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, TypeVar

Sample = TypeVar("Sample")

DEMO_COMMAND: Final = (sys.executable, "-m", "llm_from_scratch", "ch18")
"""The chapter demo, as a fresh process of this interpreter."""
NUMPY_COMMAND: Final = (sys.executable, "-c", "import numpy")
"""Importing NumPy alone, the floor every process benchmark compares with."""


@dataclass(frozen=True)
class Timed:
    """One measured action, and an untimed preparation run before each repetition."""

    action: Callable[[], object]
    prepare: Callable[[], object] | None = None

    def seconds(self) -> float:
        """Prepare, then time one run of the action (its result is freed after the timing)."""
        if self.prepare is not None:
            self.prepare()
        start = time.perf_counter()
        result = self.action()
        elapsed = time.perf_counter() - start
        del result
        return elapsed


def process(command: Sequence[str]) -> Timed:
    """One run of ``command`` as a fresh process, its output discarded."""
    return Timed(lambda: subprocess.run(command, stdout=subprocess.DEVNULL, check=True))


def in_turns(
    actions: Mapping[str, Callable[[], Sample]], rounds: int, progress: bool = False
) -> dict[str, list[Sample]]:
    """What each action returns in each of ``rounds`` rounds that run every action once, in
    order (with ``progress``, a line on standard error before each)."""
    samples: dict[str, list[Sample]] = {name: [] for name in actions}
    for index in range(rounds):
        for name, action in actions.items():
            if progress:
                print(f"round {index + 1}/{rounds}: {name}", file=sys.stderr, flush=True)
            samples[name].append(action())
    return samples


def round_robin_medians(
    actions: Mapping[str, Timed], repeats: int, warm_up: bool = True
) -> dict[str, float]:
    """Median wall seconds of each action over ``repeats`` rounds, after one untimed warm-up
    round unless the caller warmed them up."""
    samples = in_turns({name: timed.seconds for name, timed in actions.items()}, repeats + warm_up)
    return {name: statistics.median(found[warm_up:]) for name, found in samples.items()}


def grouped_medians(
    groups: Iterable[Callable[[], Mapping[str, Timed]]], repeats: int
) -> dict[str, float]:
    """:func:`round_robin_medians` of each group of actions in turn, each group's arrays freed
    before the next is built (a large one slows whatever runs beside it)."""
    medians: dict[str, float] = {}
    for group in groups:
        gc.collect()
        medians.update(round_robin_medians(group(), repeats))
    return medians


def imported_torch(notes: list[str]) -> Any:
    """PyTorch, its version and threads noted; None, noted, when it is not installed."""
    try:
        import torch
    except ImportError:
        notes.append("PyTorch is not installed: pip install 'llm-from-scratch[torch]'")
        return None
    notes.append(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")
    return torch


def step(backward: Callable[[], object], optimizer: Any, reset: Callable[[], object]) -> Timed:
    """A full step (ours or PyTorch's), ``backward()`` then ``optimizer.step()``, from a
    gradient ``reset``."""

    def full() -> None:
        backward()
        optimizer.step()

    return Timed(full, reset)


def our_steps(
    forward: Callable[[], Any],
    upstream: Any,
    leaf: Any,
    names: tuple[str, str],
    optimizers: Mapping[tuple[str, str], Any],
) -> dict[str, Timed]:
    """Our layer's ``forward`` and forward+backward from ``upstream`` (named by ``names``), and
    for each optimizer its plain step and our fused ``optimizer.backward_step(forward(),
    upstream)`` (named by its key), each from an empty gradient of ``leaf``."""

    def forward_backward() -> object:
        forward().backward_with_seed(upstream)
        return leaf.sparse_gradient

    def fused(optimizer: Any) -> None:
        optimizer.backward_step(forward(), upstream)

    actions = {names[0]: Timed(forward), names[1]: Timed(forward_backward, leaf.zero_grad)}
    for (plain, together), optimizer in optimizers.items():
        actions[plain] = step(forward_backward, optimizer, leaf.zero_grad)
        actions[together] = Timed(partial(fused, optimizer), leaf.zero_grad)
    return actions


def worker_json(command: Sequence[str], environment: Mapping[str, str] | None = None) -> Any:
    """The last line a worker process prints, read as JSON (raises if it fails)."""
    output = subprocess.run(
        command, env=environment, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def median_rows(medians: Mapping[str, float], unit: str, baseline: str | None = None) -> list[str]:
    """``name  1.234 ms  2.00x copy`` for each median (``us`` or ``ms``; a ratio with a
    ``baseline``)."""
    scale = 1e6 if unit == "us" else 1e3
    rows = []
    for name, seconds in medians.items():
        row = f"  {name:<22}{seconds * scale:>11.3f} {unit}"
        if baseline is not None:
            row += f"  {seconds / medians[baseline]:>7.2f}x {baseline}"
        rows.append(row)
    return rows


def ratio_rows(medians: Mapping[str, float], pairs: Iterable[tuple[str, str]]) -> list[str]:
    """``theirs / our ours = 2.50 (above 1: ours is faster)`` for each pair both measured."""
    return [
        f"  {theirs} / our {ours} = {medians[theirs] / medians[ours]:.2f} (above 1: ours is faster)"
        for theirs, ours in pairs
        if theirs in medians and ours in medians
    ]


def verdict(met: bool) -> str:
    """How a target came out: ``met`` or ``not met``."""
    return "met" if met else "not met"


def target_rows(title: str, measured: Iterable[tuple[str, float, float]]) -> list[str]:
    """``title``, then ``  label = 1.20 (>= 1.3: not met)`` for each ratio measured and the
    least it must reach (nothing when none was measured)."""
    rows = [
        f"  {label} = {ratio:.2f} (>= {least}: {verdict(ratio >= least)})"
        for label, ratio, least in measured
    ]
    return [title, *rows] if rows else []


def lines(rows: Iterable[str]) -> str:
    """The rows of a report, each ended by a line feed."""
    return "".join(f"{row}\n" for row in rows)


def process_report(medians: Mapping[str, float], ratios: Mapping[str, float], runs: int) -> str:
    """The medians of fresh processes in milliseconds (the first with the number of runs),
    then the ratios, in aligned columns."""
    width = max(map(len, [*medians, *ratios])) + 2
    rows = [f"{name:<{width}}{seconds * 1e3:8.1f} ms" for name, seconds in medians.items()]
    rows[0] += f" (median of {runs})"
    return lines([*rows, *(f"{name:<{width}}{ratio:8.2f}" for name, ratio in ratios.items())])


def run_cases(
    count: int,
    cases: Iterable[tuple[str, Callable[[int], Sample]]],
    report: Callable[[list[Sample]], str],
) -> int:
    """Measure each case ``count`` times after its progress line on standard error, and print
    the ``report`` of the results (0)."""
    results = []
    for progress, measure in cases:
        print(progress.format(count=count), file=sys.stderr, flush=True)
        results.append(measure(count))
    sys.stdout.write(report(results))
    return 0


def run_processes(
    commands: Mapping[str, Sequence[str]],
    count: int,
    report: Callable[[list[float], int], str],
    ready: Callable[[], bool] = lambda: True,
) -> int:
    """A process benchmark: check that it is ``ready`` (2 if not; it says why), time the
    commands taking turns ``count`` times, print the ``report`` (0)."""
    if not ready():
        return 2
    print(f"timing {count} runs of each process...", file=sys.stderr, flush=True)
    medians = round_robin_medians({name: process(c) for name, c in commands.items()}, count)
    sys.stdout.write(report(list(medians.values()), count))
    return 0
