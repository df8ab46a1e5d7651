"""The ``llm-from-scratch`` command line.

Every subcommand imports its chapter lazily so that ``--help`` and the demo start quickly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser (``--help`` works at every level)."""
    parser = argparse.ArgumentParser(
        prog="llm-from-scratch",
        description="Run the chapters of the LLM-from-scratch course.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    ch18 = commands.add_parser(
        "ch18",
        help="token embeddings: the chapter demo, its trace and its figure",
        description=(
            "Chapter 18, token embeddings. Without a subcommand, prints the chapter demo: "
            "a 4x2 table, IDs [2,1,2], the lookup, and the repeated row's summed gradient."
        ),
    )
    ch18_views = ch18.add_subparsers(dest="view", metavar="VIEW")
    ch18_views.add_parser(
        "trace",
        help="print the machine-readable trace token-embeddings-v1",
        description="Print the machine-readable trace token-embeddings-v1 of the chapter fixture.",
    )
    figure = ch18_views.add_parser(
        "figure",
        help="write the static HTML figure of the trace",
        description="Write a self-contained HTML figure of the token-embedding trace.",
    )
    from llm_from_scratch.figures.cli import configure_parser

    configure_parser(figure)

    bench = commands.add_parser(
        "bench",
        help="benchmarks (timings, not tests)",
        description="Benchmarks that print medians and ratios measured side by side in one run.",
    )
    bench_targets = bench.add_subparsers(dest="target", metavar="TARGET", required=True)
    embedding = bench_targets.add_parser(
        "embedding",
        help="row gather and row-sparse backward against allocate-and-copy and PyTorch",
        description=(
            "Time our embedding forward, forward+backward and full optimizer steps against "
            "allocating and copying the output once, and against PyTorch when it is installed, for "
            "(V, d, N) = (50257, 768, 8192), (128256, 4096, 4096) and (1000, 64, 65536) in "
            "float64 and float32. Needs about 14 GB of memory for the largest shape."
        ),
    )
    embedding.add_argument(
        "--quick", action="store_true", help="run one small shape in a few seconds"
    )
    embedding.add_argument(
        "--repeats", type=int, default=None, help="timed repetitions per measurement"
    )
    embedding.add_argument(
        "--optimizers",
        type=_optimizer_list,
        default=("sgd",),
        metavar="LIST",
        help=(
            "full training steps to time, comma-separated from sgd, adagrad, adam, or 'all' "
            "(default: sgd); each against PyTorch's dense and sparse steps"
        ),
    )
    startup = bench_targets.add_parser(
        "startup",
        help="the ch18 demo's process time against `python -c 'import numpy'`",
        description=(
            "Run `llm-from-scratch ch18` and `python -c 'import numpy'` as fresh processes, "
            "interleaved, and print their medians and ratio."
        ),
    )
    startup.add_argument(
        "--repeats", type=int, default=None, help="runs of each process (default 21)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "bench" and args.target == "startup":
        from llm_from_scratch.bench.startup import run as run_startup

        return run_startup(args.repeats)
    if args.command == "bench":
        from llm_from_scratch.bench.embedding import run

        return run(quick=args.quick, repeats=args.repeats, optimizers=args.optimizers)
    return _run_ch18(args)


def _optimizer_list(text: str) -> tuple[str, ...]:
    known = ("sgd", "adagrad", "adam")
    names = known if text == "all" else tuple(name.strip() for name in text.split(","))
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected 'all' or names from {', '.join(known)}, got {text!r}"
        )
    return tuple(dict.fromkeys(names))


def _run_ch18(args: argparse.Namespace) -> int:
    if args.view == "figure":
        from llm_from_scratch.figures.cli import run

        return run(args)
    from llm_from_scratch.demos import ch18_token_embeddings as chapter

    text = chapter.render_trace() if args.view == "trace" else chapter.render_demo()
    sys.stdout.write(text)
    return 0
