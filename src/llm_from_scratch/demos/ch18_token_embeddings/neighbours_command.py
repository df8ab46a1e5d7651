"""The command ``llm-from-scratch ch18 neighbours``: load a table, print or draw neighbours.

Every message is one line on standard error with exit status 2 (what it echoes is escaped by
:func:`llm_from_scratch.files.one_line`). The command's own messages (usage, the pretrained
table's and the neighbours' errors) come from the neighbours label table in the chosen language;
the library's errors (a checkpoint that cannot be read, a tensor that is not a ``[V, d]`` table)
print their own text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from llm_from_scratch.autograd import EmbeddingError
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    DEFAULT_WORDS,
    NeighboursError,
    neighbours_figure,
    neighbours_report,
    present_groups,
)
from llm_from_scratch.demos.ch18_token_embeddings.neighbours_text import (
    error_message,
    format_neighbours,
    label,
)
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import (
    PretrainedError,
    PretrainedFiles,
    checked_files,
    open_table,
    packaged_files,
)
from llm_from_scratch.errors import LlmError
from llm_from_scratch.figures.labels import Labels, load_labels
from llm_from_scratch.figures.neighbour_labels import NEIGHBOUR_LABELS
from llm_from_scratch.files import one_line, write_file

__all__ = ["NeighboursRequest", "run_neighbours"]

#: The exit status of every refused request.
FAILED = 2


@dataclass(frozen=True)
class NeighboursRequest:
    """The command's arguments."""

    words: tuple[str, ...]
    count: int
    lang: str = "en"
    table: Path | None = None
    tokenizer: Path | None = None
    tensor: str | None = None
    figure: bool = False
    output: Path | None = None


def run_neighbours(request: NeighboursRequest, out: TextIO, err: TextIO) -> int:
    """Print the words' neighbours, or write the figure; 0 on success, 2 on any error."""
    labels = load_labels(request.lang, NEIGHBOUR_LABELS)
    problem = _usage_problem(request)
    if problem is not None:
        return _fail(err, label(labels, "usage", problem))
    try:
        text = _computed(request, labels)
    except (PretrainedError, NeighboursError) as error:
        return _fail(err, error_message(error, labels))
    except (LlmError, EmbeddingError) as error:
        return _fail(err, str(error))
    if request.output is None:
        out.write(text)
        return 0
    try:
        write_file(str(request.output), text.encode("utf-8"))
    except OSError as error:
        return _fail(err, f"{request.output}: {error.strerror or error}")
    return 0


def _usage_problem(request: NeighboursRequest) -> str | None:
    if (request.table is None) != (request.tokenizer is None):
        return "table_and_tokenizer"
    if request.output is not None and not request.figure:
        return "output_without_figure"
    if not request.words and not request.figure:
        return "no_words"
    return None


def _files(request: NeighboursRequest) -> PretrainedFiles:
    if request.table is None or request.tokenizer is None:
        found = packaged_files()
        tensor = request.tensor or found.tensor
        return PretrainedFiles(found.table, found.tokenizer, tensor, found.source)
    given = PretrainedFiles(request.table, request.tokenizer, request.tensor)
    return checked_files(given)


def _computed(request: NeighboursRequest, labels: Labels) -> str:
    files = _files(request)
    table, pieces = open_table(files)
    if not request.figure:
        report = neighbours_report(table, pieces, request.words, request.count, files.shown)
        return format_neighbours(report, labels)
    from llm_from_scratch.figures.neighbours import render_neighbours_figure

    shown = tuple(group_words[0] for _, group_words in present_groups(pieces))
    words = request.words or shown or DEFAULT_WORDS
    figure = neighbours_figure(table, pieces, words, request.count, files.shown)
    return render_neighbours_figure(figure, request.lang)


def _fail(err: TextIO, message: str) -> int:
    err.write(f"error: {one_line(message)}\n")
    return FAILED
