"""The exercises' answers and evidence, computed by the library when they are asked for:
:func:`chapter_facts` runs the fixture and the layer, :func:`expected_answers` makes the facts
the answers (the answers file's JSON form), :func:`same_answer` compares one.

>>> expected_answers(chapter_facts())[6]
{'order': ['shape', 'count', 'id'], 'first': {'id': 4, 'position': 1}}
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, cast

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.exercise_data import ERROR_KINDS, KINDS
from llm_from_scratch.demos.ch18_token_embeddings.fixture import KNOWN_FIXTURE, Ch18Fixture
from llm_from_scratch.demos.ch18_token_embeddings.report import (
    build_report,
    explicit_one_hot_product,
)
from llm_from_scratch.errors import FormatError, IdError
from llm_from_scratch.files import FILE_BYTE_LIMIT, is_too_large, load_json, read_file
from llm_from_scratch.nn import Embedding

#: The exercises' own inputs: the ID of exercise 2, the ID shapes of exercise 5, the IDs of 6.
ONE_HOT_ID: Final = 2
OUTPUT_SHAPE_CASES: Final = ((2, 3), (), (0,))
SCANNED_IDS: Final = (1, 4, 9)

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


#: The facts the exercises check or show, by the names their evidence templates use.
ChapterFacts = dict[str, Json]


def chapter_facts(fixture: Ch18Fixture = KNOWN_FIXTURE) -> ChapterFacts:
    """Run the fixture and the exercises' own inputs through the library: every fact, JSON-like
    (a text as it is shown)."""
    report = build_report(fixture)
    layer = fixture.layer()
    indicators, product = explicit_one_hot_product(layer.table.tensor.numpy(), [ONE_HOT_ID])
    repeated = report.repeated_rows[0]
    scan = functools.partial(layer.forward, list(SCANNED_IDS), (len(SCANNED_IDS),))
    error = _raised(scan, f"the layer accepted the IDs {list(SCANNED_IDS)}")
    names = layer.parameters().names()
    return {
        "table": _nested(report.table_shape, [v for row in report.rows for v in row.values]),
        "ids": _nested(report.fixture.token_shape, report.fixture.token_ids),
        "output": _nested(report.output_shape, report.output_values),
        "shape": list(report.output_shape),
        "id": ONE_HOT_ID,
        "one_hot": _plain(indicators[0]),
        "product": _plain(product),
        "lookup": _plain(layer(ONE_HOT_ID).numpy().tolist()),
        "upstream": _nested(report.upstream_shape, report.upstream_values),
        "gradient": _nested(report.gradient_shape, report.gradient_values),
        "row": repeated.row,
        "contributions": _plain([list(vector) for vector in repeated.contributions]),
        "accumulated": _plain(list(repeated.accumulated)),
        "count": len(names),
        "parameters": ", ".join(names),
        "name": names[0],
        "id_shapes": [list(shape) for shape in OUTPUT_SHAPE_CASES],
        "output_shapes": [list(_output_shape(layer, shape)) for shape in OUTPUT_SHAPE_CASES],
        "order": list(_error_order(layer)),
        "first": {name: cast(int, error.fields[name]) for name in ("id", "position")},
        "message": str(error),
        "layer_message": str(error),
        "gather_message": _gather_message(layer),
        "same_node": layer.clone().table.tensor.is_same_node(layer.table.tensor),
        "equal": report.one_hot_equals_lookup,
    }


def expected_answers(facts: ChapterFacts) -> dict[int, Json]:
    """The answer of each checked exercise, in the answers file's form."""
    sums_into_one_row = facts["accumulated"] == _plain(
        np.sum(np.array(facts["contributions"], dtype=float), axis=0).tolist()
    )
    return {
        1: facts["output"],
        2: {"one_hot": facts["one_hot"], "product": facts["product"]},
        3: facts["gradient"],
        5: facts["output_shapes"],
        6: {"order": facts["order"], "first": facts["first"]},
        8: not facts["same_node"],
        10: not facts["equal"],
        11: not (facts["count"] == 1 and sums_into_one_row),
    }


#: The kinds whose answers are numbers in lists: the right numbers in row-major order are right
#: in any nesting (``[30, 31, 20, 21, 30, 31]`` for ``[[[30, 31], [20, 21], [30, 31]]]``); for
#: ``one_hot_product``, each of the object's two lists.
NUMBER_LIST_KINDS: Final = frozenset({"lookup_output", "table_gradient", "one_hot_product"})


def answer_matches(kind: str, answer: object, expected: Json) -> bool:
    """Whether an answer to an exercise of ``kind`` is right: :func:`same_answer`, except that
    the lists of :data:`NUMBER_LIST_KINDS` compare their numbers in row-major order, in any
    nesting.

    >>> answer_matches("lookup_output", [30, 31], [[30, 31]]), same_answer([30, 31], [[30, 31]])
    (True, False)
    """
    if kind in NUMBER_LIST_KINDS:
        return same_answer(_flat_lists(answer), cast(Json, _flat_lists(expected)))
    return same_answer(answer, expected)


def _flat_lists(value: object) -> object:
    """:func:`flat_items` of a value, or of each value of an object."""
    if isinstance(value, dict):
        return {key: flat_items(item) for key, item in value.items()}
    return flat_items(value)


def flat_items(value: object) -> object:
    """The leaves of nested lists in row-major order (a value that is not a list: itself).

    >>> flat_items([[1, [2]], [], [3]])
    [1, 2, 3]
    """
    if not isinstance(value, list):
        return value
    leaves: list[object] = []
    pending: list[object] = [value]  # a stack, not recursion: an answer may nest deeply
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(reversed(item))
        else:
            leaves.append(item)
    return leaves


def same_answer(answer: object, expected: Json) -> bool:
    """Whether an answer equals the expected one: the same nesting and keys, numbers exactly
    equal in value (``30`` is ``30.0``; a float only when finite), booleans only booleans."""
    if isinstance(expected, bool) or isinstance(answer, bool):
        return isinstance(answer, bool) and answer is expected
    if isinstance(expected, int | float):
        if isinstance(answer, float):
            return math.isfinite(answer) and answer == expected
        return isinstance(answer, int) and answer == expected
    if isinstance(expected, list):
        return (
            isinstance(answer, list)
            and len(answer) == len(expected)
            and all(same_answer(a, e) for a, e in zip(answer, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(answer, dict)
            and answer.keys() == expected.keys()
            and all(same_answer(answer[key], value) for key, value in expected.items())
        )
    return answer == expected


def answer_text(value: Json) -> str:
    """An answer as compact JSON, whole numbers without a fraction: ``[[30, 31]]``."""
    return json.dumps(_plain(value), ensure_ascii=False)


def read_answers(path: Path) -> dict[int, object]:
    """Read an answers file (at most ``FILE_BYTE_LIMIT`` bytes, strict JSON): an object from
    exercise numbers ``"1"`` to ``"11"`` to answers, none for the explanations (4, 7, 9).

    Raises:
        FormatError: ``answers.file``, its ``problem`` one of ``unreadable``, ``too_large``,
            ``not_json``, ``not_object``, ``unknown_exercise``, ``explanation_exercise``.
    """
    try:
        text = read_file(path, FILE_BYTE_LIMIT).decode("utf-8")
    except OSError as error:
        problem = "too_large" if is_too_large(error) else "unreadable"
        raise _answers_error(path, problem, error.strerror or str(error)) from error
    except UnicodeDecodeError as error:
        raise _answers_error(path, "unreadable", str(error)) from error
    try:
        raw = load_json(text)
    except ValueError as error:
        raise _answers_error(path, "not_json", str(error)) from error
    if not isinstance(raw, dict):
        raise _answers_error(path, "not_object", f"found {type(raw).__name__}")
    return {_exercise_number(path, key): value for key, value in raw.items()}


def _answers_error(path: Path, problem: str, detail: str) -> FormatError:
    return FormatError("answers.file", path=str(path), problem=problem, detail=detail)


def _exercise_number(path: Path, key: str) -> int:
    number = int(key) if key.isascii() and key.isdigit() and key == str(int(key)) else 0
    if number not in KINDS:
        raise _answers_error(path, "unknown_exercise", repr(key))
    if KINDS[number] == "explanation":
        raise _answers_error(path, "explanation_exercise", repr(key))
    return number


def _raised(call: Callable[[], object], accepted: str) -> IdError:
    """The ``IdError`` that ``call`` raises (else a ``RuntimeError``: ``accepted``)."""
    try:
        call()
    except IdError as error:
        return error
    raise RuntimeError(accepted)


def _output_shape(layer: Embedding, shape: tuple[int, ...]) -> tuple[int, ...]:
    return layer.forward([0] * math.prod(shape), shape).shape


def _error_order(layer: Embedding) -> tuple[str, ...]:
    faults = set(ERROR_KINDS.values())
    order: list[str] = []
    while faults:
        ids: list[object] = list(SCANNED_IDS) if "id" in faults else [0] * len(SCANNED_IDS)
        shape = (-1,) if "shape" in faults else (len(ids) + ("count" in faults),)
        accepted = f"the layer accepted the faults {sorted(faults)}"
        kind = ERROR_KINDS[_raised(functools.partial(layer.forward, ids, shape), accepted).rule]
        order.append(kind)
        faults.discard(kind)
    return tuple(order)


def _gather_message(layer: Embedding) -> str:
    gather = functools.partial(
        layer.table.tensor.gather_rows, list(SCANNED_IDS), (len(SCANNED_IDS),)
    )
    return str(_raised(gather, "gather_rows accepted an ID outside the table"))  # its own words


def _nested(shape: Sequence[int], values: Sequence[float]) -> Json:
    return _plain(np.array(values, dtype=float).reshape(tuple(shape)).tolist())


def _plain(value: object) -> Json:
    """JSON-like data with whole floats as ints."""
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence):
        return [_plain(item) for item in value]
    raise TypeError(f"not JSON-like: {type(value).__name__}")
