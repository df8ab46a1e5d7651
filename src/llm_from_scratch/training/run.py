"""A training run: the corpus streamed block by block to threads that train the shared tables.

:meth:`Run.start` checks the options, lists the corpus and counts its words (one streamed pass:
the vocabulary), or, resuming, reads the checkpoint and checks that it belongs to these options
and this corpus. :meth:`Run.train` then makes the epochs' passes. The main thread reads the
corpus in pieces (:func:`~llm_from_scratch.training.corpus.pieces`), turns each into a block of
tokens (:meth:`~llm_from_scratch.training.vocabulary.Vocabulary.tokens`) and hands it to the
training threads, which take the blocks in turn and train on them without waiting for each
other: each runs :func:`~llm_from_scratch.training.kernels.train_block` on the shared tables,
without locks, as word2vec and gensim do.

**Reproducible.** A block's samples depend only on the seed, the epoch and the block's number
(:func:`~llm_from_scratch.training.skipgram.block_state`), and its learning rate only on where it
starts in the run. With one thread the blocks are trained in order, so two runs with one seed
write the same bytes, and so does a run interrupted and resumed any number of times. With
several threads, two blocks trained at once may read a row while the other writes it: each
run is as good, but their last bits differ.

**Checkpoints.** After each epoch, and every ``checkpoint_minutes`` within one, the run waits for
the blocks handed out so far and writes :mod:`~llm_from_scratch.training.checkpoint`.
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

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
from llm_from_scratch.training.options import CHECKPOINT_FILE, RATES, TrainOptionError, TrainOptions
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

__all__ = [
    "EpochSummary",
    "ProgressState",
    "Run",
    "TrainResult",
    "peak_memory_bytes",
]

PROGRESS_SECONDS: Final = 0.5
"""The least time between two progress states within an epoch."""
BYTES_PER_VALUE: Final = 32
"""The memory a run plans per value of its ``[V, d]`` input table: the two trained tables,
the random model a report measures, and the copies the measures make (24 bytes measured on a
float32 table of 9120 rows, ``docs/performance.md``)."""
RUNTIME_MB: Final = 256
"""The memory a run plans besides its tables: the interpreter, NumPy, Numba and LLVM, the
blocks in flight (about 190 MB measured)."""


@dataclass(frozen=True)
class EpochSummary:
    """One epoch: its pairs, their mean loss, its seconds of training and its last learning
    rate."""

    epoch: int
    pairs: int
    mean_loss: float
    seconds: float
    learning_rate: float


@dataclass(frozen=True)
class ProgressState:
    """Where a run is, for a progress line: the epoch, the share of its corpus read, the share
    of the whole run done, the words read per second so far, the epoch's mean loss so far, the
    seconds so far and left at that speed (NaN before a word is read) and the process's peak
    memory in bytes; ``epoch_done`` at the end of an epoch."""

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


def peak_memory_bytes() -> int:
    """The most memory this process has held at once (its peak resident set), in bytes; 0
    where the system does not say."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return 0
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def memory_needed(vocabulary_size: int, dim: int) -> int:
    """The memory, in MB, a run plans for a ``[vocabulary_size, dim]`` table."""
    return RUNTIME_MB + -(-vocabulary_size * dim * BYTES_PER_VALUE // 2**20)


def check_memory(options: TrainOptions, vocabulary_size: int) -> None:
    """Refuse a run whose tables would not fit its memory budget, before it allocates them.

    Raises:
        TrainOptionError: ``--memory-budget`` below what the run needs.
    """
    needed = memory_needed(vocabulary_size, options.dim)
    assert options.memory_budget is not None
    if needed > options.memory_budget:
        table = f"{vocabulary_size}x{options.dim}"
        requirement = (
            f"at least {needed} MB for a {table} table (lower --dim or raise --min-count, or "
            f"raise the budget)"
        )
        raise TrainOptionError("memory-budget", requirement, f"{options.memory_budget} MB")


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

        Raises:
            TrainOptionError: an option out of range (before anything is read), or a table
                that would not fit the memory budget (once the vocabulary is counted).
            CorpusError: the corpus cannot be read or makes no vocabulary.
            ResumeError: ``resume`` without a checkpoint of these options and
                this corpus.
        """
        options = options.checked(thread_limit)
        assert options.corpus is not None
        listed = corpus_files(options.corpus)
        if resume:
            found = load_checkpoint(options.output, options, listed)
            check_memory(options, found.vocabulary.vocabulary_size)
            return cls(options, found.files, found.vocabulary, found.corpus_words, found)
        files, counts = count_words(listed)
        vocabulary = Vocabulary.from_counts(counts, options.min_count)
        check_memory(options, vocabulary.vocabulary_size)
        return cls(options, tuple(files), vocabulary, sum(counts.values()), None)

    def initial_model(self) -> SkipGram:
        """The model before training: the input table drawn from the seed, contexts zero."""
        return SkipGram.new(self.vocabulary.vocabulary_size, self.options.dim, self.options.seed)

    def train(self, progress: Progress | None = None) -> TrainResult:
        """Train every epoch left, writing checkpoints; return the trained model. The last
        checkpoint stays until :meth:`discard_checkpoint` (a caller that writes the table
        afterwards discards it once the table is written).

        Raises:
            FileAccessError, FormatError, NonFiniteError: a checkpoint cannot be written.
            KeyboardInterrupt: Ctrl-C; the threads stop after their block.
        """
        made = _made_folder(self.options.output)
        if self.checkpoint is None:
            arrays = self.initial_model().arrays()
            position = Position()
        else:
            arrays = (self.checkpoint.inputs, self.checkpoint.contexts)
            position = self.checkpoint.position
        trainer = self._trainer(*arrays)
        try:
            epochs, seconds = self._epochs(trainer, position, progress)
            model = trainer.model()
        except BaseException:
            _remove_empty(self.options.output, made)
            raise
        finally:
            trainer.close()
        return TrainResult(
            model,
            self.vocabulary,
            self.files,
            self.corpus_words,
            epochs,
            seconds,
            peak_memory_bytes(),
        )

    def discard_checkpoint(self) -> None:
        """Remove the run's checkpoint from its output folder (if there is one)."""
        (self.options.output / CHECKPOINT_FILE).unlink(missing_ok=True)

    def _trainer(self, inputs: npt.NDArray[Any], contexts: npt.NDArray[Any]) -> _Trainer:
        counts = np.asarray(self.vocabulary.counts)
        samples = _Samples(
            keep_probabilities(counts),
            NoiseTable.of(counts),
            self.options.window,
            self.options.negatives,
            self.corpus_words * self.options.epochs,
        )
        if self.options.reference:
            return _ReferenceTrainer(SkipGram.from_arrays(inputs, contexts), samples)
        assert self.options.threads is not None
        return _CompiledTrainer(inputs, contexts, samples, self.options.threads)

    def _epochs(
        self, trainer: _Trainer, position: Position, progress: Progress | None
    ) -> tuple[tuple[EpochSummary, ...], float]:
        options = self.options
        summaries = [self._summary(i, totals) for i, totals in enumerate(position.done)]
        clock = _Clock(options.checkpoint_minutes, self.corpus_words, position, progress, options)
        for epoch in range(position.epoch, options.epochs):
            trainer.totals = position.totals
            started = time.perf_counter() - position.totals.seconds
            for job, after in self._jobs(epoch, position):
                trainer.submit(job)
                if clock.checkpoint_due():
                    trainer.wait()
                    self._save(trainer, replace(after, totals=_timed(trainer, started)))
                clock.report(after, trainer.totals)
            trainer.wait()
            totals = _timed(trainer, started)
            position = Position(epoch + 1, done=(*position.done, totals))
            summaries.append(self._summary(epoch, totals))
            self._save(trainer, position)
            clock.report(position, totals, epoch_done=True)
        return tuple(summaries), sum(totals.seconds for totals in position.done)

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
        inputs, contexts = trainer.arrays()
        save_checkpoint(
            Checkpoint(
                self.options,
                self.files,
                self.vocabulary,
                self.corpus_words,
                inputs,
                contexts,
                position,
            )
        )


def _made_folder(folder: Path) -> Path | None:
    """Make ``folder`` (and the folders above it) if missing; the topmost folder made, or None."""
    missing = [path for path in (folder, *folder.parents) if not path.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing[-1] if missing else None


def _remove_empty(folder: Path, made: Path | None) -> None:
    """Remove the folders from ``folder`` up to ``made`` that this run made, if still empty."""
    if made is None:
        return
    for path in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            path.rmdir()
        if path == made:
            return


def _timed(trainer: _Trainer, started: float) -> EpochTotals:
    return replace(trainer.totals, seconds=time.perf_counter() - started)


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


class _Trainer(Protocol):
    totals: EpochTotals

    def submit(self, job: _Job) -> None: ...
    def wait(self) -> None: ...
    def arrays(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]: ...
    def model(self) -> SkipGram: ...
    def close(self) -> None: ...


class _ReferenceTrainer:
    """Each block on the tape, one pair at a time, in the calling thread."""

    def __init__(self, model: SkipGram, samples: _Samples) -> None:
        self._model = model
        self._optimizer = SGD(model.parameters, RATES[0])
        self._samples = samples
        self.totals = EpochTotals()

    def submit(self, job: _Job) -> None:
        samples = self._samples
        pairs = block_pairs(
            job.tokens,
            samples.keep,
            samples.noise,
            samples.window,
            samples.negatives,
            job.state,
            job.words_before,
        )
        loss, count = reference_block(
            self._model, self._optimizer, pairs, samples.words_total, RATES
        )
        self.totals = replace(
            self.totals, loss=self.totals.loss + loss, pairs=self.totals.pairs + count
        )

    def wait(self) -> None:
        pass

    def arrays(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        return self._model.arrays()

    def model(self) -> SkipGram:
        return self._model

    def close(self) -> None:
        pass


class _CompiledTrainer:
    """Threads that take blocks in turn and train the shared arrays with the compiled loop."""

    def __init__(
        self,
        inputs: npt.NDArray[Any],
        contexts: npt.NDArray[Any],
        samples: _Samples,
        threads: int,
    ) -> None:
        self._inputs, self._contexts = inputs, contexts
        self._samples = samples
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=2 * threads)
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._stopping = False
        self.totals = EpochTotals()
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(threads)]
        for thread in self._threads:
            thread.start()

    def _serve(self) -> None:
        samples = self._samples
        while (job := self._jobs.get()) is not None:
            try:
                if not self._stopping:
                    found = np.zeros(2)
                    train_block(
                        job.tokens,
                        samples.keep,
                        samples.noise.accept,
                        samples.noise.alias,
                        self._inputs,
                        self._contexts,
                        samples.window,
                        samples.negatives,
                        job.state,
                        RATES,
                        job.words_before,
                        samples.words_total,
                        found,
                    )
                    with self._lock:
                        self.totals = replace(
                            self.totals,
                            loss=self.totals.loss + float(found[0]),
                            pairs=self.totals.pairs + int(found[1]),
                        )
            except BaseException as error:  # handed to the main thread by wait()
                self._failure = error
                self._stopping = True
            finally:
                self._jobs.task_done()
        self._jobs.task_done()

    def submit(self, job: _Job) -> None:
        self._raise_failure()
        self._jobs.put(job)

    def wait(self) -> None:
        self._jobs.join()
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def arrays(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        return self._inputs, self._contexts

    def model(self) -> SkipGram:
        return SkipGram.adopt(self._inputs, self._contexts)

    def close(self) -> None:
        self._stopping = True
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()


class _Clock:
    """When to write a checkpoint within an epoch, and when to report progress."""

    def __init__(
        self,
        minutes: float,
        corpus_words: int,
        position: Position,
        progress: Progress | None,
        options: TrainOptions,
    ) -> None:
        self._interval = minutes * 60
        self._last_checkpoint = self._last_report = self._start = time.perf_counter()
        self._words = corpus_words
        self._first_words = position.epoch * corpus_words + position.words
        self._progress = progress
        self._epochs = options.epochs

    def checkpoint_due(self) -> bool:
        now = time.perf_counter()
        if self._interval <= 0 or now - self._last_checkpoint < self._interval:
            return False
        self._last_checkpoint = now
        return True

    def report(self, position: Position, totals: EpochTotals, epoch_done: bool = False) -> None:
        now = time.perf_counter()
        early = not epoch_done and now - self._last_report < PROGRESS_SECONDS
        if self._progress is None or early:
            return
        self._last_report = now
        epoch = position.epoch - 1 if epoch_done else position.epoch
        read = epoch * self._words + (self._words if epoch_done else position.words)
        total = max(self._words * self._epochs, 1)
        seconds = now - self._start
        speed = (read - self._first_words) / seconds if seconds > 0 else math.nan
        left = (total - read) / speed if speed > 0 else math.nan
        mean = totals.loss / totals.pairs if totals.pairs else math.nan
        corpus = 1.0 if epoch_done else position.words / max(self._words, 1)
        self._progress(
            ProgressState(
                epoch + 1,
                self._epochs,
                corpus,
                read / total,
                speed,
                mean,
                seconds,
                left,
                peak_memory_bytes(),
                epoch_done,
            )
        )
