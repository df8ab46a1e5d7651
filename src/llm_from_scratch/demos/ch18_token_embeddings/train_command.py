"""The command ``llm-from-scratch ch18 train``: options in, a trained table and a report out
(exit statuses and files left: ``docs/training.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import default_corpus_folder
from llm_from_scratch.demos.ch18_token_embeddings.train import TrainReport, train
from llm_from_scratch.demos.ch18_token_embeddings.train_text import format_report, progress_line
from llm_from_scratch.errors import CorpusError, MismatchError, NonFiniteError, OptionError
from llm_from_scratch.files import one_line, replace_file, writable_path
from llm_from_scratch.labels import TRAIN_LABELS, Labels, label, load_labels
from llm_from_scratch.training.checkpoint import saved_options
from llm_from_scratch.training.options import CHECKPOINT_FILE, TrainOptions, processor_count
from llm_from_scratch.training.run import ProgressState, continued_options
from llm_from_scratch.training.saved import KeptModel, load_kept_model

REFUSED, FAILED, INTERRUPTED = 2, 1, 130
"""Exit statuses: a refused request, a failed write, an interrupted run."""


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
    """Train, print progress to ``err`` and the report to ``out``, write the figure; the status."""
    labels = load_labels(request.lang, TRAIN_LABELS)
    if request.figure is not None:
        try:
            writable_path(str(request.figure))
        except OSError as error:
            return _fail(err, _write_problem(request.figure, error), REFUSED)
    printer = ProgressPrinter(err, labels)
    output = TrainOptions.output  # the default, until the options are read
    try:
        kept = None if request.continue_from is None else load_kept_model(request.continue_from)
        options = _options(request, kept)
        output = options.output
        resume = request.resume is not None
        report = train(options, processor_count(), printer, request.lang, resume, kept)
    except (OptionError, CorpusError, MismatchError) as error:
        printer.finish()
        return _fail(err, _refusal(error, request), REFUSED)
    except (OSError, NonFiniteError) as error:  # a file the run could not write
        printer.finish()
        return _fail(err, str(error), FAILED)
    except KeyboardInterrupt:
        printer.finish()
        resumable = (output / CHECKPOINT_FILE).is_file()
        message = label(labels, "interrupted_resumable" if resumable else "interrupted")
        return _fail(err, message.format(folder=output), INTERRUPTED)
    printer.finish()
    if report.interrupted:
        message = label(labels, "interrupted_after_writing").format(folder=output)
        return _fail(err, message, INTERRUPTED)
    out.write(format_report(report, labels))
    if request.figure is None:
        return 0
    return _write_figure(request.figure, report, request.lang, err)


def _options(request: TrainRequest, kept: KeptModel | None) -> TrainOptions:
    given = dict(request.given)
    if kept is not None:
        return continued_options(kept, given)
    if request.resume is not None:
        given["output"] = request.resume
        return TrainOptions(**{**saved_options(request.resume), **given})
    given.setdefault("corpus", default_corpus_folder())
    return TrainOptions(**given)


def _refusal(error: Exception, request: TrainRequest) -> str:
    default_corpus = "corpus" not in request.given and request.resume is None
    default_corpus = default_corpus and request.continue_from is None
    if default_corpus and isinstance(error, CorpusError) and error.rule == "corpus.missing":
        return f"{error}; `make corpus` fetches the Shakespeare texts there"
    return str(error)


def _write_figure(path: Path, report: TrainReport, lang: str, err: TextIO) -> int:
    from llm_from_scratch.figures.train import render_train_figure

    page = render_train_figure(report, lang).encode("utf-8")
    try:
        replace_file(str(path), [memoryview(page)])
    except OSError as error:
        return _fail(err, _write_problem(path, error), FAILED)
    return 0


def _write_problem(path: Path, error: OSError) -> str:
    return one_line(f"{path}: {error.strerror or error}")


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


def _fail(err: TextIO, message: str, status: int = REFUSED) -> int:
    err.write(f"error: {one_line(message)}\n")
    err.flush()
    return status
