"""A training run: the corpus streamed block by block to threads that train the shared tables
without locks, a checkpoint after each epoch and every ``checkpoint_minutes`` within one (threads,
checkpoints and reproducibility: ``docs/training.md``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd.dispatch import sleep_between_kernels
from llm_from_scratch.errors import CorpusError, MismatchError, OptionError
from llm_from_scratch.files import peak_memory_bytes
from llm_from_scratch.optim import SGD
from llm_from_scratch.training.checkpoint import (
    Checkpoint,
    CorpusRecord,
    EpochTotals,
    OnCorpus,
    Origin,
    Position,
    load_checkpoint,
    save_checkpoint,
)
from llm_from_scratch.training.corpus import Counted, corpus_files
from llm_from_scratch.training.hogbatch import train_block_hogbatch
from llm_from_scratch.training.kernels import SENTENCE_END, train_block
from llm_from_scratch.training.options import (
    CHECKPOINT_FILE,
    METHODS,
    RATES,
    TrainOptions,
    processor_count,
)
from llm_from_scratch.training.saved import FILES_WRITTEN, KeptModel, load_kept_model, write_run
from llm_from_scratch.training.skipgram import (
    NoiseTable,
    SkipGram,
    block_pairs,
    block_state,
    initial_tables,
    keep_probabilities,
    learning_rate,
    reference_block,
)
from llm_from_scratch.training.sources import (
    FileSource,
    KeptBlocks,
    SentenceSource,
    kept_tokens_bytes,
)
from llm_from_scratch.training.vocabulary import Vocabulary
from llm_from_scratch.training.windows import block_windows
from llm_from_scratch.training.windows import reference_block as reference_windows
from llm_from_scratch.training.words import TOKENS, WORDS

if TYPE_CHECKING:
    from llm_from_scratch.vectors import WordVectors

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
    """Where a run is: the epoch, the share of its corpus and of the run read, words a second,
    the epoch's mean loss so far, the seconds so far and left (NaN before a word is read), the
    peak memory in bytes; ``epoch_done`` at an epoch's end."""

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
class TrainResult(OnCorpus):
    """A trained model, what it was trained on, and what the run took; :attr:`vectors` to query
    it, :meth:`save` to write it."""

    model: SkipGram
    corpus: CorpusRecord
    epochs: tuple[EpochSummary, ...]
    training_seconds: float
    peak_memory: int
    options: TrainOptions
    origin: Origin = field(default_factory=Origin)

    @property
    def largest_row_norm(self) -> float:
        """The largest Euclidean norm of a row of the input table."""
        values = self.model.parameters[0].tensor.numpy()
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", values, values), initial=0.0)))

    @property
    def epochs_trained(self) -> int:
        """The epochs the tables have trained, those of the runs it continues included."""
        return self.origin.first_epoch + self.options.epochs

    @functools.cached_property
    def vectors(self) -> WordVectors:
        """The input table's rows of the vocabulary's words (the unknown token's row left out),
        as :class:`~llm_from_scratch.vectors.WordVectors`: gensim's ``model.wv``."""
        return word_vectors(self.vocabulary, self.model.parameters[0].tensor.numpy(), copy=False)

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write ``table.safetensors`` and ``tokenizer.json`` into ``folder`` (made if missing)
        as one, with ``model.safetensors`` if the run keeps its model, then remove the run's
        checkpoint.

        Raises:
            FileAccessError, OSError: a file cannot be written; the folder is as it was.
            KeyboardInterrupt: a Ctrl-C came while the files were written: they are in place
                (its message is :data:`~llm_from_scratch.training.saved.FILES_WRITTEN`).
        """
        model, vocabulary, options = self.model, self.vocabulary, self.options
        interrupted = write_run(Path(folder), model, vocabulary, options, self.epochs_trained)
        _discard_checkpoint(options)
        if interrupted:
            raise KeyboardInterrupt(FILES_WRITTEN)


def word_vectors(vocabulary: Vocabulary, table: npt.NDArray[Any], copy: bool) -> WordVectors:
    """The rows of the vocabulary's words as ``WordVectors`` (a copy of them, with ``copy``)."""
    from llm_from_scratch.vectors import WordVectors

    rows = table[: vocabulary.unknown_id]
    return WordVectors(vocabulary.words[:-1], np.array(rows, copy=True) if copy else rows)


Progress = Callable[[ProgressState], None]
EpochCallback = Callable[[EpochSummary, "WordVectors"], None]
"""Called at each epoch's end with its summary and a copy of the vectors then."""


@dataclass(frozen=True, eq=False)
class Run(OnCorpus):
    """A run ready to train (made by :meth:`start` or :meth:`continue_from`); it trains once."""

    options: TrainOptions
    corpus: CorpusRecord
    checkpoint: Checkpoint | None
    source: FileSource | SentenceSource
    origin: Origin = field(default_factory=Origin)
    tables: Tables | None = None
    """The tables a continued run starts from (None: drawn from the seed)."""
    _trained: list[bool] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.options.check_memory(self.vocabulary.vocabulary_size, self._kept_bytes)

    @property
    def _kept_bytes(self) -> int:
        """The most bytes of tokens the run keeps for its later epochs."""
        size, epochs = self.vocabulary.vocabulary_size, self.options.epochs
        return kept_tokens_bytes(self.corpus_words, size, epochs)

    @classmethod
    def start(
        cls,
        options: TrainOptions,
        thread_limit: int | None = None,
        resume: bool = False,
        continue_from: str | os.PathLike[str] | KeptModel | None = None,
    ) -> Run:
        """Check ``options``, read the corpus (or the checkpoint in ``options.output``), then
        load the compiled loop (a thread loading it beside the reading made both slower:
        ``docs/performance.md``); ``thread_limit`` is the most threads
        (default: one per processor). With ``continue_from``, the folder of a kept model (or
        the model read), the run trains its tables further with ``options`` as given
        (:meth:`continue_from` takes the model's options as the defaults).

        Raises:
            OptionError: ``train.option``, ``train.one-shot-corpus``, before anything is read;
                or a table over the memory budget, once the vocabulary is counted.
            CorpusError: the corpus cannot be read or makes no vocabulary; ``corpus.sentence``,
                ``corpus.token``: an iterable corpus that does not give token lists.
            MismatchError: ``resume.*``, no checkpoint of these options and this corpus;
                ``continue.options``, options the kept model does not share.
        """
        kept = continue_from
        if kept is not None and not isinstance(kept, KeptModel):
            kept = load_kept_model(Path(kept))
        options = options.checked(thread_limit or processor_count())
        sleep_between_kernels()
        run = cls._read(options, resume, kept)
        if not options.reference:
            load_compiled_loop(options.method)
        return run

    @classmethod
    def _read(cls, options: TrainOptions, resume: bool, kept: KeptModel | None) -> Run:
        """The run of the checked ``options``: its corpus counted, or its checkpoint read."""
        if kept is not None:
            kept.check(options)
        source = _source(options, kept)
        if resume:
            return cls._resumed(options, source)
        counted = source.count(None if kept is not None else options.max_vocab_size)
        origin, tables = Origin(), None
        if kept is None:
            vocabulary = Vocabulary.from_counts(
                counted.counts, options.min_count, options.max_final_vocab, source.reading
            )
        else:
            vocabulary, origin = _kept_vocabulary(counted, kept)
            tables = kept.inputs, kept.contexts
        corpus = CorpusRecord(tuple(counted.files), vocabulary, counted.words)
        return cls(options, corpus, None, replace(source, files=corpus.files), origin, tables)

    @classmethod
    def continue_from(
        cls, folder: str | os.PathLike[str], thread_limit: int | None = None, **given: Any
    ) -> Run:
        """A run that trains further the tables a run with ``keep_model`` left in ``folder``, on
        ``given["corpus"]``, with the vocabulary fixed (words outside it are read, counted and
        left out). The model's options are the defaults of ``given`` (``output`` is ``folder``,
        ``keep_model`` True); ``dim`` and ``tokenized`` must stay. The epochs go on from the
        model's: the samples of a continued epoch are those of that epoch of one longer run.

        Raises:
            As :meth:`start`; MismatchError ``continue.missing``, ``continue.unreadable`` (no
            model to continue), ``continue.options``; CorpusError ``corpus.no-known-words``.
        """
        kept = load_kept_model(Path(folder))
        return cls.start(continued_options(kept, given), thread_limit, continue_from=kept)

    @classmethod
    def _resumed(cls, options: TrainOptions, source: FileSource | SentenceSource) -> Run:
        if not isinstance(source, FileSource):
            detail = "a run of an iterable corpus writes no checkpoint to resume"
            raise MismatchError("resume.missing", folder=str(options.output), detail=detail)
        found = load_checkpoint(options.output, options, list(source.files))
        read = replace(source, files=found.files)
        return cls(options, found.corpus, found, read, found.origin)

    def initial_model(self) -> SkipGram:
        """The model before training: the input table drawn from the seed, contexts zero (a new
        draw on each call; :meth:`train` draws its own; a continued run: copies of the tables
        it continues)."""
        return SkipGram.adopt(*self._initial_tables())

    def _initial_tables(self) -> Tables:
        if self.tables is not None:  # copies: the run trains its tables in place
            return self.tables[0].copy(), self.tables[1].copy()
        return initial_tables(self.vocabulary.vocabulary_size, self.options.dim, self.options.seed)

    def train(
        self, progress: Progress | None = None, on_epoch: EpochCallback | None = None
    ) -> TrainResult:
        """Train every epoch left, writing checkpoints (a corpus of files); the last stays
        until the result is saved (:meth:`TrainResult.save`) or :meth:`discard_checkpoint`.
        ``progress`` gets a :class:`ProgressState` at most twice a second and at each epoch's
        end. ``on_epoch`` (gensim's ``callbacks``) is called at each epoch's end with the
        epoch's summary and a copy of the vocabulary's vectors then, as
        :class:`~llm_from_scratch.vectors.WordVectors`.

        Raises:
            OptionError: ``train.finished``, the run has trained already.
            CorpusError: ``corpus.changed``, an iterable corpus gave other words on a pass.
            FileAccessError: ``checkpoint.write``, a checkpoint cannot be written.
            KeyboardInterrupt: Ctrl-C; the threads stop after their block, and a folder the
                run made is removed if it is still empty.
        """
        if self._trained:
            raise OptionError("train.finished", epochs=self.options.epochs)
        self._trained.append(True)
        writes = self.options.reads_files
        made = _made_folder(self.options.output) if writes else None
        found = self.checkpoint
        position = Position() if found is None else found.position
        tables = self._initial_tables() if found is None else (found.inputs, found.contexts)
        trainer = _Trainer(tables, self)
        try:
            kept = KeptBlocks(self._kept_bytes, self.vocabulary.vocabulary_size)
            epochs = self._epochs(trainer, (position, kept), progress, on_epoch)
        except BaseException:
            _remove_empty(self.options.output, made)
            raise
        finally:
            trainer.close()
        seconds = sum(epoch.seconds for epoch in epochs)
        result = (epochs, seconds, peak_memory_bytes(), self.options, self.origin)
        return TrainResult(trainer.model(), self.corpus, *result)

    def discard_checkpoint(self) -> None:
        """Remove the run's checkpoint from its output folder (if there is one)."""
        _discard_checkpoint(self.options)

    def _epochs(
        self,
        trainer: _Trainer,
        reading: tuple[Position, KeptBlocks],
        progress: Progress | None,
        on_epoch: EpochCallback | None,
    ) -> tuple[EpochSummary, ...]:
        position, kept = reading
        summaries = [self._summary(epoch, totals) for epoch, totals in enumerate(position.done)]
        clock = _Clock(self.options, self.corpus_words, position, progress)
        for epoch in range(position.epoch, self.options.epochs):
            trainer.totals = position.totals
            started = time.perf_counter() - position.totals.seconds
            for job, after in self._jobs(epoch, position, kept):
                trainer.submit(job)
                if clock.checkpoint_due():
                    self._save(trainer, replace(after, totals=trainer.timed(started)))
                clock.report(after, trainer.totals)
            totals = trainer.timed(started)
            position = Position(epoch + 1, done=(*position.done, totals))
            summaries.append(self._summary(epoch, totals))
            self._save(trainer, position)
            clock.report(position, totals, epoch_done=True)
            if on_epoch is not None:
                on_epoch(summaries[-1], word_vectors(self.vocabulary, trainer.tables[0], True))
        return tuple(summaries)

    def _jobs(
        self, epoch: int, position: Position, kept: KeptBlocks
    ) -> Iterator[tuple[_Job, Position]]:
        """Each block of the epoch from ``position`` on, and the position after it."""
        block, words = position.block, position.words
        start = position.file, position.offset
        for found in kept.blocks_from(self.source, self.vocabulary, *start):
            tokens = found.tokens
            state = block_state(self.options.seed, self.origin.first_epoch + epoch, block)
            job = _Job(tokens, state, epoch * self.corpus_words + words)
            block += 1
            words += tokens.size - int(np.count_nonzero(tokens == SENTENCE_END))
            if words > self.corpus_words:
                break
            yield (
                job,
                replace(position, block=block, file=found.file, offset=found.end, words=words),
            )
        if words != self.corpus_words:
            raise CorpusError(
                "corpus.changed", found=words, epoch=epoch + 1, counted=self.corpus_words
            )

    def _summary(self, epoch: int, totals: EpochTotals) -> EpochSummary:
        end = (epoch + 1) * self.corpus_words
        rate = learning_rate(end, self.corpus_words * self.options.epochs, self.options.rates)
        mean = totals.loss / totals.pairs if totals.pairs else math.nan
        return EpochSummary(epoch + 1, totals.pairs, mean, totals.seconds, rate)

    def _save(self, trainer: _Trainer, position: Position) -> None:
        """Wait for the blocks handed out, then write the checkpoint (a corpus of files)."""
        trainer.wait()
        if not self.options.reads_files:
            return
        tables = trainer.tables
        save_checkpoint(Checkpoint(self.options, self.corpus, *tables, position, self.origin))


def continued_options(kept: KeptModel, given: dict[str, Any]) -> TrainOptions:
    """The options of a run that continues ``kept``: its options, ``output`` its folder and
    ``keep_model`` True, under those ``given``.

    Raises:
        PyTorchNameError: ``gensim.name``, a name of gensim's among ``given``.
    """
    defaults = {**kept.options, "output": kept.folder, "keep_model": True}
    return TrainOptions(**{**defaults, **given})


def _kept_vocabulary(counted: Counted, kept: KeptModel) -> tuple[Vocabulary, Origin]:
    """The kept model's vocabulary counted on the corpus, and the run's origin."""
    vocabulary = kept.vocabulary(counted.counts)
    outside = counted.words - int(vocabulary.counts.sum())
    known = set(vocabulary.words[:-1])
    distinct = sum(1 for word in counted.counts if word not in known)
    if not vocabulary.counts.any():
        raise CorpusError("corpus.no-known-words", folder=str(kept.folder), outside=outside)
    return vocabulary, Origin(kept.epochs, outside, distinct, str(kept.folder))


def _source(options: TrainOptions, kept: KeptModel | None) -> FileSource | SentenceSource:
    """The corpus of ``options`` (read as the kept model's vocabulary was, when continuing)."""
    if not isinstance(options.corpus, Path):
        assert options.corpus is not None
        return SentenceSource(options.corpus)
    verbatim = options.tokenized if kept is None else kept.tokenized
    return FileSource(tuple(corpus_files(options.corpus)), TOKENS if verbatim else WORDS)


def load_compiled_loop(method: str = METHODS[0]) -> None:
    """Load the compiled loop of ``method`` (Numba, and its kernel compiled or read from its
    cache) by training an empty block of a run's types; an error is left for a real block."""
    compiled = METHOD_STEPS[method][0]
    tables = np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32)
    noise = np.ones(1), np.zeros(1, np.intp)
    with contextlib.suppress(Exception):
        tokens = np.empty(0, np.int32)
        compiled(tokens, np.zeros(1), *noise, *tables, 1, 1, 0, RATES, 0, 1, np.zeros(2))


def _discard_checkpoint(options: TrainOptions) -> None:
    if options.reads_files:
        (options.output / CHECKPOINT_FILE).unlink(missing_ok=True)


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
    """Blocks trained on the shared ``tables`` by the run's threads (or, ``reference``, on the
    tape in the calling thread); their loss and pairs summed in :attr:`totals`."""

    def __init__(self, tables: Tables, run: Run) -> None:
        options, counts = run.options, np.asarray(run.vocabulary.counts)
        self.tables, self.totals = tables, EpochTotals()
        noise = NoiseTable.of(counts, options.ns_exponent)
        keep = keep_probabilities(counts, options.sample)
        self._samples = (keep, noise, options.window, options.negatives)
        self._rates = options.rates
        self._words_total = run.corpus_words * options.epochs
        self._steps = METHOD_STEPS[options.method]
        model = SkipGram.adopt(*tables) if options.reference else None
        self._reference = None if model is None else (model, SGD(model.parameters, 1.0))
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
            return reference(*self._reference, drawn, self._words_total, self._rates)  # type: ignore[no-any-return]
        keep, noise, window, negatives = self._samples
        found = np.zeros(2)
        compiled(
            job.tokens, keep, noise.accept, noise.alias, *self.tables, window, negatives,
            job.state, self._rates, job.words_before, self._words_total, found,
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
