"""The per-language label tables of the token-embedding figure.

Every word the figure shows lives in ``labels/<lang>.json`` inside this package. A table must
hold exactly the keys in :data:`LABEL_KEYS`, each a non-blank string; anything else is a
:class:`LabelError` that names the language and the dotted key path.

>>> load_labels("en")["reverse"]["title"]
'4. Reverse rail: gradients gathered per row'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Final

from llm_from_scratch.traces import RULES, SHARINGS, STATES

__all__ = ["LABEL_KEYS", "LANGUAGES", "LabelError", "Labels", "check_labels", "load_labels"]

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


class LabelError(ValueError):
    """A label table that is missing, malformed, or has a missing, blank or unknown label.

    Attributes:
        lang: the language code, for example ``"ru"``.
        key_path: the dotted key path, for example ``"reverse.title"`` (empty for the whole
            table).
    """

    def __init__(self, lang: str, key_path: str, problem: str) -> None:
        self.lang = lang
        self.key_path = key_path
        where = f"{lang}: {key_path}" if key_path else lang
        super().__init__(f"{where}: {problem}")


def load_labels(lang: str) -> Labels:
    """Load and check the label table of one language from the package data.

    Args:
        lang: ``"en"`` or ``"ru"``.

    Returns:
        The checked label table.

    Raises:
        LabelError: for an unknown language, unreadable JSON, or a missing, blank or unknown
            label.
    """
    if lang not in LANGUAGES:
        raise LabelError(lang, "", f"no label table; expected one of {', '.join(LANGUAGES)}")
    source = resources.files("llm_from_scratch.figures").joinpath("labels", f"{lang}.json")
    try:
        raw: object = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise LabelError(lang, "", f"cannot read the label table: {error}") from error
    return check_labels(lang, raw)


def check_labels(lang: str, raw: object) -> Labels:
    """Check that a decoded label table holds exactly the labels the figure needs.

    Args:
        lang: the language code, used in error messages.
        raw: the decoded JSON value.

    Returns:
        The same table, typed.

    Raises:
        LabelError: naming the first missing, blank, non-text or unknown key path.
    """
    if not isinstance(raw, Mapping):
        raise LabelError(lang, "", "expected a JSON object of labels")
    for path in LABEL_KEYS:
        node: object = raw
        walked: list[str] = []
        for key in path.split("."):
            walked.append(key)
            if not isinstance(node, Mapping) or key not in node:
                raise LabelError(lang, ".".join(walked), "the label is missing")
            node = node[key]
        if not isinstance(node, str):
            raise LabelError(lang, path, "expected text")
        if not node.strip():
            raise LabelError(lang, path, "the label is blank")
    _reject_unknown(lang, raw, "")
    return _typed(raw)


def _reject_unknown(lang: str, node: Mapping[object, object], prefix: str) -> None:
    known = set(LABEL_KEYS)
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _reject_unknown(lang, value, f"{path}.")
        elif path not in known:
            raise LabelError(lang, path, "unknown label (not used by the figure)")


def _typed(node: Mapping[object, object]) -> Labels:
    return {
        str(key): _typed(value) if isinstance(value, Mapping) else str(value)
        for key, value in node.items()
    }
