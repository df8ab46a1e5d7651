"""Format a neighbours report, and the neighbours' errors, in one language.

Every word comes from the neighbours label table (``figures/labels/neighbours/<lang>.json``),
every number from the report: cosines print with four decimals, IDs as integers.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    Neighbour,
    NeighboursReport,
    WordNeighbours,
)
from llm_from_scratch.errors import StructuredError
from llm_from_scratch.figures.labels import Labels

__all__ = [
    "aligned_rows",
    "cosine_text",
    "error_message",
    "format_neighbours",
    "label",
    "neighbour_text",
    "pieces_text",
]


def label(labels: Labels, *path: str) -> str:
    """The label at a key path of a checked table (``label(labels, "errors", name)``)."""
    node: str | Labels = labels
    for key in path:
        if not isinstance(node, dict):
            raise KeyError(".".join(path))
        node = node[key]
    if not isinstance(node, str):
        raise KeyError(".".join(path))
    return node


def cosine_text(value: float) -> str:
    """A cosine with four decimals: ``0.5442``, ``-0.0508``."""
    return f"{value:.4f}"


def neighbour_text(neighbour: Neighbour, labels: Labels) -> str:
    """``ID token``, or the no-token label for an ID the tokenizer does not have."""
    token = neighbour.token if neighbour.token is not None else label(labels, "no_token")
    return f"{neighbour.id} {token}"


def pieces_text(word: WordNeighbours, labels: Labels) -> str:
    """The word's pieces as ``token (ID n)``, comma-separated."""
    return ", ".join(f"{piece.token} ({label(labels, 'id')} {piece.id})" for piece in word.pieces)


def format_neighbours(report: NeighboursReport, labels: Labels) -> str:
    """The report as text: the table, the two rules, then one block per word.

    Each block is the word and its pieces, one line per rank with the ID neighbour and the
    vector neighbour side by side, and a line of the two mean cosines.
    """
    rows, width = report.table_shape
    lines = [
        f"{label(labels, 'table')} {report.table_name}: {rows} {label(labels, 'rows')}, "
        f"{label(labels, 'width')} {width}, {report.table_dtype}; "
        f"{label(labels, 'table_file')} {report.table_path}",
        label(labels, "id_rule"),
        label(labels, "vector_rule"),
    ]
    for word in report.words:
        lines += ["", *_word_block(word, labels)]
    return "".join(f"{line}\n" for line in lines)


def _word_block(word: WordNeighbours, labels: Labels) -> list[str]:
    cosine = label(labels, "cosine")
    table = [
        [
            label(labels, "rank"),
            label(labels, "id_neighbours"),
            cosine,
            label(labels, "vector_neighbours"),
            cosine,
        ],
    ]
    for rank, (by_id, by_vector) in enumerate(
        zip(word.id_neighbours, word.vector_neighbours, strict=True), start=1
    ):
        table.append(
            [
                str(rank),
                neighbour_text(by_id, labels),
                cosine_text(by_id.cosine),
                neighbour_text(by_vector, labels),
                cosine_text(by_vector.cosine),
            ]
        )
    table.append(
        [
            "",
            label(labels, "mean_cosine"),
            cosine_text(word.id_mean_cosine),
            "",
            cosine_text(word.vector_mean_cosine),
        ]
    )
    pieces = pieces_text(word, labels)
    heading = f"{label(labels, 'word')} {word.word}: {label(labels, 'pieces')} {pieces}"
    return [heading, *aligned_rows(table, numeric=(0, 2, 4))]


def aligned_rows(table: Sequence[Sequence[str]], numeric: Sequence[int]) -> list[str]:
    """The rows of ``table`` as lines: columns padded to their widest cell, the ``numeric`` ones
    aligned right, two spaces between columns."""
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    lines = []
    for row in table:
        cells = [
            cell.rjust(widths[k]) if k in numeric else cell.ljust(widths[k])
            for k, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def error_message(error: StructuredError, labels: Labels) -> str:
    """The error's message in the labels' language: its template there (the one of its key
    field's value, for an error worded by a key), over its fields."""
    key = () if error.template_key is None else (str(getattr(error, error.template_key)),)
    template = label(labels, "errors", type(error).__name__, *key)
    return template.format(**{name: getattr(error, name) for name in error.field_names})
