"""Compare the lookup timings of this source tree with another one, side by side in one run.

``python -m llm_from_scratch.bench.versions BASELINE_SRC`` times the actions of
:func:`~llm_from_scratch.bench.embedding.measure_case` (``copy``, ``forward``, ``fwd+bwd``,
``sgd step``; PyTorch is kept out) for the shapes of ``bench embedding``, once with the package
under ``BASELINE_SRC`` (for example an export of an earlier commit's ``src``) and once with this
one, each in a fresh worker process, the two trees taking turns in every round. It prints, for
each action, the median over the rounds of each tree's medians and their ratio (this tree over
the baseline: above 1 is slower). The ``copy`` row times the same NumPy code in both trees, so
its ratio shows how much the machine itself drifted between the two.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from llm_from_scratch.bench.embedding import FULL_SHAPES, QUICK_SHAPES

DTYPES: Final = ("float64", "float32")
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
    environment = {**os.environ, "PYTHONPATH": str(source)}
    arguments = json.dumps([list(map(list, shapes)), list(DTYPES), repeats])
    completed = subprocess.run(
        [sys.executable, "-c", _WORKER, arguments],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    medians: list[dict[str, float]] = json.loads(completed.stdout)
    return medians


def case_names(shapes: Sequence[Sequence[int]]) -> list[str]:
    """``V x d, N=..., dtype`` for every shape and dtype, in the workers' order."""
    return [
        f"{rows}x{width} N={count} {dtype}" for rows, width, count in shapes for dtype in DTYPES
    ]


def compare(baseline: Path, rounds: int, repeats: int, quick: bool) -> tuple[Medians, Medians]:
    """Each tree's medians per case and action, over ``rounds`` rounds taken in turns."""
    shapes = QUICK_SHAPES if quick else FULL_SHAPES
    names = case_names(shapes)
    collected: tuple[Medians, Medians] = ({}, {})
    for round_index in range(rounds):
        order = (0, 1) if round_index % 2 == 0 else (1, 0)
        for tree in order:
            print(
                f"round {round_index + 1}: {'baseline' if tree == 0 else 'this tree'}",
                file=sys.stderr,
            )
            source = baseline if tree == 0 else THIS_TREE
            for name, medians in zip(names, measure_tree(source, shapes, repeats), strict=True):
                for action, seconds in medians.items():
                    collected[tree].setdefault(name, {}).setdefault(action, []).append(seconds)
    return collected


def format_comparison(baseline: Medians, current: Medians) -> str:
    """One line per case and action both trees measured: both medians in milliseconds and this
    tree's over the baseline's (an action only one tree has, such as a newer fused step, is
    left out)."""
    lines = []
    for name, actions in baseline.items():
        lines.append(name)
        for action, samples in actions.items():
            if action not in current[name]:
                continue
            old = statistics.median(samples)
            new = statistics.median(current[name][action])
            lines.append(
                f"  {action:<10}{old * 1e3:>10.3f} ms {new * 1e3:>10.3f} ms   {new / old:.3f}x"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llm_from_scratch.bench.versions")
    parser.add_argument("baseline", type=Path, help="the src folder of the tree to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="worker pairs (default 3)")
    parser.add_argument("--repeats", type=int, default=15, help="repetitions per worker")
    parser.add_argument("--quick", action="store_true", help="the one small shape only")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeats < 1:
        print("error: --rounds and --repeats must be at least 1", file=sys.stderr)
        return 2
    baseline, current = compare(args.baseline, args.rounds, args.repeats, args.quick)
    print("case / action   baseline   this tree   this tree / baseline")
    sys.stdout.write(format_comparison(baseline, current))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
