"""The command ``llm-from-scratch ch18 neighbours``: load a table, print or draw neighbours; an
error of ours is raised worded in the chosen language when the label table words its rule
(:class:`~llm_from_scratch.errors.WordedError`), for the command line to report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from llm_from_scratch.demos.ch18_token_embeddings.analogy import AnalogyReport
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    DEFAULT_WORDS,
    NeighboursReport,
    TableFacts,
    WordNeighbours,
    neighbours_figure,
    neighbours_report,
    present_groups,
)
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import chosen_files, open_table
from llm_from_scratch.errors import LlmError, OptionError, WordedError
from llm_from_scratch.figures.render import write_page
from llm_from_scratch.labels import (
    NEIGHBOUR_ERROR_RULES,
    NEIGHBOUR_LABELS,
    Labels,
    aligned_rows,
    cosine_text,
    label,
    load_labels,
    neighbour_text,
    pieces_text,
)


@dataclass(frozen=True)
class NeighboursRequest:
    """The command's arguments: ``figure`` is the page's file (``-``: standard output)."""

    words: tuple[str, ...]
    count: int
    lang: str = "en"
    table: Path | None = None
    tokenizer: Path | None = None
    tensor: str | None = None
    figure: Path | None = None
    analogy: tuple[str, ...] | None = None


def run_neighbours(request: NeighboursRequest, out: TextIO) -> int:
    """Print the words' neighbours, or write the figure: 0.

    Raises:
        OptionError: ``neighbours.table-and-tokenizer``, ``neighbours.no-words``, and the errors
            of the table, the tokenizer and the words, as they are in English.
        WordedError: such an error worded otherwise in ``request.lang`` (:func:`error_message`);
            its status is the error's.
        OSError: the figure's file cannot be written, about that file.
    """
    labels = load_labels(request.lang, NEIGHBOUR_LABELS)
    try:
        text = _computed(request, labels)
    except LlmError as error:
        worded = error_message(error, labels)
        if worded == str(error):
            raise
        raise WordedError(worded, error) from error
    if request.figure is None or str(request.figure) == "-":
        out.write(text)
    else:
        write_page(text, request.figure)
    return 0


def _checked(request: NeighboursRequest) -> None:
    if (request.table is None) != (request.tokenizer is None):
        raise OptionError("neighbours.table-and-tokenizer")
    if request.analogy is not None and (request.words or request.figure is not None):
        raise OptionError("neighbours.analogy-alone")
    if not request.words and request.figure is None and request.analogy is None:
        raise OptionError("neighbours.no-words")


def _computed(request: NeighboursRequest, labels: Labels) -> str:
    _checked(request)
    files = chosen_files(request.table, request.tokenizer, request.tensor)
    table, pieces = open_table(files)
    if request.analogy is not None:
        from llm_from_scratch.demos.ch18_token_embeddings.analogy import analogy_report

        analogy = analogy_report(table, pieces, request.analogy, request.count, files.shown)
        return format_analogy(analogy, labels)
    if request.figure is None:
        report = neighbours_report(table, pieces, request.words, request.count, files.shown)
        return format_neighbours(report, labels)
    from llm_from_scratch.figures.neighbours import render_neighbours_figure

    shown = tuple(group_words[0] for _, group_words in present_groups(pieces))
    words = request.words or shown or DEFAULT_WORDS
    figure = neighbours_figure(table, pieces, words, request.count, files.shown)
    return render_neighbours_figure(figure, request.lang)


def error_message(error: Exception, labels: Labels) -> str:
    """The error's message: its rule's template in the labels over its fields, else its own."""
    if not isinstance(error, LlmError) or error.rule not in NEIGHBOUR_ERROR_RULES:
        return str(error)
    return label(labels, "errors", *error.rule.split(".")).format(**error.fields)


def format_neighbours(report: NeighboursReport, labels: Labels) -> str:
    """The report as text: the table, the two rules, then each word's two lists side by side."""
    lines = [
        _table_line(report.table, labels, with_dtype=True),
        label(labels, "id_rule"),
        label(labels, "vector_rule"),
    ]
    for word in report.words:
        lines += ["", *_word_block(word, labels)]
    lines += ["", baseline_text(report.table, labels)]
    return "".join(f"{line}\n" for line in lines)


def format_analogy(report: AnalogyReport, labels: Labels) -> str:
    """The analogy as text: the table, the rule, the answers and the random-pair baseline."""
    first, second, third = report.words
    table = [[label(labels, "rank"), label(labels, "text", "answer"), label(labels, "cosine")]]
    for rank, (word, cosine) in enumerate(report.answers, start=1):
        table.append([str(rank), word, cosine_text(cosine)])
    lines = [
        _table_line(report.table, labels),
        label(labels, "text", "analogy_rule").format(a=first, b=second, c=third),
        *aligned_rows(table, numeric=(0, 2)),
        baseline_text(report.table, labels),
    ]
    return "".join(f"{line}\n" for line in lines)


def _table_line(table: TableFacts, labels: Labels, with_dtype: bool = False) -> str:
    rows, width = table.shape
    size = f"{rows} {label(labels, 'rows')}, {label(labels, 'width')} {width}"
    size += f", {table.dtype}" if with_dtype else ""
    return (
        f"{label(labels, 'table')} {table.name}: {size}; {label(labels, 'table_file')} {table.path}"
    )


def baseline_text(table: TableFacts, labels: Labels) -> str:
    """The random-pair baseline's line."""
    cosine = cosine_text(table.baseline_cosine)
    return label(labels, "text", "baseline").format(pairs=table.baseline_pairs, cosine=cosine)


def _word_block(word: WordNeighbours, labels: Labels) -> list[str]:
    heads = ("rank", "id_neighbours", "cosine", "vector_neighbours", "cosine")
    table = [[label(labels, key) for key in heads]]
    pairs = zip(word.id_neighbours, word.vector_neighbours, strict=True)
    for rank, (by_id, by_vector) in enumerate(pairs, start=1):
        table.append([str(rank)])
        for found in (by_id, by_vector):
            table[-1] += [neighbour_text(found.id, found.token, labels), cosine_text(found.cosine)]
    means = (word.id_mean_cosine, word.vector_mean_cosine)
    table.append(["", label(labels, "mean_cosine"), cosine_text(means[0]), ""])
    table[-1].append(cosine_text(means[1]))
    pieces = pieces_text(((piece.token, piece.id) for piece in word.pieces), labels)
    heading = f"{label(labels, 'word')} {word.word}: {label(labels, 'pieces')} {pieces}"
    return [heading, *aligned_rows(table, numeric=(0, 2, 4))]
