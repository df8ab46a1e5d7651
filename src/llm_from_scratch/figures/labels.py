"""The per-language label tables of the figures, one table per figure.

Every word a figure shows lives in a JSON file per language inside this package, described by a
:class:`LabelTable`: the token-embedding figure's in ``labels/<lang>.json`` with the keys
:data:`LABEL_KEYS` (:data:`TOKEN_EMBEDDING_LABELS`, the default), the neighbours figure's in
``labels/neighbours/<lang>.json`` (:mod:`llm_from_scratch.figures.neighbour_labels`). A table
must hold exactly its keys, each a non-blank string; anything else is a :class:`LabelError` that
names the language and the dotted key path (and the table, for any but the token-embedding one).

>>> load_labels("en")["reverse"]["title"]
'4. Reverse rail: gradients gathered per row'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Final

from llm_from_scratch.files import FILE_BYTE_LIMIT, load_json, read_file
from llm_from_scratch.traces import RULES, SHARINGS, STATES

__all__ = [
    "LABEL_KEYS",
    "LANGUAGES",
    "TOKEN_EMBEDDING_LABELS",
    "LabelError",
    "LabelTable",
    "Labels",
    "check_labels",
    "load_labels",
]

LANGUAGES: Final = ("en", "ru")

#: A label table: nested objects whose leaves are strings, as the template reads them.
Labels = dict[str, "str | Labels"]

#: Every label the template uses, as dotted key paths; one per word of the trace vocabularies.
LABEL_KEYS: Final[tuple[str, ...]] = (
    "title",
    "description",
    "source",
    "fixture.title",
    "fixture.parameter",
    "fixture.table_shape",
    "fixture.id_shape",
    "fixture.output_shape",
    "fixture.accumulation",
    "legend.title",
    *(f"states.{state}" for state in STATES),
    *(f"symbols.{state}" for state in STATES),
    "symbols.plus",
    "symbols.equals",
    "ids.title",
    "ids.intro",
    "ids.region",
    "ids.position",
    "ids.coordinate",
    "ids.id",
    "ids.repeated",
    "ids.repeated_positions",
    "ids.no_repeat",
    "table.title",
    "table.intro",
    "table.region",
    "table.row",
    "table.state",
    "table.uses",
    "table.values",
    "table.gradient",
    "forward.title",
    "forward.intro",
    "forward.region",
    "forward.position",
    "forward.coordinate",
    "forward.id",
    "forward.sharing",
    "forward.one_hot",
    "forward.selected_row",
    "forward.output",
    "forward.upstream",
    *(f"sharing.{sharing}" for sharing in SHARINGS),
    "reverse.title",
    "reverse.intro",
    "reverse.row",
    "reverse.rule",
    "reverse.from_position",
    "reverse.no_contributions",
    "reverse.accumulated",
    *(f"rules.{rule}" for rule in RULES),
)


@dataclass(frozen=True)
class LabelTable:
    """One figure's label tables: its name, the package folder of ``<lang>.json``, its keys."""

    name: str
    folder: tuple[str, ...]
    keys: tuple[str, ...]


#: The token-embedding figure's tables, ``labels/en.json`` and ``labels/ru.json``.
TOKEN_EMBEDDING_LABELS: Final = LabelTable("token-embeddings", ("labels",), LABEL_KEYS)


class LabelError(ValueError):
    """A label table that is missing, malformed, or has a missing, blank or unknown label.

    ``load_labels`` and the label tables of the figures and the exercise session: an unknown
    language, an unreadable label table, or a missing, blank, non-text or unknown label. Its message
    is ``lang: key_path: problem``, preceded by the table's name unless it is the token-embedding
    figure's (``neighbours``, or ``exercises`` for the words of the exercise session).

    Attributes:
        lang: the language code, for example ``"ru"``.
        key_path: the dotted key path, for example ``"reverse.title"`` (empty for the whole
            table).
        problem: what is wrong with it.
        table: the figure whose table it is (:attr:`LabelTable.name`); messages name it unless
            it is the token-embedding figure's.
    """

    def __init__(
        self, lang: str, key_path: str, problem: str, table: str = TOKEN_EMBEDDING_LABELS.name
    ) -> None:
        self.lang = lang
        self.key_path = key_path
        self.problem = problem
        self.table = table
        where = lang if table == TOKEN_EMBEDDING_LABELS.name else f"{table} {lang}"
        where = f"{where}: {key_path}" if key_path else where
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle (and copy) by the constructor's arguments, which rebuild the same message."""
        return type(self), (self.lang, self.key_path, self.problem, self.table)


def load_labels(lang: str, table: LabelTable = TOKEN_EMBEDDING_LABELS) -> Labels:
    """Load and check the label table of one language from the package data.

    Args:
        lang: ``"en"`` or ``"ru"``.
        table: which figure's tables; the token-embedding figure's by default.

    Returns:
        The checked label table.

    Raises:
        LabelError: for an unknown language, unreadable JSON, or a missing, blank or unknown
            label.
    """
    if lang not in LANGUAGES:
        expected = ", ".join(LANGUAGES)
        raise LabelError(lang, "", f"no label table; expected one of {expected}", table.name)
    source = resources.files("llm_from_scratch.figures").joinpath(*table.folder, f"{lang}.json")
    try:  # at most FILE_BYTE_LIMIT bytes, strict JSON (llm_from_scratch.files)
        raw: object = load_json(read_file(source, FILE_BYTE_LIMIT).decode("utf-8"))
    except (OSError, ValueError) as error:
        problem = f"cannot read the label table: {error}"
        raise LabelError(lang, "", problem, table.name) from error
    return check_labels(lang, raw, table)


def check_labels(lang: str, raw: object, table: LabelTable = TOKEN_EMBEDDING_LABELS) -> Labels:
    """Check that a decoded label table holds exactly the labels the figure needs.

    Args:
        lang: the language code, used in error messages.
        raw: the decoded JSON value.
        table: which figure's keys to expect; the token-embedding figure's by default.

    Returns:
        The same table, typed.

    Raises:
        LabelError: naming the first missing, blank, non-text or unknown key path.
    """
    if not isinstance(raw, Mapping):
        raise LabelError(lang, "", "expected a JSON object of labels", table.name)
    for path in table.keys:
        _check_label(lang, raw, path, table)
    _reject_unknown(lang, raw, "", table)
    return _typed(raw)


def _check_label(lang: str, raw: Mapping[object, object], path: str, table: LabelTable) -> None:
    node: object = raw
    walked: list[str] = []
    for key in path.split("."):
        walked.append(key)
        if not isinstance(node, Mapping) or key not in node:
            raise LabelError(lang, ".".join(walked), "the label is missing", table.name)
        node = node[key]
    if not isinstance(node, str):
        raise LabelError(lang, path, "expected text", table.name)
    if not node.strip():
        raise LabelError(lang, path, "the label is blank", table.name)


def _reject_unknown(
    lang: str, node: Mapping[object, object], prefix: str, table: LabelTable
) -> None:
    known = set(table.keys)
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _reject_unknown(lang, value, f"{path}.", table)
        elif path not in known:
            raise LabelError(lang, path, "unknown label (not used by the figure)", table.name)


def _typed(node: Mapping[object, object]) -> Labels:
    return {
        str(key): _typed(value) if isinstance(value, Mapping) else str(value)
        for key, value in node.items()
    }
