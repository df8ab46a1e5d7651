"""``llm-from-scratch bench versions BASELINE_SRC``: the lookup timings of ``measure_case`` (no
PyTorch) in fresh workers of this tree and another, taking turns, and this tree's medians over
the baseline's (the ``copy`` row, the same code in both, shows the machine's drift)."""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from llm_from_scratch.bench.embedding import DTYPES, FULL_SHAPES, QUICK_SHAPES
from llm_from_scratch.bench.rounds import worker_json

THIS_TREE: Final = Path(__file__).resolve().parents[2]

_WORKER: Final = """
import json, sys
sys.modules["torch"] = None  # our actions only
from llm_from_scratch.bench.embedding import measure_case
shapes, dtypes, repeats = json.loads(sys.argv[1])
print(json.dumps([
    measure_case(rows, width, count, dtype, repeats).medians
    for rows, width, count in shapes for dtype in dtypes
]))
"""

Medians = dict[str, dict[str, list[float]]]  # case -> action -> one median per round


def measure_tree(
    source: Path, shapes: Sequence[Sequence[int]], repeats: int
) -> list[dict[str, float]]:
    """One fresh worker's medians for every shape and dtype, with the package from ``source``."""
    arguments = json.dumps([list(map(list, shapes)), list(DTYPES), repeats])
    environment = {**os.environ, "PYTHONPATH": str(source)}
    medians: list[dict[str, float]] = worker_json(
        [sys.executable, "-c", _WORKER, arguments], environment
    )
    return medians


def compare(baseline: Path, rounds: int, repeats: int, quick: bool) -> tuple[Medians, Medians]:
    """Each tree's medians per case and action, over ``rounds`` rounds taken in turns (the
    tree that goes first alternates)."""
    shapes = QUICK_SHAPES if quick else FULL_SHAPES
    names = [
        f"{rows}x{width} N={count} {dtype}" for rows, width, count in shapes for dtype in DTYPES
    ]
    collected: tuple[Medians, Medians] = ({}, {})
    for round_index in range(rounds):
        for tree in (0, 1) if round_index % 2 == 0 else (1, 0):
            label = "baseline" if tree == 0 else "this tree"
            print(f"round {round_index + 1}: {label}", file=sys.stderr)
            source = baseline if tree == 0 else THIS_TREE
            for name, medians in zip(names, measure_tree(source, shapes, repeats), strict=True):
                for action, seconds in medians.items():
                    collected[tree].setdefault(name, {}).setdefault(action, []).append(seconds)
    return collected


def format_comparison(baseline: Medians, current: Medians) -> str:
    """Both medians in milliseconds and this tree's over the baseline's, for each case and
    action both trees measured."""
    lines = []
    for name, actions in baseline.items():
        lines.append(name)
        for action, samples in actions.items():
            if action in current[name]:
                old = statistics.median(samples)
                new = statistics.median(current[name][action])
                lines.append(
                    f"  {action:<10}{old * 1e3:>10.3f} ms {new * 1e3:>10.3f} ms   {new / old:.3f}x"
                )
    return "\n".join(lines) + "\n"


def run(baseline: Path, rounds: int, repeats: int, quick: bool) -> int:
    """Compare and print, ``rounds`` worker pairs of ``repeats`` repetitions each."""
    found, current = compare(baseline, rounds, repeats, quick)
    print("case / action   baseline   this tree   this tree / baseline")
    sys.stdout.write(format_comparison(found, current))
    return 0
