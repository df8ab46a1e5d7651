"""``llm-from-scratch ch18 train``: learn a token table from a corpus, and report what it learned.

:func:`train` reads the corpus (:mod:`~llm_from_scratch.demos.ch18_token_embeddings.corpus`),
builds the skip-gram model (:mod:`~llm_from_scratch.demos.ch18_token_embeddings.skipgram`: the
input table is the chapter's ``Embedding`` named ``token_embedding.weight``), measures the random
table, trains it with SGD and a linearly falling learning rate (word2vec's schedule, from
:data:`LEARNING_RATE` to :data:`MIN_LEARNING_RATE`; ``docs/performance.md`` says why SGD), measures
the trained table the same way, writes ``table.safetensors`` and ``tokenizer.json`` into the
output folder, and returns a :class:`TrainReport`. The report is data: the text of the command
(:mod:`~llm_from_scratch.demos.ch18_token_embeddings.train_text`) and a figure only format it.

Each measure of a table (:class:`TableView`) uses the neighbours module: the vector neighbours of
a few words (:data:`REPORT_WORDS`), the mean cosines inside and between word groups
(:data:`REPORT_GROUPS`) and the groups' projection on two principal components. Words that are not
in the vocabulary are left out (a group keeps at least two words).

Files: both are staged beside their targets under hidden temporary names, then renamed into
place one after the other with Ctrl-C held back (and the earlier table put back if the second
rename fails), so the folder holds the files it held before or both new ones; never a part of a
file, never a temporary one.

Reproducible: one NumPy ``Generator`` seeded by ``seed`` draws every sample, the table starts from
``SplitMix64.from_seed(seed)``, and every kernel adds in a fixed order whatever the threads, so
two runs with one seed write the same bytes.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Final

import numpy as np

from llm_from_scratch.autograd.dispatch import kernel_thread_limit, set_kernel_threads
from llm_from_scratch.demos.ch18_token_embeddings.corpus import (
    DEFAULT_MIN_COUNT,
    EncodedCorpus,
    Vocabulary,
    line_words,
    load_corpus,
)
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    GroupCosines,
    Projection,
    WordNeighbours,
    group_cosines,
    present_groups,
    project_groups,
    word_neighbours,
)
from llm_from_scratch.demos.ch18_token_embeddings.skipgram import INPUT_TABLE, SkipGram, samples
from llm_from_scratch.errors import StructuredError
from llm_from_scratch.files import os_path, sync_folder, temporary_path
from llm_from_scratch.nn import save_parameters
from llm_from_scratch.optim import SGD, Adagrad, Adam, Optimizer

__all__ = [
    "BATCH_PAIRS",
    "LEARNING_RATE",
    "MIN_LEARNING_RATE",
    "REPORT_GROUPS",
    "REPORT_WORDS",
    "TABLE_FILE",
    "TOKENIZER_FILE",
    "EpochSummary",
    "ProgressState",
    "TableView",
    "TrainOptionError",
    "TrainOptions",
    "TrainReport",
    "VocabularyPieces",
    "table_view",
    "train",
]

TABLE_FILE: Final = "table.safetensors"
TOKENIZER_FILE: Final = "tokenizer.json"
LEARNING_RATE: Final = 0.025
"""SGD's step size at the start (word2vec's ``alpha``); it falls linearly over the run."""
MIN_LEARNING_RATE: Final = 0.0001
"""SGD's step size at the end of the run (word2vec's ``min_alpha``)."""
BATCH_PAIRS: Final = 4096
"""Pairs per batch: the tape's per-batch work (recording seven operations, the fused step) is
then small beside the kernels'; 1024 took 10 to 35% more CPU time for the same separation, 2048
and 8192 about the same (``docs/performance.md``)."""
NEIGHBOUR_COUNT: Final = 4
"""Vector neighbours per report word."""

REPORT_WORDS: Final = ("father", "three", "night", "king")
"""The words whose neighbours the report lists (those in the vocabulary)."""
REPORT_GROUPS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("family", ("father", "mother", "brother", "sister", "son", "daughter")),
    ("numbers", ("one", "two", "three", "four", "five", "six")),
    ("royalty", ("king", "queen", "prince", "princess", "duke", "emperor")),
    ("time_of_day", ("morning", "night", "evening", "noon", "midnight", "day")),
    ("body", ("hand", "eye", "head", "heart", "arm", "face")),
)
"""The word groups of the report, each word common in the Shakespeare corpus."""

OPTIMIZERS: Final = ("sgd", "adagrad", "adam")
"""The optimizers :func:`train` can use; the command uses SGD (``docs/performance.md``)."""


class TrainOptionError(StructuredError, ValueError):
    """An option of ``ch18 train`` out of its range, found before the corpus is read: a size
    (``--dim``, ``--window``, ``--negatives``) below 1, ``--epochs`` or ``--seed`` below 0,
    ``--threads`` outside 1 to the machine's kernel threads, ``--output`` that is a file, or a
    ``--corpus`` or ``--output`` path the system cannot take (a NUL character, a character the
    file system cannot encode, a name too long in bytes)."""

    template = "--{option} must be {requirement}, got {value}"
    option: str
    requirement: str
    value: str


@dataclass(frozen=True)
class TrainOptions:
    """What ``ch18 train`` is asked to do (see :meth:`checked`)."""

    corpus: Path
    output: Path
    dim: int = 100
    window: int = 5
    negatives: int = 5
    epochs: int = 5
    min_count: int = DEFAULT_MIN_COUNT
    seed: int = 1
    threads: int | None = None
    optimizer: str = "sgd"
    batch_pairs: int = BATCH_PAIRS

    def checked(self) -> TrainOptions:
        """The same options if every one is in range (``threads`` None: all kernel threads).

        Raises:
            TrainOptionError: the first option out of range, in the order of the fields
                (``min_count`` is checked with the corpus, as a ``CorpusError``).
        """
        staged = temporary_path(str(self.output / TABLE_FILE))  # the longest name written
        for option, path, checked in (
            ("corpus", self.corpus, str(self.corpus)),
            ("output", self.output, staged),
        ):
            try:
                os_path(checked)
            except OSError as error:
                shown = f"{str(path)!r} ({error.strerror})"
                raise TrainOptionError(option, "a path the system can take", shown) from error
        for name, minimum in (("dim", 1), ("window", 1), ("negatives", 1), ("epochs", 0)):
            _checked_integer(name, getattr(self, name), minimum)
        _checked_integer("seed", self.seed, 0)
        _checked_integer("batch_pairs", self.batch_pairs, 1)
        limit = kernel_thread_limit()
        threads = limit if self.threads is None else self.threads
        _checked_integer("threads", threads, 1, limit)
        if self.optimizer not in OPTIMIZERS:
            raise TrainOptionError("optimizer", f"one of {', '.join(OPTIMIZERS)}", self.optimizer)
        if self.output.exists() and not self.output.is_dir():
            raise TrainOptionError("output", "a folder", f"the file {self.output}")
        return replace(self, threads=threads)


def _checked_integer(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    requirement = f"an integer of at least {minimum}"
    if maximum is not None:
        requirement = f"an integer from {minimum} to {maximum} (this machine's kernel threads)"
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TrainOptionError(name.replace("_", "-"), requirement, repr(value)) from None
    if isinstance(value, bool) or number < minimum or (maximum is not None and number > maximum):
        raise TrainOptionError(name.replace("_", "-"), requirement, repr(value))
    return number


# What the report holds -------------------------------------------------------------------------


@dataclass(frozen=True)
class TableView:
    """One table measured: the report words' vector neighbours, the groups' mean cosines and
    their projection (None without a group of two words in the vocabulary)."""

    neighbours: tuple[WordNeighbours, ...]
    groups: tuple[GroupCosines, ...]
    projection: Projection | None

    @property
    def within(self) -> float:
        """The mean over the groups of the mean cosine inside a group (NaN without groups)."""
        return _mean(group.within for group in self.groups)

    @property
    def between(self) -> float:
        """The mean over the groups of the mean cosine to the other groups' words."""
        return _mean(group.between for group in self.groups)

    @property
    def separation(self) -> float:
        """:attr:`within` minus :attr:`between`: how much closer a group's words are to each
        other than to the other groups' words."""
        return self.within - self.between


@dataclass(frozen=True)
class EpochSummary:
    """One epoch: its pairs, their mean loss, its wall time and its last learning rate."""

    epoch: int
    pairs: int
    mean_loss: float
    seconds: float
    learning_rate: float


@dataclass(frozen=True)
class ProgressState:
    """Where a run is, for a progress line: ``fraction`` of all epochs done, the words read
    per second so far, the epoch's mean loss so far; ``epoch_done`` at the end of an epoch."""

    epoch: int
    epochs: int
    fraction: float
    words_per_second: float
    mean_loss: float
    seconds: float
    epoch_done: bool = False

    @property
    def seconds_left(self) -> float:
        """The time left at the speed so far (NaN before anything is done)."""
        if self.fraction <= 0:
            return math.nan
        return self.seconds * (1 - self.fraction) / self.fraction


@dataclass(frozen=True)
class TrainReport:
    """What a run did and what it learned (see the module docstring)."""

    options: TrainOptions
    corpus_files: int
    words_read: int
    words_kept: int
    vocabulary_size: int
    optimizer: str
    learning_rates: tuple[float, float]
    epochs: tuple[EpochSummary, ...]
    training_seconds: float
    before: TableView
    after: TableView
    table_path: Path
    tokenizer_path: Path
    interrupted: bool = False
    """A Ctrl-C came while the files were written, held back until both were in place."""

    @property
    def words_per_second(self) -> float:
        """Corpus words read per second of training, over all epochs (NaN without any)."""
        if not self.epochs or self.training_seconds <= 0:
            return math.nan
        return self.words_read * len(self.epochs) / self.training_seconds


@dataclass(frozen=True)
class VocabularyPieces:
    """A :class:`Vocabulary` seen as the neighbours' ``WordPieces``: a word is one piece, its
    ID; a word outside the vocabulary is the unknown token."""

    vocabulary: Vocabulary

    @property
    def unknown_token(self) -> str | None:
        """``[UNK]``."""
        return self.vocabulary.unknown_token

    def pieces(self, word: str) -> tuple[tuple[str, int], ...]:
        """The words of ``word`` (lower-cased), each with its ID."""
        known = self.vocabulary.word_ids
        unknown = self.vocabulary.unknown_id
        found = ((piece, known.get(piece, unknown)) for piece in line_words(word))
        return tuple(
            (piece if token_id != unknown else self.vocabulary.unknown_token, token_id)
            for piece, token_id in found
        )

    def token(self, token_id: int) -> str | None:
        """The word of an ID, or None outside the vocabulary."""
        words = self.vocabulary.words
        return words[token_id] if 0 <= token_id < len(words) else None


# The run ---------------------------------------------------------------------------------------

Progress = Callable[[ProgressState], None]


def train(
    options: TrainOptions,
    progress: Progress | None = None,
    progress_interval: float = 0.5,
) -> TrainReport:
    """Train a table as the module docstring says; write the two files; return the report.

    ``progress`` gets a :class:`ProgressState` at most every ``progress_interval`` seconds and
    after each epoch.

    Raises:
        TrainOptionError: an option out of range (before anything is read).
        CorpusError: the corpus cannot be read or makes no vocabulary (before anything is
            written).
        CheckpointError, OSError: a file cannot be written; the folder is as it was.
        KeyboardInterrupt: Ctrl-C; the folder holds the files it held before (a Ctrl-C while
            the files are written waits for them: ``interrupted`` in the report).
    """
    options = options.checked()
    assert options.threads is not None
    corpus = load_corpus(options.corpus, options.min_count)
    previous_threads = set_kernel_threads(options.threads)
    try:
        return _trained(options, corpus, progress, progress_interval)
    finally:
        set_kernel_threads(previous_threads)


def _trained(
    options: TrainOptions, corpus: EncodedCorpus, progress: Progress | None, interval: float
) -> TrainReport:
    vocabulary = corpus.vocabulary
    pieces = VocabularyPieces(vocabulary)
    model = SkipGram.new(vocabulary.vocabulary_size, options.dim, options.seed)
    before = table_view(model, pieces)
    optimizer = _optimizer(options.optimizer, model)
    start = time.perf_counter()
    epochs = _run_epochs(options, corpus, model, optimizer, progress, interval)
    training_seconds = time.perf_counter() - start
    after = table_view(model, pieces) if epochs else before
    table_path = options.output / TABLE_FILE
    tokenizer_path = options.output / TOKENIZER_FILE
    metadata = {
        "model": "skip-gram with negative sampling",
        "dim": str(options.dim),
        "window": str(options.window),
        "negatives": str(options.negatives),
        "epochs": str(options.epochs),
        "min_count": str(options.min_count),
        "seed": str(options.seed),
        "optimizer": optimizer.kind,
        "vocabulary_size": str(vocabulary.vocabulary_size),
    }
    interrupted = write_outputs(options.output, model, vocabulary, metadata)
    return TrainReport(
        options=options,
        corpus_files=len(corpus.files),
        words_read=corpus.words_read,
        words_kept=int(corpus.ids.size),
        vocabulary_size=vocabulary.vocabulary_size,
        optimizer=optimizer.kind,
        learning_rates=_learning_rates(options.optimizer),
        epochs=tuple(epochs),
        training_seconds=training_seconds,
        before=before,
        after=after,
        table_path=table_path,
        tokenizer_path=tokenizer_path,
        interrupted=interrupted,
    )


def _learning_rates(optimizer: str) -> tuple[float, float]:
    if optimizer == "sgd":
        return LEARNING_RATE, MIN_LEARNING_RATE
    rate = _FIXED_RATES[optimizer]
    return rate, rate


_FIXED_RATES: Final = {"adagrad": 0.1, "adam": 0.004}
"""The step sizes of the alternatives measured in ``docs/performance.md``."""


def _optimizer(name: str, model: SkipGram) -> Optimizer:
    if name == "adagrad":
        return Adagrad(model.parameters, _FIXED_RATES[name])
    if name == "adam":
        return Adam(model.parameters, _FIXED_RATES[name])
    return SGD(model.parameters, LEARNING_RATE)


def _run_epochs(
    options: TrainOptions,
    corpus: EncodedCorpus,
    model: SkipGram,
    optimizer: Optimizer,
    progress: Progress | None,
    interval: float,
) -> list[EpochSummary]:
    stream = samples(
        corpus.ids,
        corpus.starts,
        np.asarray(corpus.vocabulary.counts),
        options.window,
        options.negatives,
        options.batch_pairs,
        options.epochs,
        np.random.default_rng(options.seed),
    )
    schedule = optimizer.kind == "SGD"
    summaries: list[EpochSummary] = []
    start = last_report = epoch_start = time.perf_counter()
    total_loss, done = 0.0, 0
    for epoch, pairs, batch in stream:
        if batch is None:  # the epoch's last batch is done
            seconds = time.perf_counter() - epoch_start
            mean_loss = total_loss / done if done else math.nan
            rate = optimizer.learning_rate
            summaries.append(EpochSummary(epoch + 1, done, mean_loss, seconds, rate))
            if progress is not None:
                elapsed = time.perf_counter() - start
                fraction = (epoch + 1) / options.epochs
                state = _state(epoch, options.epochs, fraction, corpus, total_loss, done, elapsed)
                progress(replace(state, epoch_done=True))
            total_loss, done, epoch_start = 0.0, 0, time.perf_counter()
            continue
        fraction = (epoch + done / pairs) / options.epochs
        if schedule:
            optimizer.learning_rate = LEARNING_RATE - (LEARNING_RATE - MIN_LEARNING_RATE) * (
                fraction
            )
        loss = model.loss(batch)
        total_loss += float(loss.numpy())
        optimizer.backward_step(loss)
        done += batch.size
        now = time.perf_counter()
        if progress is not None and now - last_report >= interval:
            last_report = now
            fraction = (epoch + done / pairs) / options.epochs
            progress(_state(epoch, options.epochs, fraction, corpus, total_loss, done, now - start))
    return summaries


def _state(
    epoch: int,
    epochs: int,
    fraction: float,
    corpus: EncodedCorpus,
    total_loss: float,
    done: int,
    seconds: float,
) -> ProgressState:
    words = corpus.words_read * epochs * fraction
    speed = words / seconds if seconds > 0 else math.nan
    loss = total_loss / done if done else math.nan
    return ProgressState(epoch + 1, epochs, fraction, speed, loss, seconds)


def table_view(
    model: SkipGram,
    pieces: VocabularyPieces,
    words: Sequence[str] = REPORT_WORDS,
    groups: Sequence[tuple[str, Sequence[str]]] = REPORT_GROUPS,
) -> TableView:
    """Measure the input table now: neighbours of the ``words`` in the vocabulary (the most
    frequent words when none is), and the ``groups`` with at least two words in it."""
    table = CosineTable.of(model.inputs)
    vocabulary = pieces.vocabulary
    known = [word for word in words if word in vocabulary.word_ids and word != "[UNK]"]
    if not known:
        known = list(vocabulary.words[: min(len(REPORT_WORDS), vocabulary.vocabulary_size - 1)])
    count = min(NEIGHBOUR_COUNT, vocabulary.vocabulary_size - 1)
    neighbours = (
        tuple(word_neighbours(table, pieces, word, count) for word in known) if count else ()
    )
    present = present_groups(pieces, groups)
    if len(present) < 2:
        return TableView(neighbours, (), None)
    return TableView(
        neighbours, group_cosines(table, pieces, present), project_groups(table, pieces, present)
    )


def _mean(values: Iterable[float]) -> float:
    found = list(values)
    return float(np.mean(found)) if found else math.nan


# Writing the files -----------------------------------------------------------------------------


def write_outputs(
    folder: Path, model: SkipGram, vocabulary: Vocabulary, metadata: dict[str, str]
) -> bool:
    """Write ``table.safetensors`` (the input table, ``token_embedding.weight``) and
    ``tokenizer.json`` into ``folder`` (made if missing): both staged first, then renamed into
    place with Ctrl-C held back until both are (see the module docstring). Returns True when a
    Ctrl-C came meanwhile (both new files are in place).

    Raises:
        CheckpointError, OSError: a file cannot be written; the targets are as they were.
        KeyboardInterrupt: raised inside (not a held-back Ctrl-C); the targets are as they were.
    """
    folder.mkdir(parents=True, exist_ok=True)
    table = model.inputs.parameters()
    assert [parameter.name for parameter in table] == [INPUT_TABLE]
    staged: list[Path] = []
    try:
        with interrupts_held() as held:
            table_stage = _stage_name(folder / TABLE_FILE)
            staged.append(table_stage)
            save_parameters(table_stage, table, metadata)
            tokenizer_stage = _stage_name(folder / TOKENIZER_FILE)
            staged.append(tokenizer_stage)
            _write_new_file(tokenizer_stage, vocabulary.tokenizer_json().encode("utf-8"))
            earlier = _linked_copy(folder / TABLE_FILE)
            if earlier is not None:
                staged.append(earlier)
            os.replace(table_stage, folder / TABLE_FILE)
            try:
                os.replace(tokenizer_stage, folder / TOKENIZER_FILE)
            except BaseException:
                if earlier is not None:  # the earlier table goes back beside its tokenizer
                    os.replace(earlier, folder / TABLE_FILE)
                raise
            sync_folder(folder)
    finally:
        for path in staged:
            with contextlib.suppress(OSError):
                path.unlink()
    return bool(held)


def _linked_copy(path: Path) -> Path | None:
    """A second name (a hard link) for an earlier file at ``path``, to put back if the new pair
    cannot be completed; None when there is no file or the system cannot link."""
    if not path.is_file():
        return None
    link = _stage_name(path)
    try:
        os.link(path, link)
    except OSError:
        return None
    return link


def _stage_name(target: Path) -> Path:
    return Path(temporary_path(str(target)))


def _write_new_file(path: Path, data: bytes) -> None:
    with open(path, "xb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


@contextlib.contextmanager
def interrupts_held() -> Iterator[list[int]]:
    """Hold Ctrl-C (SIGINT) back inside the block; the list it gives holds the signals that
    came. Only the main thread receives signals; elsewhere the block changes nothing."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)
