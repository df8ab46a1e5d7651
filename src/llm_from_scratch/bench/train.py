"""``llm-from-scratch bench train``: ``ch18 train`` against gensim's word2vec and PyTorch.

On one corpus and one set of settings (skip-gram, d=100, window 5, 5 negatives, min-count 5,
``--epochs`` passes), each trainer runs as a fresh process, taking turns in every round: ``ours``
(the whole ``ch18 train --threads T`` command), ``gensim`` (``Word2Vec(sg=1, workers=T)``) and
``torch`` (the same model with PyTorch's sparse embeddings and SGD,
:mod:`~llm_from_scratch.bench.train_runners`). For each trainer and thread count the report gives
the median wall time and peak memory of the whole process, the corpus words read per second of
it, and the group measure of its last table (the mean cosine inside and between
:data:`~llm_from_scratch.demos.ch18_token_embeddings.train.REPORT_GROUPS`, and the separation);
then the ratios the targets name. :func:`measure` builds a :class:`TrainBenchResult`,
:func:`format_result` formats it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    group_cosines,
    present_groups,
)
from llm_from_scratch.demos.ch18_token_embeddings.train import REPORT_GROUPS, VocabularyPieces
from llm_from_scratch.nn import Embedding
from llm_from_scratch.training.run import peak_memory_bytes
from llm_from_scratch.training.vocabulary import UNKNOWN_TOKEN, Vocabulary

TRAINERS: Final = ("ours", "gensim", "torch")
THREADS: Final = (1, 2)


@dataclass(frozen=True)
class Measured:
    """One trainer on one thread count: wall times of its runs, and its table's group measure
    (from its last run)."""

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
        for found in self.measured:
            if found.trainer == trainer and found.threads == threads:
                return found
        return None


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
    """The word of each ID of a ``tokenizer.json`` that ``ch18 train`` wrote (its ``WordLevel``
    vocabulary, read as JSON)."""
    vocabulary = json.loads(tokenizer.read_text(encoding="utf-8"))
    by_id = sorted(vocabulary["model"]["vocab"].items(), key=lambda item: item[1])
    return [word for word, _ in by_id]


def _command(trainer: str, corpus: Path, output: Path, epochs: int, threads: int) -> list[str]:
    common = ["--corpus", str(corpus), "--output", str(output), "--epochs", str(epochs)]
    common += ["--threads", str(threads), "--seed", "1"]
    if trainer == "ours":
        return [sys.executable, "-m", "llm_from_scratch", "ch18", "train", *common]
    runner = "llm_from_scratch.bench.train_runners"
    return [sys.executable, "-m", runner, trainer, *common]


def _read_table(trainer: str, output: Path) -> tuple[np.ndarray, list[str]]:
    if trainer == "ours":
        from safetensors.numpy import load_file

        table = load_file(str(output / "table.safetensors"))["token_embedding.weight"]
        return table, word_list(output / "tokenizer.json")
    words = json.loads((output / "words.json").read_text(encoding="utf-8"))
    return np.load(output / "vectors.npy"), list(words)


def timed_process(command: Sequence[str]) -> tuple[float, int]:
    """Run ``command`` as a fresh process: its wall time and its peak resident set in bytes
    (the child's own, from ``wait4``). Its output is discarded.

    Raises:
        RuntimeError: it exited with a status other than 0 (its standard error is printed).
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            sys.stderr.write(errors.read().decode("utf-8", "replace"))
            raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}")
    return seconds, peak_memory_bytes(usage)


def copied_corpus(corpus: Path, copies: int, folder: Path) -> Path:
    """``corpus`` ``copies`` times over: ``folder/copy-1/...`` to ``folder/copy-N/...``, each a
    symbolic link to every text of the corpus (read as the texts themselves)."""
    from llm_from_scratch.training.corpus import corpus_files

    files = [file.path for file in corpus_files(corpus)]
    for copy in range(1, copies + 1):
        target = folder / f"copy-{copy}"
        target.mkdir(parents=True)
        for index, path in enumerate(files):
            (target / f"{index:05d}-{path.name}").symlink_to(path.resolve())
    return folder


def measure(
    corpus: Path,
    epochs: int,
    rounds: int,
    trainers: Sequence[str] = TRAINERS,
    threads: Sequence[int] = THREADS,
    copies: int = 1,
) -> TrainBenchResult:
    """Run every trainer on every thread count ``rounds`` times, taking turns in each round,
    on ``copies`` copies of ``corpus``."""
    from llm_from_scratch.training.corpus import corpus_files, count_words

    cases = [(trainer, count) for count in threads for trainer in trainers]
    times: dict[tuple[str, int], list[tuple[float, int]]] = {case: [] for case in cases}
    measures: dict[tuple[str, int], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as scratch:
        source = corpus if copies == 1 else copied_corpus(corpus, copies, Path(scratch) / "c")
        words = sum(count_words(corpus_files(source))[1].values())
        for round_index in range(rounds):
            for trainer, count in cases:
                output = Path(scratch) / f"{trainer}-{count}"
                command = _command(trainer, source, output, epochs, count)
                print(
                    f"round {round_index + 1}/{rounds}: {trainer}, {count} threads", file=sys.stderr
                )
                times[(trainer, count)].append(timed_process(command))
                measures[(trainer, count)] = group_measure(*_read_table(trainer, output))
    measured = tuple(
        Measured(
            trainer,
            count,
            tuple(seconds for seconds, _ in times[(trainer, count)]),
            tuple(memory for _, memory in times[(trainer, count)]),
            words * epochs,
            *measures[(trainer, count)],
        )
        for trainer, count in cases
    )
    return TrainBenchResult(corpus, copies, epochs, rounds, measured)


def format_result(result: TrainBenchResult) -> str:
    """One line per trainer and thread count, then the ratios of the targets."""
    lines = [
        f"corpus {result.corpus} x{result.copies}, {result.epochs} epochs, median of "
        f"{result.rounds} rounds (whole processes, taking turns)",
        f"{'trainer':<8} {'threads':>7} {'seconds':>8} {'words/s':>10} {'peak MB':>8} "
        f"{'inside':>7} {'between':>7} {'separation':>10}",
    ]
    for found in result.measured:
        lines.append(
            f"{found.trainer:<8} {found.threads:>7} {found.median_seconds:>8.2f} "
            f"{found.words_per_second:>10,.0f} {found.median_peak_memory / 2**20:>8.0f} "
            f"{found.within:>7.4f} {found.between:>7.4f} {found.separation:>10.4f}"
        )
    lines.append("")
    for threads in sorted({found.threads for found in result.measured}):
        ours = result.find("ours", threads)
        if ours is None:
            continue
        for other in ("gensim", "torch"):
            theirs = result.find(other, threads)
            if theirs is not None:
                lines.append(
                    f"ours / {other}, {threads} threads: words/s "
                    f"{ours.words_per_second / theirs.words_per_second:.2f}x, peak memory "
                    f"{ours.median_peak_memory / theirs.median_peak_memory:.2f}x, separation "
                    f"{ours.separation / theirs.separation:.2f}x"
                )
    gensim_one, ours_two = result.find("gensim", 1), result.find("ours", 2)
    ours_one = result.find("ours", 1)
    if gensim_one is not None and ours_one is not None:
        lines.append(
            "ours 1 thread / gensim 1 worker, words/s: "
            f"{ours_one.words_per_second / gensim_one.words_per_second:.2f}x"
        )
    if ours_two is not None:
        lines.append(f"ours on 2 threads: {ours_two.median_seconds:.1f} s")
    if ours_one is not None and ours_two is not None:
        lines.append(
            "ours, 2 threads over 1, words/s: "
            f"{ours_two.words_per_second / ours_one.words_per_second:.2f}x"
        )
    return "".join(f"{line}\n" for line in lines)


def run(
    corpus: Path | None = None,
    epochs: int = 5,
    rounds: int = 3,
    trainers: Sequence[str] = TRAINERS,
    threads: Sequence[int] = THREADS,
    copies: int = 1,
) -> int:
    """Measure and print (``corpus`` None: the fetched Shakespeare texts)."""
    from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import default_corpus_folder

    if rounds < 1 or epochs < 1 or copies < 1:
        print("error: --repeats, --epochs and --copies must be at least 1", file=sys.stderr)
        return 2
    path = corpus if corpus is not None else default_corpus_folder()
    if not path.exists():
        print(f"error: no corpus at {path}; `make corpus` fetches it", file=sys.stderr)
        return 2
    try:
        result = measure(path, epochs, rounds, trainers, threads, copies)
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(format_result(result))
    return 0
