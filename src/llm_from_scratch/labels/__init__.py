"""Every word the lesson shows, in English and Russian, and the number formats its texts share.

A :class:`LabelTable` describes a JSON file per language in this package, which holds exactly its
keys, each a non-blank string, else a ``FormatError`` (``labels.table``) names the key path.

>>> load_labels("en")["reverse"]["title"]
'4. Reverse rail: gradients gathered per row'
>>> load_labels("ru", NEIGHBOUR_LABELS)["groups"]["weekdays"]
'дни недели'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Final

from llm_from_scratch.files import FILE_BYTE_LIMIT, load_json, read_file
from llm_from_scratch.traces.token_embeddings_v1 import RULES, SHARINGS, STATES

if TYPE_CHECKING:
    from llm_from_scratch.errors import FormatError

LANGUAGES: Final = ("en", "ru")

#: A label table: nested objects whose leaves are strings.
Labels = dict[str, "str | Labels"]


@dataclass(frozen=True)
class LabelTable:
    """One table: its name, its folder in this package, and its keys as dotted paths."""

    name: str
    folder: tuple[str, ...]
    keys: tuple[str, ...]


def _keys(prefix: str, *names: str) -> tuple[str, ...]:
    return tuple(f"{prefix}.{name}" for name in names)


#: Every label the token-embedding figure uses; one per word of the trace vocabularies.
LABEL_KEYS: Final = (
    "title", "description", "source", "numbers",
    *_keys("fixture", "title", "parameter", "table_shape", "id_shape", "output_shape",
           "accumulation"),
    "legend.title", *_keys("states", *STATES), *_keys("symbols", *STATES, "plus", "equals"),
    *_keys("ids", "title", "intro", "region", "position", "coordinate", "id", "repeated",
           "repeated_positions", "no_repeat"),
    *_keys("table", "title", "intro", "region", "row", "state", "uses", "values", "gradient"),
    *_keys("forward", "title", "intro", "region", "position", "coordinate", "id", "sharing",
           "one_hot", "product", "selected_row", "output"),
    *_keys("links", "forward_title", "forward_description", "reverse_title",
           "reverse_description", "position", "row"),
    *_keys("sharing", *SHARINGS),
    *_keys("reverse", "title", "intro", "upstream_region", "position", "upstream", "to_row",
           "row", "rule", "from_position", "no_contributions", "accumulated"),
    *_keys("rules", *RULES),
)  # fmt: skip
TOKEN_EMBEDDING_LABELS: Final = LabelTable("token-embeddings", (), LABEL_KEYS)

#: The groups of the neighbours' default word set.
GROUP_NAMES: Final = ("royalty", "numbers", "weekdays", "colours", "animals")
#: The rules whose messages ``ch18 neighbours`` prints in the chosen language.
NEIGHBOUR_ERROR_RULES: Final = (
    "pretrained.package", "tokenizers.package", "pretrained.missing-file", "tokenizer.file",
    "table.unknown-tensor", "neighbours.count", "neighbours.table-and-tokenizer",
    "neighbours.no-words", "neighbours.analogy-alone", "word.empty", "word.unknown",
    "word.pieces", "word.zero-vector", "pair.rows", "pair.vocabulary-size", "pair.fingerprint",
    "word.several",
)  # fmt: skip
NEIGHBOUR_LABELS: Final = LabelTable(
    "neighbours",
    ("neighbours",),
    (
        "title", "description", "source", "table", "table_file", "rows", "width", "id_rule",
        "vector_rule", "word", "pieces", "rank", "id", "cosine", "id_neighbours",
        "vector_neighbours", "mean_cosine", "no_token", "baseline_short",
        *_keys("text", "baseline", "analogy_rule", "answer"),
        *_keys("projection", "title", "intro", "region", "image", "component", "explains",
               "together", "rest"),
        "legend.title", *_keys("groups", *GROUP_NAMES),
        *_keys("group_table", "title", "intro", "region", "group", "words", "within", "between"),
        *_keys("neighbour_table", "title", "intro", "region"),
        *_keys("errors", *NEIGHBOUR_ERROR_RULES),
    ),
)  # fmt: skip

#: The demo's lines (``llm-from-scratch ch18``), each a template over the values it shows.
DEMO_LABELS: Final = LabelTable(
    "demo",
    ("demo",),
    (
        "table", "ids", "output", "one_hot", "upstream", "gradient", "repeated_row",
        "unused_zero", "initialized", "identity", "empty", "bounds", "handoff", "true", "false",
    ),
)  # fmt: skip

#: The word groups of the ``ch18 train`` report.
TRAIN_GROUP_NAMES: Final = ("family", "numbers", "royalty", "time_of_day", "body")
#: The words of the ``ch18 train`` report's figure, under ``figure``.
FIGURE_KEYS: Final = (
    "title", "description", "source", "corpus", "table", "rows", "width", "epochs", "intro",
    "legend", "before.title", "before.region", "after.title", "after.region", "image",
    "component", "explains", "inside", "between", "separation", "no_projection",
    "group_table.title", "group_table.intro", "group_table.region", "together", "rest",
    "separate", "loss.title", "loss.intro", "loss.region", "loss.image", "loss.epoch",
    "loss.loss",
)  # fmt: skip
TRAIN_LABELS: Final = LabelTable(
    "train",
    ("train",),
    (
        "corpus", "model", "training", "method_pairs", "method_hogbatch", "resumed", "continued",
        "no_training",
        *_keys("epoch_header", "epoch", "pairs", "loss", "seconds"),
        "neighbours", "before", "after", "groups", "no_groups",
        *_keys("group_header", "group", "words", "inside", "between", "separation"),
        "all_groups", *_keys("group_names", *TRAIN_GROUP_NAMES), "wrote", "kept_model", "progress",
        "interrupted", "interrupted_resumable", "interrupted_after_writing",
        *_keys("figure", *FIGURE_KEYS),
    ),
)  # fmt: skip


def label_error(lang: str, key_path: str, problem: str, table: str) -> FormatError:
    """The ``labels.table`` error at ``lang: key_path`` (errors is imported only here)."""
    from llm_from_scratch.errors import FormatError

    place = lang if table == TOKEN_EMBEDDING_LABELS.name else f"{table} {lang}"
    place = f"{place}: {key_path}" if key_path else place
    fields = {"table": table, "lang": lang, "key_path": key_path}
    return FormatError("labels.table", place=place, problem=problem, **fields)


def load_labels(lang: str, table: LabelTable = TOKEN_EMBEDDING_LABELS) -> Labels:
    """Load and check one language's table (the token-embedding figure's by default)."""
    if lang not in LANGUAGES:
        expected = ", ".join(LANGUAGES)
        raise label_error(lang, "", f"no label table; expected one of {expected}", table.name)
    try:
        raw = package_json(__name__, *table.folder, f"{lang}.json")
    except (OSError, ValueError) as error:
        problem = f"cannot read the label table: {error}"
        raise label_error(lang, "", problem, table.name) from error
    return check_labels(lang, raw, table)


def package_json(package: str, *parts: str) -> object:
    """A JSON file of a package (at most ``FILE_BYTE_LIMIT`` bytes, strict JSON: files.py);
    ``OSError`` or ``ValueError`` when it cannot be read so."""
    source = resources.files(package).joinpath(*parts)
    return load_json(read_file(source, FILE_BYTE_LIMIT).decode("utf-8"))


def check_labels(lang: str, raw: object, table: LabelTable = TOKEN_EMBEDDING_LABELS) -> Labels:
    """``raw``, a decoded table, typed, once it holds exactly the table's labels."""
    if not isinstance(raw, Mapping):
        raise label_error(lang, "", "expected a JSON object of labels", table.name)
    for path in table.keys:
        node: object = raw
        walked: list[str] = []
        for key in path.split("."):
            walked.append(key)
            if not isinstance(node, Mapping) or key not in node:
                raise label_error(lang, ".".join(walked), "the label is missing", table.name)
            node = node[key]
        problem = "expected text" if not isinstance(node, str) else "the label is blank"
        if not isinstance(node, str) or not node.strip():
            raise label_error(lang, path, problem, table.name)
    _reject_unknown(lang, raw, "", table)
    return _typed(raw)


def _reject_unknown(
    lang: str, node: Mapping[object, object], prefix: str, table: LabelTable
) -> None:
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _reject_unknown(lang, value, f"{path}.", table)
        elif path not in table.keys:
            raise label_error(lang, path, "unknown label (not used by the figure)", table.name)


def _typed(node: Mapping[object, object]) -> Labels:
    return {
        str(key): _typed(value) if isinstance(value, Mapping) else str(value)
        for key, value in node.items()
    }


def label(labels: Labels, *path: str) -> str:
    """The label at a key path: ``label(labels, "errors", "word", "empty")``."""
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


def neighbour_text(token_id: int, token: str | None, labels: Labels) -> str:
    """``ID token``, or the ``no_token`` label for an ID the tokenizer does not have."""
    return f"{token_id} {token if token is not None else label(labels, 'no_token')}"


def pieces_text(pieces: Iterable[tuple[str, int]], labels: Labels) -> str:
    """Word pieces as ``token (ID n)``, comma-separated."""
    return ", ".join(f"{token} ({label(labels, 'id')} {token_id})" for token, token_id in pieces)


def aligned_rows(table: Sequence[Sequence[str]], numeric: Sequence[int]) -> list[str]:
    """The rows as lines, columns padded to their widest cell (``numeric`` ones to the right)."""
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    return [
        "  ".join(
            cell.rjust(widths[k]) if k in numeric else cell.ljust(widths[k])
            for k, cell in enumerate(row)
        ).rstrip()
        for row in table
    ]
