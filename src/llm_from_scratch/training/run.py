"""A training run: the corpus streamed block by block to threads that train the shared tables.

:meth:`Run.start` checks the options and counts the corpus (the vocabulary), or reads the
checkpoint it resumes. :meth:`Run.train` makes the epochs' passes: the main thread reads the
corpus in pieces and turns each into a block of tokens; the training threads take the blocks in
turn and run :func:`~llm_from_scratch.training.kernels.train_block` on the shared tables without
locks, as word2vec and gensim do (``reference``: the calling thread runs
:func:`~llm_from_scratch.training.skipgram.reference_block` on the tape).

A block's samples depend only on the seed, the epoch and the block's number, its learning rate
on where it starts: with one thread, two runs with one seed write the same bytes, and so does a
run interrupted and resumed any number of times; with several, two blocks trained at once may
read a row while the other writes it, so the last bits differ. After each epoch, and every
``checkpoint_minutes`` within one, the run waits for the blocks handed out and writes its
:mod:`~llm_from_scratch.training.checkpoint`.
"""

from __future__ import annotations

import contextlib
import math
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd.dispatch import sleep_between_kernels
from llm_from_scratch.optim import SGD
from llm_from_scratch.training.checkpoint import (
    Checkpoint,
    EpochTotals,
    Position,
    load_checkpoint,
    save_checkpoint,
)
from llm_from_scratch.training.corpus import CorpusFile, corpus_files, count_words, pieces
from llm_from_scratch.training.kernels import SENTENCE_END, train_block
from llm_from_scratch.training.options import CHECKPOINT_FILE, RATES, TrainOptions
from llm_from_scratch.training.skipgram import (
    NoiseTable,
    SkipGram,
    block_pairs,
    block_state,
    keep_probabilities,
    learning_rate,
    reference_block,
)
from llm_from_scratch.training.vocabulary import Vocabulary

__all__ = ["EpochSummary", "ProgressState", "Run", "TrainResult", "peak_memory_bytes"]

PROGRESS_SECONDS: Final = 0.5
"""The least time between two progress states within an epoch."""
Tables = tuple[npt.NDArray[Any], npt.NDArray[Any]]


@dataclass(frozen=True)
class EpochSummary:
    """One epoch: its pairs, their mean loss, its seconds of training, its last learning rate."""

    epoch: int
    pairs: int
    mean_loss: float
    seconds: float
    learning_rate: float


@dataclass(frozen=True)
class ProgressState:
    """Where a run is: the epoch, the share of its corpus read and of the whole run, words read
    per second, the epoch's mean loss so far, the seconds so far and left at that speed (NaN
    before a word is read), the peak memory in bytes; ``epoch_done`` at an epoch's end."""

    epoch: int
    epochs: int
    corpus_fraction: float
    fraction: float
    words_per_second: float
    mean_loss: float
    seconds: float
    seconds_left: float
    peak_memory: int
    epoch_done: bool = False


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A trained model, what it was trained on, and what the run took."""

    model: SkipGram
    vocabulary: Vocabulary
    files: tuple[CorpusFile, ...]
    corpus_words: int
    epochs: tuple[EpochSummary, ...]
    training_seconds: float
    peak_memory: int

    @property
    def largest_row_norm(self) -> float:
        """The largest Euclidean norm of a row of the input table."""
        values = self.model.parameters[0].tensor.numpy()
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", values, values), initial=0.0)))


Progress = Callable[[ProgressState], None]


def peak_memory_bytes(usage: Any = None) -> int:
    """The most memory a process has held at once (its peak resident set) in bytes: this
    process's, or the one ``usage`` describes (a ``resource.struct_rusage``, as ``os.wait4``
    gives of a child); 0 where the system does not say."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return 0
    peak = (usage or resource.getrusage(resource.RUSAGE_SELF)).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # Linux counts KiB


@dataclass(frozen=True, eq=False)
class Run:
    """A run ready to train (made by :meth:`start`)."""

    options: TrainOptions
    files: tuple[CorpusFile, ...]
    vocabulary: Vocabulary
    corpus_words: int
    checkpoint: Checkpoint | None

    @classmethod
    def start(cls, options: TrainOptions, thread_limit: int, resume: bool = False) -> Run:
        """Check ``options``, then read the corpus (or the checkpoint in ``options.output``).
        A long run of short kernels beside Python work: Numba's threads are asked to sleep
        between kernels (:func:`~llm_from_scratch.autograd.dispatch.sleep_between_kernels`).

        Raises:
            OptionError: ``train.option``, before anything is read; or a table over the
                memory budget, once the vocabulary is counted.
            CorpusError: the corpus cannot be read or makes no vocabulary.
            MismatchError: ``resume.*``, no checkpoint of these options and this corpus.
        """
        options = options.checked(thread_limit)
        assert options.corpus is not None
        sleep_between_kernels()
        listed = corpus_files(options.corpus)
        if resume:
            found = load_checkpoint(options.output, options, listed)
            options.check_memory(found.vocabulary.vocabulary_size)
            return cls(options, found.files, found.vocabulary, found.corpus_words, found)
        files, counts = count_words(listed)
        vocabulary = Vocabulary.from_counts(counts, options.min_count)
        options.check_memory(vocabulary.vocabulary_size)
        return cls(options, tuple(files), vocabulary, sum(counts.values()), None)

    def initial_model(self) -> SkipGram:
        """The model before training: the input table drawn from the seed, contexts zero."""
        return SkipGram.new(self.vocabulary.vocabulary_size, self.options.dim, self.options.seed)

    def train(self, progress: Progress | None = None) -> TrainResult:
        """Train every epoch left, writing checkpoints; the last stays until
        :meth:`discard_checkpoint` (once the caller has written the table).

        Raises:
            FileAccessError: ``checkpoint.write``, a checkpoint cannot be written.
            KeyboardInterrupt: Ctrl-C; the threads stop after their block, and a folder the
                run made is removed if it is still empty.
        """
        made = _made_folder(self.options.output)
        found = self.checkpoint
        position = Position() if found is None else found.position
        tables = self.initial_model().arrays() if found is None else (found.inputs, found.contexts)
        trainer = self._trainer(tables)
        try:
            epochs = self._epochs(trainer, position, progress)
            model = trainer.model()
        except BaseException:
            _remove_empty(self.options.output, made)
            raise
        finally:
            trainer.close()
        seconds = sum(epoch.seconds for epoch in epochs)
        words = self.corpus_words
        memory = peak_memory_bytes()
        return TrainResult(model, self.vocabulary, self.files, words, epochs, seconds, memory)

    def discard_checkpoint(self) -> None:
        """Remove the run's checkpoint from its output folder (if there is one)."""
        (self.options.output / CHECKPOINT_FILE).unlink(missing_ok=True)

    def _trainer(self, tables: Tables) -> _Trainer:
        counts, options = np.asarray(self.vocabulary.counts), self.options
        keep, noise = keep_probabilities(counts), NoiseTable.of(counts)
        words = self.corpus_words * options.epochs
        samples = _Samples(keep, noise, options.window, options.negatives, words)
        if options.reference:
            return _Reference(SkipGram.from_arrays(*tables), samples)
        return _Compiled(tables, samples, options.threads or 1)

    def _epochs(
        self, trainer: _Trainer, position: Position, progress: Progress | None
    ) -> tuple[EpochSummary, ...]:
        summaries = [self._summary(epoch, totals) for epoch, totals in enumerate(position.done)]
        clock = _Clock(self.options, self.corpus_words, position, progress)
        for epoch in range(position.epoch, self.options.epochs):
            trainer.totals = position.totals
            started = time.perf_counter() - position.totals.seconds
            for job, after in self._jobs(epoch, position):
                trainer.submit(job)
                if clock.checkpoint_due():
                    self._save(trainer, replace(after, totals=trainer.timed(started)))
                clock.report(after, trainer.totals)
            totals = trainer.timed(started)
            position = Position(epoch + 1, done=(*position.done, totals))
            summaries.append(self._summary(epoch, totals))
            self._save(trainer, position)
            clock.report(position, totals, epoch_done=True)
        return tuple(summaries)

    def _jobs(self, epoch: int, position: Position) -> Iterator[tuple[_Job, Position]]:
        """Each block of the epoch from ``position`` on, and the position after it."""
        block, words = position.block, position.words
        for index in range(position.file, len(self.files)):
            start = position.offset if index == position.file else 0
            for piece in pieces(self.files[index], start):
                tokens = self.vocabulary.tokens(piece.text)
                state = block_state(self.options.seed, epoch, block)
                job = _Job(tokens, state, epoch * self.corpus_words + words)
                block += 1
                words += tokens.size - int(np.count_nonzero(tokens == SENTENCE_END))
                yield job, replace(position, block=block, file=index, offset=piece.end, words=words)

    def _summary(self, epoch: int, totals: EpochTotals) -> EpochSummary:
        end = (epoch + 1) * self.corpus_words
        rate = learning_rate(end, self.corpus_words * self.options.epochs, RATES)
        mean = totals.loss / totals.pairs if totals.pairs else math.nan
        return EpochSummary(epoch + 1, totals.pairs, mean, totals.seconds, rate)

    def _save(self, trainer: _Trainer, position: Position) -> None:
        """Wait for the blocks handed out, then write the checkpoint."""
        trainer.wait()
        words = self.corpus_words
        tables = trainer.arrays()
        save_checkpoint(
            Checkpoint(self.options, self.files, self.vocabulary, words, *tables, position)
        )


def _made_folder(folder: Path) -> Path | None:
    """Make ``folder`` (and the folders above it) if missing; the topmost folder made, or None."""
    missing = [path for path in (folder, *folder.parents) if not path.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing[-1] if missing else None


def _remove_empty(folder: Path, made: Path | None) -> None:
    """Remove the folders from ``folder`` up to ``made`` that this run made, if still empty."""
    for path in (folder, *folder.parents) if made is not None else ():
        with contextlib.suppress(OSError):
            path.rmdir()
        if path == made:
            return


@dataclass(frozen=True)
class _Samples:
    """What every block's samples are drawn with."""

    keep: npt.NDArray[np.float64]
    noise: NoiseTable
    window: int
    negatives: int
    words_total: int


@dataclass(frozen=True, eq=False)
class _Job:
    """One block: its tokens, the state its draws start from, the run's words before it."""

    tokens: npt.NDArray[np.int32]
    state: int
    words_before: int


class _Trainer:
    """Blocks trained in turn by ``count`` threads (0: in the calling thread), each by
    :meth:`block`; their loss and pairs are summed in :attr:`totals`."""

    def __init__(self, samples: _Samples, count: int) -> None:
        self.samples, self.totals = samples, EpochTotals()
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=2 * count)
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._stopping = False
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def block(self, job: _Job) -> tuple[float, int]:
        """Train on one block: its summed loss and its pairs."""
        raise NotImplementedError

    def arrays(self) -> Tables:
        """The two tables' values, the input table first."""
        raise NotImplementedError

    def model(self) -> SkipGram:
        """The trained model."""
        raise NotImplementedError

    def submit(self, job: _Job) -> None:
        """Hand ``job`` to a thread (or train it now); raise what a thread raised before."""
        self._raise_failure()
        if self._threads:
            self._jobs.put(job)
        else:
            self._add(*self.block(job))

    def wait(self) -> None:
        """Wait for every block handed out; raise what a thread raised."""
        self._jobs.join()
        self._raise_failure()

    def timed(self, started: float) -> EpochTotals:
        """Wait, then the totals with the seconds since ``started``."""
        self.wait()
        return replace(self.totals, seconds=time.perf_counter() - started)

    def close(self) -> None:
        """Stop the threads after their block, leaving the blocks still queued."""
        self._stopping = True
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _add(self, loss: float, pairs: int) -> None:
        with self._lock:
            totals = self.totals
            self.totals = replace(totals, loss=totals.loss + loss, pairs=totals.pairs + pairs)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                if not self._stopping:
                    self._add(*self.block(job))
            except BaseException as error:  # handed to the main thread by wait()
                self._failure, self._stopping = error, True
            finally:
                self._jobs.task_done()
        self._jobs.task_done()


class _Compiled(_Trainer):
    """Threads that train the shared arrays with the compiled loop."""

    def __init__(self, tables: Tables, samples: _Samples, count: int) -> None:
        self._tables = tables
        super().__init__(samples, count)

    def block(self, job: _Job) -> tuple[float, int]:
        s, found = self.samples, np.zeros(2)
        inputs, contexts = self._tables
        train_block(
            job.tokens,
            s.keep,
            s.noise.accept,
            s.noise.alias,
            inputs,
            contexts,
            s.window,
            s.negatives,
            job.state,
            RATES,
            job.words_before,
            s.words_total,
            found,
        )
        return float(found[0]), int(found[1])

    def arrays(self) -> Tables:
        return self._tables

    def model(self) -> SkipGram:
        return SkipGram.adopt(*self._tables)


class _Reference(_Trainer):
    """Each block on the tape, one pair at a time, in the calling thread."""

    def __init__(self, model: SkipGram, samples: _Samples) -> None:
        self._model, self._optimizer = model, SGD(model.parameters, RATES[0])
        super().__init__(samples, 0)

    def block(self, job: _Job) -> tuple[float, int]:
        s = self.samples
        pairs = block_pairs(
            job.tokens, s.keep, s.noise, s.window, s.negatives, job.state, job.words_before
        )
        return reference_block(self._model, self._optimizer, pairs, s.words_total, RATES)

    def arrays(self) -> Tables:
        return self._model.arrays()

    def model(self) -> SkipGram:
        return self._model


class _Clock:
    """When to write a checkpoint within an epoch, and when to report progress."""

    def __init__(
        self, options: TrainOptions, words: int, position: Position, progress: Progress | None
    ) -> None:
        self._interval, self._epochs = options.checkpoint_minutes * 60, options.epochs
        self._last_checkpoint = self._last_report = self._start = time.perf_counter()
        self._words, self._first = words, position.epoch * words + position.words
        self._progress = progress

    def checkpoint_due(self) -> bool:
        now = time.perf_counter()
        if self._interval <= 0 or now - self._last_checkpoint < self._interval:
            return False
        self._last_checkpoint = now
        return True

    def report(self, position: Position, totals: EpochTotals, epoch_done: bool = False) -> None:
        now = time.perf_counter()
        if self._progress is None or (
            not epoch_done and now - self._last_report < PROGRESS_SECONDS
        ):
            return
        self._last_report, words = now, self._words
        epoch = position.epoch - 1 if epoch_done else position.epoch
        read = epoch * words + (words if epoch_done else position.words)
        total, seconds = max(words * self._epochs, 1), now - self._start
        speed = (read - self._first) / seconds if seconds > 0 else math.nan
        corpus = 1.0 if epoch_done else position.words / max(words, 1)
        loss = totals.loss / totals.pairs if totals.pairs else math.nan
        left = (total - read) / speed if speed > 0 else math.nan
        memory = peak_memory_bytes()
        state = (epoch + 1, self._epochs, corpus, read / total, speed, loss, seconds, left)
        self._progress(ProgressState(*state, memory, epoch_done))
