"""The text rules (``llm_from_scratch.files``): text written into a file must be UTF-8, text
echoed on a line is escaped into one line, and JSON from outside is strict, its integers exact
and bounded in digits. Python's own ``json`` and ``str.encode`` are the oracles."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from llm_from_scratch.files import JSON_INTEGER_DIGITS, check_text, load_json, one_line

#: Any character at all: every category, lone surrogates, controls and line separators.
any_text = st.text(st.characters(codec=None, categories=None), max_size=40)
line_breaks = st.sampled_from(["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x85", "\u2028", "\u2029"])


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@given(st.lists(st.one_of(any_text, line_breaks)).map("".join))
def test_one_line_makes_any_text_one_printable_line(text: str) -> None:
    shown = one_line(text)
    event("unchanged" if shown == text else "escaped")
    assert len(shown.splitlines()) <= 1 and shown.isprintable()
    assert encodable(shown)
    assert (shown == text) == text.isprintable()
    kept = [character for character in text if character.isprintable()]
    assert all(character in shown for character in kept)


@given(any_text)
def test_text_is_checked_as_utf8_encodes_it(text: str) -> None:
    if encodable(text):
        event("text")
        assert check_text(text) is text
        return
    event("lone surrogate")
    with pytest.raises(ValueError, match="is a lone surrogate, which UTF-8") as caught:
        check_text(text)
    assert "\n" not in str(caught.value) and encodable(str(caught.value))


@dataclass(frozen=True)
class Digits:
    """An integer of ``count`` nines, written as JSON text by :func:`dumps` (Python's own json
    cannot write one of more than 4300 digits, nor can Hypothesis print it)."""

    count: int


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(JSON_INTEGER_DIGITS - 3, JSON_INTEGER_DIGITS + 3).map(Digits)
    | st.floats()
    | any_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4)
    ),
    max_leaves=12,
)


def dumps(value: object) -> str:
    """The JSON text Python writes, with each :class:`Digits` as its nines."""
    if isinstance(value, Digits):
        return "9" * value.count
    if isinstance(value, list):
        return "[" + ", ".join(dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{json.dumps(key)}: {dumps(item)}" for key, item in value.items())
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(value)


def plain(value: object) -> object:
    """The value, each :class:`Digits` as the integer it is (only those JSON may hold)."""
    if isinstance(value, Digits):
        return int("9" * value.count)
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def expected_fault(value: object) -> str | None:
    """What strict JSON refuses in a value Python's json writes: NaN and the infinities, too many
    digits, a string (key or value) that is not UTF-8 text."""
    if isinstance(value, float) and not math.isfinite(value):
        return "constant"
    if isinstance(value, Digits):
        return "digits" if value.count > JSON_INTEGER_DIGITS else None
    if isinstance(value, str):
        return None if encodable(value) else "surrogate"
    items: list[object] = []
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        items = [*value, *value.values()]
    faults = {fault for item in items if (fault := expected_fault(item)) is not None}
    return min(faults) if faults else None


@given(json_values)
def test_strict_json_reads_what_python_writes_except_what_is_not_json(value: object) -> None:
    text = dumps(value)
    fault = expected_fault(value)
    try:
        loaded = load_json(text)
    except ValueError as error:
        event(f"refused: {fault}")
        assert fault is not None, error
        assert "\n" not in str(error)
        return
    event("read")
    assert fault is None
    expected = plain(value)
    assert loaded == expected or repr(loaded) == repr(expected)  # NaN-free, but -0.0 == 0.0


@given(st.text(alphabet='{}[]":,0123456789.eE+- ntruefalsNIfiy\\u', max_size=30))
def test_any_text_is_json_or_one_line_value_error(text: str) -> None:
    try:
        python = json.loads(text)
    except (ValueError, RecursionError):
        python = ValueError
    try:
        loaded = load_json(text)
    except ValueError as error:
        event("refused")
        assert "\n" not in str(error)
        return
    event("read")
    assert python is not ValueError and json.dumps(loaded) == json.dumps(python)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NaN", "NaN is not a JSON number"),
        ("[1, -Infinity]", "-Infinity is not a JSON number"),
        ('{"1": 1, "1": 2}', "the key '1' appears twice in one object"),
        ('["\\ud800"]', "a JSON string '\\ud800': '\\ud800' at index 0 is a lone surrogate"),
        ("9" * 4301, "an integer of 4301 digits, more than 4300"),
        ("-" + "9" * 4301, "an integer of 4301 digits, more than 4300"),
        ("[" * 100_000, "the JSON value is nested too deeply"),
    ],
)
def test_what_strict_json_refuses_is_named_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        load_json(text)
    assert str(caught.value).startswith(message)


def test_integers_are_read_exactly() -> None:
    big = 10**310 + 1
    assert load_json(f"[{big}, 1e400, 0.1]") == [big, math.inf, 0.1]
    assert load_json("9" * JSON_INTEGER_DIGITS) == int("9" * JSON_INTEGER_DIGITS)
