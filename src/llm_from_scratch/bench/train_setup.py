"""``llm-from-scratch bench train --memory`` and ``--first-block``: a run's peak memory against
gensim's on many different words and on one and ten copies of a corpus, and the seconds from
``Run.train()`` to its first block, in fresh processes (``docs/performance.md``)."""

from __future__ import annotations

import random
import statistics
import string
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from llm_from_scratch.bench.rounds import in_turns, lines, verdict, worker_json
from llm_from_scratch.bench.train import (
    OURS,
    TrainBenchResult,
    checked_corpus,
    format_result,
    measure,
)

SYNTHETIC_REPEATS: Final = 6
"""How often each word of a synthetic corpus occurs (above the default ``--min-count`` 5)."""
MEMORY_TARGET: Final = 1.3
"""Our peak over gensim's on the synthetic corpus, at most."""
GROWTH_MARGIN: Final = 0.1
"""Our growth from one copy of Shakespeare to ten over gensim's, at most this much more."""
FIRST_BLOCK_TARGET: Final = 0.2
"""Seconds from ``Run.train()`` to its first block, at most."""


def synthetic_corpus(path: Path, words: int, repeats: int = SYNTHETIC_REPEATS) -> Path:
    """Write ``words`` different words of letters (``aab``, ``bab``, ...), each ``repeats``
    times in an order shuffled from seed 1, twelve to a line, to ``path``."""
    letters = string.ascii_lowercase
    found = []
    for index in range(words):
        number, word = index + len(letters) ** 2, ""  # at least three letters
        while number:
            number, digit = divmod(number, len(letters))
            word += letters[digit]
        found.append(word)
    text = found * repeats
    random.Random(1).shuffle(text)
    path.write_text("".join(" ".join(text[at : at + 12]) + "\n" for at in range(0, len(text), 12)))
    return path


@dataclass(frozen=True)
class MemoryCase:
    """One corpus and width, both trainers measured on it."""

    name: str
    result: TrainBenchResult

    def peak(self, trainer: str) -> float:
        """The median peak resident memory of ``trainer`` on the case's first thread count."""
        threads = self.result.measured[0].threads
        found = self.result.find(trainer, threads)
        assert found is not None  # both trainers run in every case
        return found.median_peak_memory


def measure_memory(
    corpus: Path, words: int, rounds: int, threads: int, scratch: Path
) -> list[MemoryCase]:
    """Ours (the default ``--method``) and gensim's, one epoch on ``threads``: ``words``
    different words at width 300, then one and ten copies of ``corpus`` at width 100."""
    synthetic = synthetic_corpus(scratch / "words.txt", words)
    cases = [
        (f"{words:,} words x{SYNTHETIC_REPEATS}, --dim 300", synthetic, 1, 300),
        (f"{corpus} x1, --dim 100", corpus, 1, 100),
        (f"{corpus} x10, --dim 100", corpus, 10, 100),
    ]
    trainers = (OURS[0], "gensim")
    return [
        MemoryCase(name, measure(path, 1, rounds, trainers, (threads,), copies, dim))
        for name, path, copies, dim in cases
    ]


def format_memory(cases: Sequence[MemoryCase]) -> str:
    """Each case's peaks and their ratio, then the growth from one copy to ten against the
    targets."""
    rows = [f"{'case':<44} {'ours MB':>8} {'gensim MB':>9} {'ours / gensim':>13}"]
    for case in cases:
        ours, gensim = case.peak(OURS[0]), case.peak("gensim")
        rows.append(
            f"{case.name:<44} {ours / 2**20:>8.0f} {gensim / 2**20:>9.0f} {ours / gensim:>12.2f}x"
        )
    synthetic, one, ten = cases
    ratio = synthetic.peak(OURS[0]) / synthetic.peak("gensim")
    ours_growth = ten.peak(OURS[0]) / one.peak(OURS[0])
    gensim_growth = ten.peak("gensim") / one.peak("gensim")
    grows = verdict(ours_growth <= gensim_growth + GROWTH_MARGIN)
    rows += [
        "",
        f"peak on {synthetic.name}, ours / gensim: {ratio:.2f}x (target <= {MEMORY_TARGET}x): "
        f"{verdict(ratio <= MEMORY_TARGET)}",
        f"growth from 1 copy to 10: ours {ours_growth:.2f}x, gensim {gensim_growth:.2f}x "
        f"(target: ours <= gensim's + {GROWTH_MARGIN}): {grows}",
    ]
    return lines(rows)


FIRST_BLOCK_SCRIPT: Final = """
import json, sys, time
from pathlib import Path
from llm_from_scratch.training import Run, TrainOptions
from llm_from_scratch.training import run as module

marks = {}
def marking(name, function):
    def marked(*args):
        found = function(*args)
        marks.setdefault(name, time.perf_counter())
        return found
    return marked
module.load_compiled_loop = marking("loaded", module.load_compiled_loop)
module.initial_tables = marking("tables", module.initial_tables)
block = module._Trainer.block
def first(self, job):
    marks.setdefault("first block", time.perf_counter())
    found = block(self, job)
    marks.setdefault("first block trained", time.perf_counter())
    return found
module._Trainer.block = first
corpus, output, threads = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
run = Run.start(TrainOptions(corpus=corpus, output=output, epochs=1, threads=threads), threads)
called = time.perf_counter()
run.train()
found = {name: max(0.0, at - called) for name, at in marks.items()}
print(json.dumps({"start": called - started, **found}))
"""
"""A fresh process: ``Run.start``, then ``Run.train()``, with the seconds from its call until
the compiled loop was loaded (0: during ``Run.start``), the tables drawn, and the first block
taken by a training thread and trained, as JSON."""


def first_block_seconds(corpus: Path, threads: int, output: Path) -> dict[str, float]:
    """One fresh process of :data:`FIRST_BLOCK_SCRIPT`: its marks in seconds."""
    found: dict[str, float] = worker_json(
        [sys.executable, "-c", FIRST_BLOCK_SCRIPT, str(corpus), str(output), str(threads)]
    )
    return found


def format_first_block(samples: Sequence[dict[str, float]], corpus: Path) -> str:
    """The medians of each mark over the runs, and the first block against its target."""
    median = {name: statistics.median(sample[name] for sample in samples) for name in samples[0]}
    first = verdict(median["first block"] <= FIRST_BLOCK_TARGET)
    return lines(
        [
            f"Run.start and Run.train() on {corpus}, median of {len(samples)} fresh processes "
            f"(after one that fills Numba's cache):",
            f"  Run.start (options, vocabulary pass, then loading the compiled loop): "
            f"{median['start']:.3f} s",
            f"  Run.train(): compiled loop loaded {median['loaded']:.3f} s, tables drawn "
            f"{median['tables']:.3f} s, first block taken {median['first block']:.3f} s "
            f"(target <= {FIRST_BLOCK_TARGET} s: {first}), "
            f"trained {median['first block trained']:.3f} s",
        ]
    )


def run(
    corpus: Path | None,
    epochs: int,
    repeats: int,
    trainers: Sequence[str],
    threads: Sequence[int],
    copies: int,
    memory: bool,
    first_block: bool,
    words: int,
) -> int:
    """``bench train``, ``repeats`` rounds (``corpus`` None: the fetched Shakespeare texts):
    :func:`~llm_from_scratch.bench.train.measure`, or with ``memory`` or ``first_block`` those
    measures."""
    path = checked_corpus(corpus)
    if not (memory or first_block):
        sys.stdout.write(format_result(measure(path, epochs, repeats, trainers, threads, copies)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-train-setup-") as scratch:
        try:
            if memory:
                found = measure_memory(path, words, repeats, max(threads), Path(scratch))
                sys.stdout.write(format_memory(found))
                return 0
            output = Path(scratch) / "out"
            first_block_seconds(path, max(threads), output)  # fills the cache
            runs = {"first block": lambda: first_block_seconds(path, max(threads), output)}
            sys.stdout.write(format_first_block(in_turns(runs, repeats)["first block"], path))
        except subprocess.CalledProcessError as error:
            raise ChildProcessError(str(error)) from error
    return 0
