"""An answers file of any content is checked answer by answer or refused on one line: numbers
compare as exact values (an integer of 310 digits is a wrong answer, not an ``OverflowError``),
text that is not strict JSON (``NaN``, ``Infinity``, an integer of more than 4300 digits, a key
twice) is refused with status 2.

The files are built here as text together with the value a strict reader must get from them,
and the verdicts are taken from an independent model: :func:`reference_same`, which compares
numbers as exact fractions, on the right answers of ``neighbours_support.independent_answers``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from llm_from_scratch.cli import main
from llm_from_scratch.files import JSON_INTEGER_DIGITS

from neighbours_support import CHECKED, independent_answers

RIGHT = independent_answers()


@dataclass(frozen=True)
class Piece:
    """JSON text, the value a strict reader gets from it, and whether it is strict JSON."""

    text: str
    value: object
    valid: bool = True


def joined(opening: str, parts: list[Piece], closing: str, value: object) -> Piece:
    text = opening + ", ".join(part.text for part in parts) + closing
    return Piece(text, value, all(part.valid for part in parts))


@st.composite
def near(draw: st.DrawFn, expected: object) -> Piece:
    """An answer close to ``expected``: itself in other spellings, or changed a little or a lot."""
    if isinstance(expected, bool):
        return draw(st.sampled_from([Piece("true", True), Piece("false", False), Piece("0", 0)]))
    if isinstance(expected, int | float):
        whole = int(expected)
        same = [Piece(json.dumps(expected), expected)]
        same.append(Piece(repr(float(expected)), float(expected)))
        if expected == whole:
            same.append(Piece("-0" if whole == 0 else str(whole), whole))
        other = [
            Piece(str(whole + 1), whole + 1),
            Piece(str(10**310 + whole), 10**310 + whole),
            Piece("-" + "9" * 320, -int("9" * 320)),
            Piece("1e400", math.inf),
            Piece("-1e400", -math.inf),
            Piece(f"{whole}.000000000000001", float(f"{whole}.000000000000001")),
            Piece('"30"', "30"),
        ]
        not_json = [
            Piece("9" * (JSON_INTEGER_DIGITS + 1), None, valid=False),
            Piece("NaN", None, valid=False),
            Piece("Infinity", None, valid=False),
        ]
        kind = draw(st.integers(0, 99))
        return draw(st.sampled_from(same if kind < 70 else other if kind < 99 else not_json))
    if isinstance(expected, list):
        parts = [draw(near(item)) for item in expected]
        change = draw(st.sampled_from(["keep"] * 18 + ["drop", "add"]))
        if change == "drop" and parts:
            parts = parts[:-1]
        elif change == "add":
            parts.append(Piece("0", 0))
        return joined("[", parts, "]", [part.value for part in parts])
    if isinstance(expected, dict):
        keys = list(expected)
        parts, value = [], {}
        for key in keys:
            part = draw(near(expected[key]))
            parts.append(Piece(f"{json.dumps(key)}: {part.text}", None, part.valid))
            value[key] = part.value
        if draw(st.integers(0, 19)) == 0:
            twice = draw(st.sampled_from(keys))
            parts.append(Piece(f"{json.dumps(twice)}: 0", None, valid=False))  # a key twice
        return joined("{", parts, "}", value)
    assert isinstance(expected, str)
    return draw(st.sampled_from([Piece(json.dumps(expected), expected), Piece('"other"', "other")]))


@st.composite
def answers_files(draw: st.DrawFn) -> tuple[Piece, str | None]:
    """An answers file, and the problem a reader must report (None: the answers are checked)."""
    if draw(st.integers(0, 19)) == 0:
        return Piece("[1, 2]", [1, 2]), "not_object"
    numbers = draw(st.lists(st.sampled_from(CHECKED), unique=True, max_size=len(CHECKED)))
    parts, value = [], {}
    for number in numbers:
        part = draw(near(RIGHT[str(number)]))
        parts.append(Piece(f'"{number}": {part.text}', None, part.valid))
        value[str(number)] = part.value
    extra = draw(st.sampled_from([None] * 12 + ["4", "12", "01"]))
    if extra is not None:
        parts.append(Piece(f'"{extra}": 1', None))
    file = joined("{", parts, "}", value)
    if not file.valid:
        return file, "not_json"
    if extra is not None:
        return file, "explanation_exercise" if extra == "4" else "unknown_exercise"
    return file, None


def reference_same(answer: object, expected: object) -> bool:
    """Exact comparison: numbers as fractions (only finite floats have one), booleans only as
    booleans, lists and objects item by item."""
    if isinstance(expected, bool) or isinstance(answer, bool):
        return answer is expected
    if isinstance(expected, int | float):
        if not isinstance(answer, int | float):
            return False
        if isinstance(answer, float) and not math.isfinite(answer):
            return False
        return Fraction(answer) == Fraction(expected)
    if isinstance(expected, list):
        return (
            isinstance(answer, list)
            and len(answer) == len(expected)
            and all(reference_same(a, e) for a, e in zip(answer, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(answer, dict)
            and sorted(answer) == sorted(expected)
            and all(reference_same(answer[key], expected[key]) for key in expected)
        )
    return answer == expected


def reference_form(number: int, answer: object, expected: object) -> tuple[object, object]:
    """The answer and the expected value as compared: the lists of exercises 1 and 3 and the two
    lists of exercise 2 as their numbers in row-major order (any nesting of them is right)."""

    def flat(value: object) -> object:
        return (
            [leaf for item in value for leaf in (flat(item) if isinstance(item, list) else [item])]
            if isinstance(value, list) else value
        )  # fmt: skip

    if number in (1, 3):
        return flat(answer), flat(expected)
    if number == 2 and isinstance(answer, dict) and isinstance(expected, dict):
        return {k: flat(v) for k, v in answer.items()}, {k: flat(v) for k, v in expected.items()}
    return answer, expected


PROBLEMS = {
    "not_json": "is not JSON",
    "not_object": "must be a JSON object that maps exercise numbers to answers",
    "unknown_exercise": "names no exercise of 1 to 11",
    "explanation_exercise": "is an explanation and takes no answer",
}


@given(answers_files())
@settings(deadline=None)
def test_any_answers_file_is_checked_exactly_or_refused_on_one_line(
    case: tuple[Piece, str | None],
) -> None:
    file, problem = case
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "answers.json")
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(file.text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["ch18", "exercises", "--answers", path])
    if problem is not None:
        event(f"refused: {problem}")
        assert (status, out.getvalue()) == (2, "")
        assert err.getvalue().startswith(f"error: answers file {path}: {PROBLEMS[problem]} (")
        assert err.getvalue().count("\n") == 1
        return
    assert isinstance(file.value, dict) and err.getvalue() == ""
    verdicts = {}
    for number in CHECKED:
        given_answer = file.value.get(str(number), None)
        if str(number) not in file.value:
            verdicts[number] = "unanswered"
        elif reference_same(*reference_form(number, given_answer, RIGHT[str(number)])):
            verdicts[number] = "right"
        else:
            verdicts[number] = "wrong"
    lines = out.getvalue().splitlines()
    for number, verdict in verdicts.items():
        assert any(line.startswith(f"Exercise {number} of 11: {verdict}") for line in lines)
    right = sum(verdict == "right" for verdict in verdicts.values())
    event(f"{right} of {len(CHECKED)} right")
    assert status == (0 if right == len(CHECKED) else 1)


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("1" + "0" * 309, "wrong"),
        ("-" + "9" * 400, "wrong"),
        ("1e400", "wrong"),
        ("30", "right"),
        ("30.0", "right"),
        ("30.000000000000001", "right"),  # the float 30.0: read as Python reads a float
        ("30.00000000001", "wrong"),
    ],
)
def test_a_number_of_any_size_is_a_right_or_wrong_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: object, answer: str, verdict: str
) -> None:
    rows = "[[%s, 31], [20, 21], [30, 31]]" % answer  # noqa: UP031 (the number as written)
    path = os.path.join(str(tmp_path), "answers.json")
    with open(path, "w", encoding="utf-8") as stream:
        stream.write('{"1": [%s]}' % rows)  # noqa: UP031
    status = main(["ch18", "exercises", "--answers", path])
    out, err = capsys.readouterr()
    assert (status, err) == (1, "")
    assert out.splitlines()[0].startswith(f"Exercise 1 of 11: {verdict}")
