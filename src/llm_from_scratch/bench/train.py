"""``llm-from-scratch bench train``: ``ch18 train`` against gensim's word2vec and PyTorch
(:mod:`~llm_from_scratch.bench.train_runners`), each a fresh process on one corpus and settings,
taking turns in every round (the report: ``docs/performance.md``).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

import numpy as np
from safetensors.numpy import load_file

from llm_from_scratch.bench.rounds import checked_count, in_turns, lines
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    group_cosines,
    present_groups,
)
from llm_from_scratch.demos.ch18_token_embeddings.train import REPORT_GROUPS, VocabularyPieces
from llm_from_scratch.errors import CorpusError, WordedError
from llm_from_scratch.nn import Embedding
from llm_from_scratch.training.corpus import corpus_files, count_words
from llm_from_scratch.training.vocabulary import UNKNOWN_TOKEN, Vocabulary

TRAINERS: Final = ("ours", "gensim", "torch")
THREADS: Final = (1, 2)


@dataclass(frozen=True)
class Measured:
    """One trainer on one thread count: its runs' wall times and peak memory, and the group
    measure of its last run's table."""

    trainer: str
    threads: int
    seconds: tuple[float, ...]
    peak_memory: tuple[int, ...]
    words_per_run: int
    within: float
    between: float

    @property
    def median_seconds(self) -> float:
        """The median wall time of the whole process."""
        return statistics.median(self.seconds)

    @property
    def median_peak_memory(self) -> float:
        """The median peak resident set of the whole process, in bytes."""
        return statistics.median(self.peak_memory)

    @property
    def words_per_second(self) -> float:
        """Corpus words read times epochs, per second of the whole process."""
        return self.words_per_run / self.median_seconds

    @property
    def separation(self) -> float:
        """Mean cosine inside the groups minus between them."""
        return self.within - self.between


@dataclass(frozen=True)
class TrainBenchResult:
    """Every trainer and thread count measured, with the settings."""

    corpus: Path
    copies: int
    epochs: int
    rounds: int
    measured: tuple[Measured, ...]

    def find(self, trainer: str, threads: int) -> Measured | None:
        """The measurement of ``trainer`` on ``threads``, if it ran."""
        case = (trainer, threads)
        return next((item for item in self.measured if (item.trainer, item.threads) == case), None)


def group_measure(vectors: np.ndarray, words: Sequence[str]) -> tuple[float, float]:
    """The mean over the report's groups (their words that have a row) of the mean cosine
    inside a group and to the other groups."""
    known = tuple(words) if words and words[-1] == UNKNOWN_TOKEN else (*words, UNKNOWN_TOKEN)
    pieces = VocabularyPieces(Vocabulary(known, np.zeros(len(known), dtype=np.int64)))
    layer = Embedding.from_pretrained(np.asarray(vectors, dtype=np.float32))
    found = group_cosines(CosineTable.of(layer), pieces, present_groups(pieces, REPORT_GROUPS))
    within = float(np.mean([group.within for group in found]))
    return within, float(np.mean([group.between for group in found]))


def word_list(tokenizer: Path) -> list[str]:
    """The word of each ID of a ``tokenizer.json`` that ``ch18 train`` wrote."""
    vocabulary = json.loads(tokenizer.read_text(encoding="utf-8"))
    by_id = sorted(vocabulary["model"]["vocab"].items(), key=lambda item: item[1])
    return [word for word, _ in by_id]


LAUNCHER: Final = """
import os, sys, time
start = time.perf_counter()
quiet = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
print(seconds, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""
"""A small process that runs a command, its output discarded, and prints the command's wall
time, its ``ru_maxrss`` from ``wait4`` and its exit status. Linux counts in a new program's peak
the peak of the process that started it (``exec`` keeps the old memory's high-water mark), so
the launcher, not the benchmark holding the tables it measured, starts each trainer."""


def timed_process(command: Sequence[str]) -> tuple[float, int]:
    """Run ``command`` as a fresh process, its output discarded: its wall time and its own peak
    resident set in bytes (from ``wait4``, in :data:`LAUNCHER`).

    Raises:
        ChildProcessError: it exited with a status other than 0 (its standard error is printed).
    """
    with tempfile.TemporaryFile() as errors:
        launched = [sys.executable, "-c", LAUNCHER, *command]
        found = subprocess.run(launched, stdout=subprocess.PIPE, stderr=errors, check=False)
        if found.returncode != 0 or not found.stdout.strip():
            errors.seek(0)
            sys.stderr.write(errors.read().decode("utf-8", "replace"))
            raise ChildProcessError(f"{' '.join(command)} could not be run")
        seconds, maxrss, status = found.stdout.split()
        if int(status) != 0:
            errors.seek(0)
            sys.stderr.write(errors.read().decode("utf-8", "replace"))
            raise ChildProcessError(f"{' '.join(command)} exited with {int(status)}")
    return float(seconds), int(maxrss) * (1 if sys.platform == "darwin" else 1024)


def copied_corpus(corpus: Path, copies: int, folder: Path) -> Path:
    """``corpus`` ``copies`` times over: ``folder/copy-N/`` holds a symbolic link to each text."""
    files = [file.path for file in corpus_files(corpus)]
    for copy in range(1, copies + 1):
        target = folder / f"copy-{copy}"
        target.mkdir(parents=True)
        for index, path in enumerate(files):
            (target / f"{index:05d}-{path.name}").symlink_to(path.resolve())
    return folder


def _trained(
    trainer: str, threads: int, corpus: Path, epochs: int, output: Path, dim: int = 100
) -> tuple[float, int, float, float]:
    """One run of ``trainer``: its wall time, peak memory and the group measure of its table."""
    output = output / f"{trainer}-{threads}"
    given = ["--corpus", str(corpus), "--output", str(output), "--epochs", str(epochs)]
    given += ["--threads", str(threads), "--seed", "1", "--dim", str(dim)]
    if trainer == "ours":
        command = [sys.executable, "-m", "llm_from_scratch", "ch18", "train", *given]
    else:
        command = [sys.executable, "-m", "llm_from_scratch.bench.train_runners", trainer, *given]
    seconds, memory = timed_process(command)
    if trainer == "ours":
        vectors = load_file(str(output / "table.safetensors"))["token_embedding.weight"]
        words = word_list(output / "tokenizer.json")
    else:
        vectors = np.load(output / "vectors.npy")
        words = json.loads((output / "words.json").read_text(encoding="utf-8"))
    return seconds, memory, *group_measure(vectors, words)


def measure(
    corpus: Path,
    epochs: int,
    rounds: int,
    trainers: Sequence[str] = TRAINERS,
    threads: Sequence[int] = THREADS,
    copies: int = 1,
    dim: int = 100,
) -> TrainBenchResult:
    """Run every trainer on every thread count ``rounds`` times, taking turns in each round,
    on ``copies`` copies of ``corpus``, with tables ``dim`` wide."""
    cases = {
        f"{trainer}, {count} threads": (trainer, count) for count in threads for trainer in trainers
    }
    with tempfile.TemporaryDirectory(prefix="bench-train-") as scratch:
        source = corpus if copies == 1 else copied_corpus(corpus, copies, Path(scratch) / "c")
        words = sum(count_words(corpus_files(source))[1].values()) * epochs
        runs = {
            name: partial(_trained, *case, source, epochs, Path(scratch), dim)
            for name, case in cases.items()
        }
        found = in_turns(runs, rounds, progress=True)
    measured = []
    for name, samples in found.items():
        seconds, memory, within, between = zip(*samples, strict=True)
        measured.append(Measured(*cases[name], seconds, memory, words, within[-1], between[-1]))
    return TrainBenchResult(corpus, copies, epochs, rounds, tuple(measured))


def format_result(result: TrainBenchResult) -> str:
    """One line per trainer and thread count, then the ratios of the targets."""
    rows = [
        f"corpus {result.corpus} x{result.copies}, {result.epochs} epochs, median of "
        f"{result.rounds} rounds (whole processes, taking turns)",
        f"{'trainer':<8} {'threads':>7} {'seconds':>8} {'words/s':>10} {'peak MB':>8} "
        f"{'inside':>7} {'between':>7} {'separation':>10}",
        *(
            f"{found.trainer:<8} {found.threads:>7} {found.median_seconds:>8.2f} "
            f"{found.words_per_second:>10,.0f} {found.median_peak_memory / 2**20:>8.0f} "
            f"{found.within:>7.4f} {found.between:>7.4f} {found.separation:>10.4f}"
            for found in result.measured
        ),
        "",
    ]
    for threads in sorted({found.threads for found in result.measured}):
        ours = result.find("ours", threads)
        for other in ("gensim", "torch"):
            theirs = result.find(other, threads)
            if ours is not None and theirs is not None:
                rows.append(
                    f"ours / {other}, {threads} threads: words/s "
                    f"{ours.words_per_second / theirs.words_per_second:.2f}x, peak memory "
                    f"{ours.median_peak_memory / theirs.median_peak_memory:.2f}x, separation "
                    f"{ours.separation / theirs.separation:.2f}x"
                )
    gensim_one, ours_one, ours_two = (
        result.find(*case) for case in (("gensim", 1), ("ours", 1), ("ours", 2))
    )
    if gensim_one is not None and ours_one is not None:
        speed = ours_one.words_per_second / gensim_one.words_per_second
        rows.append(f"ours 1 thread / gensim 1 worker, words/s: {speed:.2f}x")
    if ours_two is not None:
        rows.append(f"ours on 2 threads: {ours_two.median_seconds:.1f} s")
    if ours_one is not None and ours_two is not None:
        speed = ours_two.words_per_second / ours_one.words_per_second
        rows.append(f"ours, 2 threads over 1, words/s: {speed:.2f}x")
    return lines(rows)


def run(
    corpus: Path | None = None,
    epochs: int = 5,
    repeats: int = 3,
    trainers: Sequence[str] = TRAINERS,
    threads: Sequence[int] = THREADS,
    copies: int = 1,
) -> int:
    """Measure and print, ``repeats`` rounds (``corpus`` None: the fetched Shakespeare texts)."""
    path = checked_corpus(corpus, {"--repeats": repeats, "--epochs": epochs, "--copies": copies})
    result = measure(path, epochs, repeats, trainers, threads, copies)
    sys.stdout.write(format_result(result))
    return 0


def checked_corpus(corpus: Path | None, counts: dict[str, int]) -> Path:
    """The corpus to measure (None: the fetched Shakespeare texts).

    Raises:
        OptionError: ``option.value``, one of ``counts`` (by option name) below 1.
        WordedError: the corpus is missing (``corpus.missing``, with how to fetch it).
    """
    from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import default_corpus_folder

    for name, count in counts.items():
        checked_count(count, 1, name)
    path = corpus if corpus is not None else default_corpus_folder()
    if not path.exists():
        missing = CorpusError("corpus.missing", path=str(path))
        raise WordedError(f"{missing}; `make corpus` fetches it", missing)
    return path
