"""Initialization reads each caller value once: a seed, a fan, a parameter name.

The reference for a value whose answer changes on every read is its first answer; for a
``str`` subclass, the plain text it holds. A rejection leaves the caller's generator where it
was.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.errors import TableError
from llm_from_scratch.nn import (
    Embedding,
    NamedParameter,
    SplitMix64,
)
from llm_from_scratch.nn.init import (
    validate_parameter_name,
)
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ChangingInteger, FailingInteger, LyingStr
from checks import raises_rule
from reference import SplitMix64Reference

ANY_INTEGER = st.integers(-(2**70), 2**70)


@given(ANY_INTEGER, st.lists(ANY_INTEGER, min_size=1, max_size=3))
def test_a_seed_whose_answer_changes_is_read_once_and_that_answer_is_the_state(
    first: int, later: list[int]
) -> None:
    seed = ChangingInteger([first, *later])
    if 0 <= first < 2**64:
        rng = SplitMix64.from_seed(seed)  # type: ignore[arg-type]
        assert rng.state == first
        reference = SplitMix64Reference(first)
        assert rng.next_unit_f64() == reference.next_unit()
    else:
        with raises_rule(TableError, "seed.range") as caught:
            SplitMix64(seed)  # type: ignore[arg-type]
        assert caught.value.seed is seed
    assert seed.reads == 1


def test_the_state_minus_one_example_is_refused() -> None:
    seed = ChangingInteger([0, -1])
    assert SplitMix64.from_seed(seed).state == 0  # type: ignore[arg-type]
    with raises_rule(TableError, "seed.range"):
        SplitMix64.from_seed(ChangingInteger([-1, 0]))  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [FailingInteger(), True, np.bool_(False), 1.0, "1", None])
def test_a_seed_that_is_no_readable_integer_is_a_seed_range_error(seed: object) -> None:
    with raises_rule(TableError, "seed.range") as caught:
        SplitMix64.from_seed(seed)  # type: ignore[arg-type]
    assert caught.value.seed is seed


@st.composite
def fans(draw: st.DrawFn) -> tuple[object, int]:
    """A fan, sometimes one whose answer changes on every read; and its first answer."""
    first = draw(st.integers(-1, 4))
    if draw(st.booleans()):
        return ChangingInteger([first, *draw(st.lists(ANY_INTEGER, min_size=1))]), first
    return first, first


@given(fans(), fans(), st.integers(0, 2**64 - 1))
def test_fans_whose_answers_change_are_read_once_and_the_generator_moves_only_on_success(
    rows: tuple[object, int], width: tuple[object, int], state: int
) -> None:
    (rows_given, rows_first), (width_given, width_first) = rows, width
    rng = SplitMix64.from_seed(state)
    if rows_first > 0 and width_first > 0:
        layer = Embedding.new("w", rows_given, width_given, rng)  # type: ignore[arg-type]
        assert (layer.vocabulary_size, layer.embedding_width) == (rows_first, width_first)
        assert rng.state == (state + rows_first * width_first * SplitMix64.GOLDEN_GAMMA) % 2**64
    else:
        with pytest.raises(Exception) as caught:
            Embedding.new("w", rows_given, width_given, rng)  # type: ignore[arg-type]
        error = caught.value
        if rows_first < 0 or width_first < 0:
            assert (type(error), error.rule) == (TableError, "table.initialization")
            assert error.cause.rule == "fan.value"
            assert error.cause.which == ("fan-in" if rows_first < 0 else "fan-out")
        else:
            empty = "table.empty-vocabulary" if rows_first == 0 else "table.zero-width"
            assert (type(error), error.rule) == (TableError, empty)
        assert rng.state == state
    for given_fan in (rows_given, width_given):
        if isinstance(given_fan, ChangingInteger):
            assert given_fan.reads <= 1


def test_a_fan_that_cannot_be_read_is_a_fan_error_and_the_generator_stays() -> None:
    rng = SplitMix64.from_seed(18)
    failing = FailingInteger()
    with raises_rule(TableError, "table.initialization") as caught:
        Embedding.new("w", failing, 2, rng)  # type: ignore[arg-type]
    assert caught.value.cause.rule == "fan.value"
    assert caught.value.cause.value is failing
    assert rng == SplitMix64.from_seed(18)


class NamedStr(str):
    """A harmless ``str`` subclass (its methods are str's own)."""


@given(st.text(alphabet="ab._Z9 é", max_size=8))
def test_a_str_subclass_name_is_checked_and_stored_as_the_plain_text_it_holds(text: str) -> None:
    for name in (LyingStr(text), NamedStr(text)):
        try:
            expected = validate_parameter_name(text)
        except ValueError as plain_error:
            with pytest.raises(type(plain_error)) as caught:
                validate_parameter_name(name)
            assert caught.value.args == plain_error.args
            assert type(caught.value.name) is str  # type: ignore[attr-defined]
            continue
        checked = validate_parameter_name(name)
        assert type(checked) is str and str.__eq__(checked, expected)
        parameter = NamedParameter.from_tensor(name, Tensor((1,), [1.0]))
        assert type(parameter.name) is str and str.__eq__(parameter.name, expected)


def test_the_lying_encode_example_cannot_get_an_invalid_name_through() -> None:
    with raises_rule(TableError, "name.byte", index=0, byte=ord("T")):
        NamedParameter.from_tensor(LyingStr("Token"), Tensor((1,), [1.0]))
    with raises_rule(TableError, "table.initialization") as wrapped:
        Embedding.new(LyingStr("a..b"), 4, 2, SplitMix64.from_seed(0))
    assert wrapped.value.cause.rule == "name.segment"
    assert wrapped.value.cause.index == 2
