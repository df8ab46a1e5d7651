"""The chapter's eleven exercises as data, ``exercises/<lang>.json`` (``ch18-exercises-v1``): the
session's words (``ui``), each exercise's texts (``evidence`` a template over
:data:`EVIDENCE_FIELDS`), all checked on loading.

>>> exercises = load_exercises("en")
>>> [exercise.number for exercise in exercises.exercises if exercise.checked]
[1, 2, 3, 5, 6, 8, 10, 11]
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from llm_from_scratch.errors import FormatError
from llm_from_scratch.labels import LANGUAGES, Labels, LabelTable, check_labels, package_json

EXERCISE_FORMAT: Final = "ch18-exercises-v1"
#: Each exercise's kind, by number: what its answer is (``explanation``: none).
KINDS: Final = {
    1: "lookup_output", 2: "one_hot_product", 3: "table_gradient", 4: "explanation",
    5: "output_shapes", 6: "error_order", 7: "explanation", 8: "boolean", 9: "explanation",
    10: "boolean", 11: "boolean",
}  # fmt: skip
#: The kinds whose answers are checked, each with a hint on how to type the answer.
ANSWER_FORMATS: Final = tuple(sorted({kind for kind in KINDS.values() if kind != "explanation"}))
#: The three faults of exercise 6, by the layer's error rule.
ERROR_KINDS: Final = {"ids.shape": "shape", "ids.count": "count", "ids.out-of-range": "id"}
#: The computed facts each exercise's evidence template may name.
EVIDENCE_FIELDS: Final[dict[int, frozenset[str]]] = {
    1: frozenset({"ids", "table", "output", "shape"}),
    2: frozenset({"id", "one_hot", "product", "lookup"}),
    3: frozenset({"upstream", "gradient"}),
    4: frozenset({"row", "contributions", "accumulated", "count", "parameters"}),
    5: frozenset({"id_shapes", "output_shapes"}),
    6: frozenset({"order", "message"}),
    7: frozenset({"layer_message", "gather_message"}),
    8: frozenset({"same_node", "name"}),
    9: frozenset({"comparison"}),
    10: frozenset({"equal"}),
    11: frozenset({"ids", "count", "parameters", "row", "contributions", "accumulated"}),
}
#: The session's words (``ui``), checked like a figure's label table.
UI_LABELS: Final = LabelTable(
    "exercises",
    ("exercises",),
    (
        "title", "intro", "exercise", "of", "given", "table", "token_ids", "upstream",
        "your_prediction", "right", "wrong", "computed_value", "explanation", "evidence",
        "true_means", "yes", "no", "no_answer", "continue", "unreadable", "try_again", "missing",
        "score", "all_right", "wrong_exercises", "unanswered_exercises", "skip", "reveal",
        "explanation_only",
        *(f"answer_formats.{kind}" for kind in ANSWER_FORMATS),
        *(f"error_kinds.{kind}" for kind in ERROR_KINDS.values()),
        "neighbours.id_neighbours", "neighbours.vector_neighbours", "neighbours.mean_cosine",
        "neighbours.table_missing",
        "answers_file.title", "answers_file.unreadable", "answers_file.too_large",
        "answers_file.not_json",
        "answers_file.not_object", "answers_file.unknown_exercise",
        "answers_file.explanation_exercise",
    ),
)  # fmt: skip
_TEXT_FIELDS: Final = ("prompt", "explanation", "evidence")


@dataclass(frozen=True)
class Exercise:
    """One exercise: its number, kind and texts; ``true_means`` for a yes/no one."""

    number: int
    kind: str
    prompt: str
    explanation: str
    evidence: str
    true_means: str | None

    @property
    def checked(self) -> bool:
        """Whether the exercise takes an answer to check."""
        return self.kind != "explanation"


@dataclass(frozen=True)
class ExerciseSet:
    """The checked contents of one exercise file."""

    lang: str
    ui: Labels
    exercises: tuple[Exercise, ...]


def load_exercises(lang: str) -> ExerciseSet:
    """Load and check the exercises of one language (``"en"`` or ``"ru"``).

    Raises:
        FormatError: ``exercises.data`` (also for no such language or an unreadable file), then
            ``labels.table``, as :func:`check_exercises`.
    """
    if lang not in LANGUAGES:
        raise _data_error(lang, "", f"no exercise file; expected {' or '.join(LANGUAGES)}")
    try:
        raw = package_json(__package__ or "", "exercises", f"{lang}.json")
    except (OSError, ValueError) as error:
        raise _data_error(lang, "", f"cannot read the file: {error}") from error
    return check_exercises(lang, raw)


def check_exercises(lang: str, raw: object) -> ExerciseSet:
    """Check a decoded exercise file.

    Raises:
        FormatError: ``exercises.data``, the first departure from the format, by key path;
            ``labels.table``, a missing, blank or unknown word of ``ui``.
    """
    if not isinstance(raw, Mapping):
        raise _data_error(lang, "", "expected a JSON object")
    for key, expected in (("format", EXERCISE_FORMAT), ("language", lang)):
        if raw.get(key) != expected:
            raise _data_error(lang, key, f"expected {expected!r}, found {raw.get(key)!r}")
    ui = check_labels(lang, raw.get("ui"), UI_LABELS)
    items = raw.get("exercises")
    if not isinstance(items, list) or len(items) != len(KINDS):
        raise _data_error(lang, "exercises", f"expected a list of {len(KINDS)} exercises")
    exercises = tuple(
        _exercise(lang, f"exercises.{index}", item, number)
        for index, (item, number) in enumerate(zip(items, KINDS, strict=True))
    )
    return ExerciseSet(lang, ui, exercises)


def _exercise(lang: str, where: str, item: object, number: int) -> Exercise:
    if not isinstance(item, Mapping):
        raise _data_error(lang, where, "expected a JSON object")
    kind = KINDS[number]
    if item.get("number") != number or item.get("kind") != kind:
        found = (item.get("number"), item.get("kind"))
        detail = f"expected exercise {number} of kind {kind}, found {found}"
        raise _data_error(lang, where, detail)
    texts = {name: _text(lang, f"{where}.{name}", item.get(name)) for name in _TEXT_FIELDS}
    _check_evidence(lang, f"{where}.evidence", texts["evidence"], EVIDENCE_FIELDS[number])
    true_means = None
    if kind == "boolean":
        true_means = _text(lang, f"{where}.true_means", item.get("true_means"))
    known = {"number", "kind", *_TEXT_FIELDS, *(("true_means",) if true_means else ())}
    unknown = sorted(str(key) for key in item if key not in known)
    if unknown:
        raise _data_error(lang, f"{where}.{unknown[0]}", "unknown key")
    return Exercise(
        number, kind, texts["prompt"], texts["explanation"], texts["evidence"], true_means
    )


def _data_error(lang: str, key_path: str, detail: str) -> FormatError:
    return FormatError("exercises.data", lang=lang, key_path=key_path, detail=detail)


def _text(lang: str, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _data_error(lang, where, "expected non-blank text")
    return value


def _check_evidence(lang: str, where: str, template: str, fields: frozenset[str]) -> None:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        raise _data_error(lang, where, f"not a template: {error}") from error
    unknown = sorted(names - fields)
    if unknown:
        detail = f"names {unknown[0]!r}, not one of {sorted(fields)}"
        raise _data_error(lang, where, detail)
