"""``llm-from-scratch bench train``: ``ch18 train`` (each ``--method``) against gensim's word2vec
(streaming and ``corpus_file``) and PyTorch, each a fresh process taking turns in every round on
one corpus and settings (the report: ``docs/performance.md``)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from functools import partial
from itertools import count, product
from pathlib import Path
from typing import Any, Final

import numpy as np
from safetensors.numpy import load_file

from llm_from_scratch.bench.rounds import in_turns, lines, target_rows
from llm_from_scratch.bench.word_benchmarks import WordScores, word_scores
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    group_cosines,
    group_summary,
    present_groups,
)
from llm_from_scratch.demos.ch18_token_embeddings.train import REPORT_GROUPS, VocabularyPieces
from llm_from_scratch.errors import CorpusError, WordedError
from llm_from_scratch.files import peak_memory_bytes
from llm_from_scratch.nn import Embedding
from llm_from_scratch.training.corpus import corpus_files, count_words, sentences
from llm_from_scratch.training.vocabulary import UNKNOWN_TOKEN, Vocabulary

OURS: Final = ("hogbatch", "pairs")
"""Our trainers: ``ch18 train --method NAME``."""
THEIRS: Final = ("gensim", "gensim-file", "torch")
"""The others: gensim streaming a ``LineSentence``, gensim's ``corpus_file`` mode, PyTorch."""
TRAINERS: Final = (*OURS, *THEIRS)
THREADS: Final = (1, 2)
TARGETS: Final = (
    (2, "", 1, 1.8),
    (1, "gensim", 1, 1.5),
    (2, "gensim", 2, 1.8),
    (2, "gensim-file", 2, 1.5),
)
"""The words/s of each of our methods on ``threads`` over another trainer's (ourselves when
empty) on its thread count: at least this much (issue 34)."""


@dataclass(frozen=True)
class Measured:
    """One trainer on one thread count: its runs' wall times and peak memory, and the medians
    over its runs (round ``r`` trains with seed ``r``) of its table's group measure and word
    benchmarks."""

    trainer: str
    threads: int
    seconds: tuple[float, ...]
    peak_memory: tuple[int, ...]
    words_per_run: int
    within: float
    between: float
    scores: WordScores

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
    summary = group_summary(found)
    return summary.within, summary.between


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
"""Runs a command, its output discarded, and prints its wall time, ``ru_maxrss`` and exit status
(a small launcher: ``exec`` keeps the high-water mark of the process that started a program)."""


def timed_process(command: Sequence[str]) -> tuple[float, int]:
    """Run ``command`` as a fresh process, its output discarded: its wall time and its own peak
    resident set in bytes (from ``wait4``, in :data:`LAUNCHER`).

    Raises:
        ChildProcessError: it exited with a status other than 0 (its standard error is printed).
    """
    with tempfile.TemporaryFile() as errors:
        launched = [sys.executable, "-c", LAUNCHER, *command]
        found = subprocess.run(launched, stdout=subprocess.PIPE, stderr=errors, check=False)
        result = found.stdout.decode().split() if found.returncode == 0 else ["", "", ""]
        seconds, maxrss, status = result
        if status != "0":
            errors.seek(0)
            sys.stderr.write(errors.read().decode("utf-8", "replace"))
            ending = f"exited with {status}" if status else "could not be run"
            raise ChildProcessError(f"{' '.join(command)} {ending}")
    return float(seconds), peak_memory_bytes(int(maxrss))


def copied_corpus(corpus: Path, copies: int, folder: Path) -> Path:
    """``corpus`` ``copies`` times over: ``folder/copy-N/`` holds a symbolic link to each text."""
    files = [file.path for file in corpus_files(corpus)]
    for copy in range(1, copies + 1):
        target = folder / f"copy-{copy}"
        target.mkdir(parents=True)
        for index, path in enumerate(files):
            (target / f"{index:05d}-{path.name}").symlink_to(path.resolve())
    return folder


def tokenized_corpus(corpus: Path, path: Path) -> Path:
    """Write ``corpus``'s sentences to ``path`` as ``ch18 train`` finds the words, one sentence
    a line, the words separated by spaces (gensim's ``LineSentence`` format)."""
    files = count_words(corpus_files(corpus))[0]
    with path.open("w", encoding="utf-8") as out:
        for sentence in sentences(files):
            out.write(" ".join(sentence) + "\n")
    return path


def _trained(
    case: tuple[str, int],
    corpora: tuple[Path, Path],
    epochs: int,
    output: Path,
    seeds: Any,
    dim: int = 100,
) -> tuple[float, int, float, float, Path]:
    """One run of a trainer with the next seed: its wall time, peak memory, group measure, and
    where its table is kept (scored after every round: scoring would grow this process, and a
    child's peak memory from ``wait4`` counts what its parent held when it forked)."""
    trainer, threads = case
    seed = next(seeds)
    kept = output / f"table-{trainer}-{threads}-{seed}.npz"
    output = output / f"{trainer}-{threads}"
    corpus = corpora[1] if trainer.startswith("gensim") else corpora[0]
    given = ["--corpus", str(corpus), "--output", str(output), "--epochs", str(epochs)]
    given += ["--threads", str(threads), "--seed", str(seed), "--dim", str(dim)]
    if trainer in OURS:
        ours = ["ch18", "train", "--method", trainer, *given]
        command = [sys.executable, "-m", "llm_from_scratch", *ours]
    else:
        command = [sys.executable, "-m", "llm_from_scratch.bench.train_runners", trainer, *given]
    seconds, memory = timed_process(command)
    if trainer in OURS:
        vectors = load_file(str(output / "table.safetensors"))["token_embedding.weight"]
        words = word_list(output / "tokenizer.json")
    else:
        vectors = np.load(output / "vectors.npy")
        words = json.loads((output / "words.json").read_text(encoding="utf-8"))
    np.savez(kept, vectors=vectors, words=np.array(words))
    return seconds, memory, *group_measure(vectors, words), kept


def measure(
    corpus: Path,
    epochs: int,
    rounds: int,
    trainers: Sequence[str] = TRAINERS,
    threads: Sequence[int] = THREADS,
    copies: int = 1,
    dim: int = 100,
) -> TrainBenchResult:
    """Run every trainer on every thread count ``rounds`` times, taking turns in each round
    (round ``r`` with seed ``r``), on ``copies`` copies of ``corpus``, with tables ``dim`` wide."""
    cases = {
        f"{trainer}, {count} threads": (trainer, count) for count in threads for trainer in trainers
    }
    with tempfile.TemporaryDirectory(prefix="bench-train-") as scratch:
        source = corpus if copies == 1 else copied_corpus(corpus, copies, Path(scratch) / "c")
        words = sum(count_words(corpus_files(source))[1].values()) * epochs
        lined = tokenized_corpus(source, Path(scratch) / "sentences.txt")
        runs = {
            name: partial(_trained, case, (source, lined), epochs, Path(scratch), count(1), dim)
            for name, case in cases.items()
        }
        found = in_turns(runs, rounds, progress=True)
        measured = []
        for name, samples in found.items():
            seconds, memory, within, between, kept = zip(*samples, strict=True)
            scores = [word_scores(*_table(path)) for path in kept]
            group = statistics.median(within), statistics.median(between)
            measured.append(Measured(*cases[name], seconds, memory, words, *group, median(scores)))
    return TrainBenchResult(corpus, copies, epochs, rounds, tuple(measured))


def _table(path: Path) -> tuple[Any, list[str]]:
    with np.load(path) as kept:
        return kept["vectors"], [str(word) for word in kept["words"]]


def median(scores: Sequence[WordScores]) -> WordScores:
    """Each benchmark's median over ``scores``."""
    columns = zip(*(astuple(found) for found in scores), strict=True)
    return WordScores(*(statistics.median(column) for column in columns))


def format_result(result: TrainBenchResult) -> str:
    """One line per trainer and thread count, then the ratios of the targets."""
    rows = [
        f"corpus {result.corpus} x{result.copies}, {result.epochs} epochs, median of "
        f"{result.rounds} rounds (whole processes, taking turns)",
        f"{'trainer':<11} {'threads':>7} {'seconds':>8} {'words/s':>10} {'peak MB':>8} "
        f"{'inside':>7} {'between':>7} {'separation':>10} {'WS-353':>7} {'SimLex':>7} "
        f"{'analogies':>9}",
        *(
            f"{found.trainer:<11} {found.threads:>7} {found.median_seconds:>8.2f} "
            f"{found.words_per_second:>10,.0f} {found.median_peak_memory / 2**20:>8.0f} "
            f"{found.within:>7.4f} {found.between:>7.4f} {found.separation:>10.4f} "
            f"{found.scores.wordsim:>7.3f} {found.scores.simlex:>7.3f} "
            f"{found.scores.analogies:>9.3f}"
            for found in result.measured
        ),
        "",
    ]
    return lines([*rows, *_ratios(result)])


def _ratios(result: TrainBenchResult) -> list[str]:
    """Each of our methods against each other trainer on each thread count, then each trainer's
    words/s on 2 threads over 1, then each of :data:`TARGETS` with its verdict."""
    rows, targets = [], []
    counts = sorted({found.threads for found in result.measured})
    for threads, method, other in product(counts, OURS, THEIRS):
        ours, theirs = result.find(method, threads), result.find(other, threads)
        if ours is not None and theirs is not None:
            rows.append(
                f"{method} / {other}, {threads} threads: words/s "
                f"{ours.words_per_second / theirs.words_per_second:.2f}x, peak memory "
                f"{ours.median_peak_memory / theirs.median_peak_memory:.2f}x, separation "
                f"{ours.separation / theirs.separation:.2f}x"
            )
    for trainer in TRAINERS:
        one, two = result.find(trainer, 1), result.find(trainer, 2)
        if one is not None and two is not None:
            speed = two.words_per_second / one.words_per_second
            rows.append(f"{trainer}, 2 threads over 1, words/s: {speed:.2f}x")
    for method, (threads, other, their_threads, least) in product(OURS, TARGETS):
        ours, theirs = result.find(method, threads), result.find(other or method, their_threads)
        if ours is not None and theirs is not None:
            label = f"{method} on {threads} / {other or method} on {their_threads} threads, words/s"
            targets.append((label, ours.words_per_second / theirs.words_per_second, least))
    return rows + target_rows("targets (words/s over words/s, side by side above):", targets)


def checked_corpus(corpus: Path | None) -> Path:
    """The corpus to measure (None: the fetched Shakespeare texts).

    Raises:
        WordedError: the corpus is missing (``corpus.missing``, with how to fetch it).
    """
    from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import default_corpus_folder

    path = corpus if corpus is not None else default_corpus_folder()
    if not path.exists():
        missing = CorpusError("corpus.missing", path=str(path))
        raise WordedError(f"{missing}; `make corpus` fetches it", missing)
    return path
