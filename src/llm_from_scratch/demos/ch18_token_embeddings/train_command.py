"""The command ``llm-from-scratch ch18 train``: options in, a trained table and a report out
(exit statuses and files left: ``docs/training.md``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import default_corpus_folder
from llm_from_scratch.demos.ch18_token_embeddings.train import TrainReport, train
from llm_from_scratch.demos.ch18_token_embeddings.train_text import format_report, progress_line
from llm_from_scratch.errors import CorpusError, MismatchError, WordedError
from llm_from_scratch.figures.render import write_page
from llm_from_scratch.files import about, writable_path
from llm_from_scratch.labels import TRAIN_LABELS, Labels, label, load_labels
from llm_from_scratch.training.checkpoint import saved_options
from llm_from_scratch.training.options import CHECKPOINT_FILE, TrainOptions, processor_count
from llm_from_scratch.training.run import ProgressState, continued_options
from llm_from_scratch.training.saved import KeptModel, load_kept_model


@dataclass(frozen=True)
class TrainRequest:
    """The options given by name, the language, the figure's file, the folder to resume, and
    the folder whose kept model to train further."""

    given: dict[str, Any] = field(default_factory=dict)
    lang: str = "en"
    figure: Path | None = None
    resume: Path | None = None
    continue_from: Path | None = None


def run_train(request: TrainRequest, out: TextIO, err: TextIO) -> int:
    """Train, print progress to ``err`` and the report to ``out``, write the figure: 0.

    Raises:
        OptionError: ``train.option``, an option out of range, before anything is read or
            written.
        OSError: a ``--figure`` that cannot be written (before the run: no folder, a folder), or
            a file the run cannot write, about that file.
        MismatchError: ``resume.output``, an ``--output`` that is not the folder ``--resume``
            names, before anything is read or written; the other ``resume.*`` rules.
        WordedError: Ctrl-C, in ``request.lang`` (what the folder holds); a corpus missing
            where the default is, with how to fetch it.
        CorpusError, FileAccessError, OSError, NonFiniteError: as
            :func:`~llm_from_scratch.demos.ch18_token_embeddings.train.train`.
    """
    labels = load_labels(request.lang, TRAIN_LABELS)
    if request.figure is not None:
        _check_figure(request.figure)
    printer = ProgressPrinter(err, labels)
    output = TrainOptions.output  # the default, until the options are read
    try:
        kept = None if request.continue_from is None else load_kept_model(request.continue_from)
        options = _options(request, kept)
        output = options.output
        resume = request.resume is not None
        report = train(options, processor_count(), printer, request.lang, resume, kept)
    except KeyboardInterrupt as interruption:
        resumable = (output / CHECKPOINT_FILE).is_file()
        message = label(labels, "interrupted_resumable" if resumable else "interrupted")
        raise WordedError(message.format(folder=output), interruption) from interruption
    except CorpusError as error:
        default_corpus = "corpus" not in request.given and request.resume is None
        default_corpus = default_corpus and request.continue_from is None
        if not default_corpus or error.rule != "corpus.missing":
            raise
        hint = f"{error}; `make corpus` fetches the Shakespeare texts there"
        raise WordedError(hint, error) from error
    finally:
        printer.finish()
    if report.interrupted:
        message = label(labels, "interrupted_after_writing").format(folder=output)
        raise WordedError(message, KeyboardInterrupt())
    out.write(format_report(report, labels))
    if request.figure is not None:
        _write_figure(request.figure, report, request.lang)
    return 0


def _options(request: TrainRequest, kept: KeptModel | None) -> TrainOptions:
    given = dict(request.given)
    if kept is not None:
        return continued_options(kept, given)
    if request.resume is not None:
        if "output" in given and not _same_folder(given["output"], request.resume):
            folders = {"folder": str(request.resume), "output": str(given["output"])}
            raise MismatchError("resume.output", **folders)
        given["output"] = request.resume
        return TrainOptions(**{**saved_options(request.resume), **given})
    given.setdefault("corpus", default_corpus_folder())
    return TrainOptions(**given)


def _same_folder(one: Path, other: Path) -> bool:
    """Whether two paths name one folder: the same file, else the same path once resolved."""
    try:
        return os.path.samefile(one, other)
    except (OSError, ValueError):  # one is missing, or no path the system takes
        return one.resolve() == other.resolve()


def _check_figure(path: Path) -> None:
    """Refuse a ``--figure`` that cannot be written before the run (status 2: the ``errno``
    of a path with no folder, or a folder)."""
    try:
        writable_path(str(path))
    except OSError as error:
        raise about(str(path), error) from error


def _write_figure(path: Path, report: TrainReport, lang: str) -> None:
    from llm_from_scratch.figures.train import render_train_figure

    write_page(render_train_figure(report, lang), path)


class ProgressPrinter:
    """Progress lines on ``stream``: rewritten in place on a terminal, one per epoch else."""

    def __init__(self, stream: TextIO, labels: Labels) -> None:
        self._stream = stream
        self._labels = labels
        self._terminal = _is_terminal(stream)
        self._open = False

    def __call__(self, state: ProgressState) -> None:
        line = progress_line(state, self._labels)
        if self._terminal:
            self._stream.write(f"\r{line}\033[K")
            self._open = True
            if state.epoch_done:
                self.finish()
        elif state.epoch_done:
            self._stream.write(f"{line}\n")
        self._stream.flush()

    def finish(self) -> None:
        """End a line left open on a terminal."""
        if self._open:
            self._stream.write("\n")
            self._stream.flush()
            self._open = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
