"""A training run: the corpus streamed block by block to threads that train the shared tables
without locks, a checkpoint after each epoch and every ``checkpoint_minutes`` within one (threads,
checkpoints and reproducibility: ``docs/training.md``).
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
from llm_from_scratch.training.hogbatch import train_block_hogbatch
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
from llm_from_scratch.training.windows import block_windows
from llm_from_scratch.training.windows import reference_block as reference_windows

PROGRESS_SECONDS: Final = 0.5
"""The least time between two progress states within an epoch."""
Tables = tuple[npt.NDArray[Any], npt.NDArray[Any]]
METHOD_STEPS: Final[dict[str, tuple[Any, Any, Any]]] = {
    "pairs": (train_block, block_pairs, reference_block),
    "hogbatch": (train_block_hogbatch, block_windows, reference_windows),
}
"""Each ``--method``'s compiled block, and its samples and block on the tape (``--reference``)."""


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
        """Check ``options``, then read the corpus (or the checkpoint in ``options.output``),
        and ask Numba's threads to sleep between the run's many short kernels.

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
        trainer = _Trainer(tables, self)
        try:
            epochs = self._epochs(trainer, position, progress)
        except BaseException:
            _remove_empty(self.options.output, made)
            raise
        finally:
            trainer.close()
        seconds = sum(epoch.seconds for epoch in epochs)
        data = self.vocabulary, self.files, self.corpus_words
        return TrainResult(trainer.model(), *data, epochs, seconds, peak_memory_bytes())

    def discard_checkpoint(self) -> None:
        """Remove the run's checkpoint from its output folder (if there is one)."""
        (self.options.output / CHECKPOINT_FILE).unlink(missing_ok=True)

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
        found = (self.options, self.files, self.vocabulary, self.corpus_words)
        save_checkpoint(Checkpoint(*found, *trainer.tables, position))


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


@dataclass(frozen=True, eq=False)
class _Job:
    """One block: its tokens, the state its draws start from, the run's words before it."""

    tokens: npt.NDArray[np.int32]
    state: int
    words_before: int


class _Trainer:
    """Blocks trained in turn on the shared ``tables`` by the run's threads with the compiled
    loop, or (``reference``) in the calling thread on the tape, whose model adopts the tables;
    their loss and pairs are summed in :attr:`totals`."""

    def __init__(self, tables: Tables, run: Run) -> None:
        options, counts = run.options, np.asarray(run.vocabulary.counts)
        self.tables, self.totals = tables, EpochTotals()
        noise = NoiseTable.of(counts)
        self._samples = (keep_probabilities(counts), noise, options.window, options.negatives)
        self._words_total = run.corpus_words * options.epochs
        self._steps = METHOD_STEPS[options.method]
        model = SkipGram.adopt(*tables) if options.reference else None
        self._reference = None if model is None else (model, SGD(model.parameters, RATES[0]))
        count = 0 if options.reference else options.threads or 1
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=2 * count)
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._stopping = False
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def model(self) -> SkipGram:
        """The model of the tables (the compiled loop's are adopted once it is done)."""
        return SkipGram.adopt(*self.tables) if self._reference is None else self._reference[0]

    def block(self, job: _Job) -> tuple[float, int]:
        """Train on one block: its summed loss and its pairs."""
        compiled, samples, reference = self._steps
        if self._reference is not None:
            drawn = samples(job.tokens, *self._samples, job.state, job.words_before)
            return reference(*self._reference, drawn, self._words_total, RATES)  # type: ignore[no-any-return]
        keep, noise, window, negatives = self._samples
        found = np.zeros(2)
        compiled(
            job.tokens, keep, noise.accept, noise.alias, *self.tables, window, negatives,
            job.state, RATES, job.words_before, self._words_total, found,
        )  # fmt: skip
        return float(found[0]), int(found[1])

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
        state = (epoch + 1, self._epochs, corpus, read / total, speed, loss, seconds, left)
        self._progress(ProgressState(*state, peak_memory_bytes(), epoch_done))
