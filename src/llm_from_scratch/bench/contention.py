"""``llm-from-scratch bench contention``: each training method's row writes replayed from its
very draws (``block_pairs``, ``block_windows``), counted on the hottest rows, its compiled loop
timed on one thread, and the speed-up :meth:`WriteCounts.speed_up` predicts on many cores."""

from __future__ import annotations

import math
import sys
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.bench.rounds import lines
from llm_from_scratch.bench.train import checked_corpus
from llm_from_scratch.training.corpus import corpus_files, count_words, pieces
from llm_from_scratch.training.kernels import SENTENCE_END
from llm_from_scratch.training.run import METHOD_STEPS
from llm_from_scratch.training.skipgram import (
    NoiseTable,
    SkipGram,
    block_pairs,
    block_state,
    keep_probabilities,
)
from llm_from_scratch.training.vocabulary import DEFAULT_MIN_COUNT, Vocabulary
from llm_from_scratch.training.windows import block_windows

HOT_ROWS: Final = 100
"""How many of the most written rows of a table count as hot."""
CORES: Final = (8, 16, 64)
LINE_BYTES: Final = 64
METHODS: Final = ("pairs", "hogbatch")


@dataclass(frozen=True)
class WriteCounts:
    """One method on one corpus: the words read, the pairs, each row's writes in each table, the
    seconds its compiled loop took on one thread over the same blocks and the pairs it
    trained."""

    method: str
    words: int
    pairs: int
    input_writes: npt.NDArray[np.int64]
    context_writes: npt.NDArray[np.int64]
    seconds: float
    compiled_pairs: int

    def per_thousand_words(self, count: float) -> float:
        """``count`` per 1,000 words read."""
        return 1000 * count / max(self.words, 1)

    def hot(self, writes: npt.NDArray[np.int64], rows: int = HOT_ROWS) -> int:
        """The writes to the ``rows`` most written rows of a table."""
        return int(np.sort(writes)[::-1][:rows].sum())

    @property
    def words_per_second(self) -> float:
        """The compiled loop's speed on one thread."""
        return self.words / self.seconds if self.seconds > 0 else math.nan

    def speed_up(self, cores: int, dim: int, line_ns: float) -> float:
        """The speed-up on ``cores`` cores: each write to one of the :data:`HOT_ROWS` hottest
        context rows finds it last written by another core with probability ``(P - 1) / P`` and
        moves its ``ceil(4 d / 64)`` cache lines, ``line_ns`` each; the hottest row moves at most
        once per ``line_ns``, whatever the cores (input rows are written in bursts: left out)."""
        hot = self.per_thousand_words(self.hot(self.context_writes))
        lines_per_row = math.ceil(4 * dim / LINE_BYTES)
        alone = 1000 / self.words_per_second  # seconds per 1,000 words on one core
        moving = hot * (cores - 1) / cores * lines_per_row * line_ns * 1e-9
        hottest = self.per_thousand_words(int(self.context_writes.max()))
        ceiling = 1000 / (hottest * line_ns * 1e-9) / self.words_per_second if hottest else math.inf
        return min(cores * alone / (alone + moving), ceiling)


def _blocks(corpus: Path, words: int) -> tuple[Vocabulary, list[npt.NDArray[np.int32]], int]:
    """The vocabulary of ``corpus`` and its first blocks holding at least ``words`` words."""
    files, counts = count_words(corpus_files(corpus))
    vocabulary = Vocabulary.from_counts(counts, DEFAULT_MIN_COUNT)
    blocks, read = [], 0
    for file in files:
        for piece in pieces(file):
            tokens = vocabulary.tokens(piece.text)
            blocks.append(tokens)
            read += tokens.size - int(np.count_nonzero(tokens == SENTENCE_END))
            if read >= words:
                return vocabulary, blocks, read
    return vocabulary, blocks, read


def count_writes(
    corpus: Path, method: str, words: int, window: int = 5, negatives: int = 5
) -> WriteCounts:
    """Count ``method``'s row writes on the first ``words`` words of ``corpus`` (one epoch,
    seed 1) and time its compiled loop on one thread over the same blocks."""
    vocabulary, blocks, read = _blocks(corpus, words)
    counts = np.asarray(vocabulary.counts)
    keep, noise = keep_probabilities(counts), NoiseTable.of(counts)
    size = vocabulary.vocabulary_size
    written: tuple[array[int], array[int]] = (array("q"), array("q"))
    sampler = block_pairs if method == "pairs" else block_windows
    for number, tokens in enumerate(blocks):
        state = block_state(1, 0, number)
        drawn: Iterator[Any] = sampler(tokens, keep, noise, window, negatives, state, 0)
        for sample in drawn:  # the rows each step writes, as the compiled loop writes them
            written[0].extend((sample.centre,) if method == "pairs" else sample.inputs)
            written[1].extend(sample.targets)
    input_writes, context_writes = (np.bincount(rows, minlength=size) for rows in written)
    pairs = len(written[0])
    seconds, compiled = _timed(method, blocks, (keep, noise), (window, negatives), size)
    return WriteCounts(method, read, pairs, input_writes, context_writes, seconds, compiled)


def _timed(
    method: str,
    blocks: list[npt.NDArray[np.int32]],
    samples: tuple[Any, NoiseTable],
    sizes: tuple[int, int],
    rows: int,
) -> tuple[float, int]:
    """The compiled loop's seconds of this thread's processor time over ``blocks`` (after one
    warm-up block), the time it would take alone on an idle core, and the pairs it trained."""
    compiled = METHOD_STEPS[method][0]
    keep, noise = samples
    tables = SkipGram.new(rows, 100, 1).arrays()
    totals = np.zeros(2)

    def train(number: int, tokens: npt.NDArray[np.int32]) -> None:
        compiled(
            tokens, keep, noise.accept, noise.alias, *tables, *sizes, block_state(1, 0, number),
            (0.025, 0.0001), 0, 10**9, totals,
        )  # fmt: skip

    train(0, blocks[0][:1000])
    totals[:] = 0
    start = time.thread_time()
    for number, tokens in enumerate(blocks):
        train(number, tokens)
    return time.thread_time() - start, int(totals[1])


def format_counts(found: list[WriteCounts], dim: int, line_ns: float) -> str:
    """One line per method: writes per 1,000 words, on the hot rows, the hottest row, the
    one-thread speed and the predicted speed-ups."""
    rows = [
        f"writes per 1,000 words read ({found[0].words:,} words, window 5, 5 negatives); hot: "
        f"the {HOT_ROWS} most written rows of a table; prediction: {line_ns:g} ns per cache "
        f"line moved, rows of {dim} float32",
        f"{'method':<9} {'pairs':>6} {'context':>8} {'hot ctx':>8} {'input':>7} {'hot in':>7} "
        f"{'hot ctx1':>8} {'words/s 1t':>11} "
        + " ".join(f"{f'x{cores} cores':>10}" for cores in CORES),
    ]
    for counts in found:
        per = counts.per_thousand_words
        hottest = int(counts.context_writes.max())
        rows.append(
            f"{counts.method:<9} {per(counts.pairs):>6.0f} "
            f"{per(int(counts.context_writes.sum())):>8.0f} "
            f"{per(counts.hot(counts.context_writes)):>8.0f} "
            f"{per(int(counts.input_writes.sum())):>7.0f} "
            f"{per(counts.hot(counts.input_writes)):>7.0f} {per(hottest):>8.1f} "
            f"{counts.words_per_second:>11,.0f} "
            + " ".join(f"{counts.speed_up(cores, dim, line_ns):>10.1f}" for cores in CORES)
        )
    return lines(rows)


def run(corpus: Path | None, words: int, line_ns: float) -> int:
    """Count and print (``corpus`` None: the fetched Shakespeare texts).

    Raises:
        WordedError: the corpus is missing (``corpus.missing``, with how to fetch it).
    """
    path = checked_corpus(corpus)
    found = [count_writes(path, method, words) for method in METHODS]
    sys.stdout.write(format_counts(found, 100, line_ns))
    return 0
