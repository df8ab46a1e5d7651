"""The families of ``llm_from_scratch.errors``: errors built from a rule and its fields.

The catalogue test raises every rule through a public call; these tests pin the mechanism
itself (construction, formatting, declaration checks, pickling, chaining) and the one argument
order the families share.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from llm_from_scratch.errors import (
    RULES,
    IdError,
    LlmError,
    ShapeError,
    TableError,
    declare,
    declare_table,
)


def test_an_error_takes_its_rule_then_exactly_the_rules_fields_by_keyword() -> None:
    error = IdError("ids.out-of-range", vocabulary_size=4, id=7, position=1)
    assert (error.rule, error.id, error.position, error.vocabulary_size) == (
        "ids.out-of-range",
        7,
        1,
        4,
    )
    assert error.fields == {"id": 7, "position": 1, "vocabulary_size": 4}
    assert str(error) == "token ID 7 at flat position 1 is out of bounds for vocabulary size 4"
    assert error.args == (str(error),)
    assert isinstance(error, IndexError)


def test_the_rules_fields_are_its_placeholders_in_order_then_its_extra_fields() -> None:
    assert RULES["ids.out-of-range"].fields == ("id", "position", "vocabulary_size")
    assert RULES["shape.overflow"].fields == ("shape",)


def test_the_message_prints_type_names_with_t_and_tuples_as_lists() -> None:
    error = ShapeError("shape.extent-type", axis=1, extent=1.5)
    assert (error.axis, error.extent) == (1, 1.5)
    assert str(error) == "shape extent at axis 1 must be an integer, got float 1.5"
    assert str(ShapeError("tensor.data-length", expected=(2, 3), actual=5)).startswith(
        "shape needs [2, 3] values"
    )


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (lambda: IdError("ids.no-such-rule"), "no rule of llm_from_scratch.errors.RULES"),
        (lambda: TableError("ids.out-of-range", id=7, position=1, vocabulary_size=4), "IdError's"),
        (lambda: IdError("ids.out-of-range", id=7, position=1), "takes the fields"),
        (
            lambda: IdError("ids.out-of-range", id=7, position=1, vocabulary_size=4, colour=1),
            "takes the fields",
        ),
        (lambda: LlmError("ids.out-of-range", id=7, position=1, vocabulary_size=4), "IdError's"),
    ],
)
def test_an_unknown_rule_another_familys_rule_or_other_fields_are_a_type_error(
    build: object, problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        build()  # type: ignore[operator]


@pytest.mark.parametrize(
    "template",
    ["row {row!x}", "row {row:{rows}}", "row {0}", "row {}"],
)
def test_a_template_with_anything_but_named_fields_and_known_conversions_is_refused(
    template: str,
) -> None:
    with pytest.raises(TypeError, match="may use only named fields"):
        declare(IdError, {"test.bad-template": (template, "Never raised.")})
    assert "test.bad-template" not in RULES


def test_a_rule_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        declare(IdError, {"ids.out-of-range": ("token ID {id}", "Never raised.")})


def test_a_table_declares_rules_whose_when_is_shared_by_the_rules_below_that_give_none() -> None:
    table = """
[IdError]
test.first: first {a} and
    {b}
  when: Raised first,
    on two lines.
  extra: cause, shape
test.second: second {c}
"""
    try:
        declare_table(table)
        first, second = RULES["test.first"], RULES["test.second"]
        assert (first.family, first.template, first.when) == (
            IdError,
            "first {a} and {b}",
            "Raised first, on two lines.",
        )
        assert first.fields == ("a", "b", "cause", "shape")
        assert (second.family, second.template, second.when, second.fields) == (
            IdError,
            "second {c}",
            "Raised first, on two lines.",
            ("c",),
        )
    finally:
        RULES.pop("test.first", None)
        RULES.pop("test.second", None)


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("[IdError]\ntest.one: one\n  wehn: a typo\n", "not with when or extra"),
        ("[IdError]\ntest.one: one\n  when: Never.\ntest.one: again\n", "declared twice"),
        ("[IdError]\ntest.one: one\n", "says not when"),
    ],
)
def test_a_table_line_of_another_kind_a_rule_given_twice_or_without_when_is_refused(
    table: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        declare_table(table)
    assert "test.one" not in RULES


def test_an_error_pickles_and_copies_by_its_family_rule_and_fields_with_its_cause() -> None:
    cause = ShapeError("shape.negative-extent", extent=-1, axis=0)
    error = IdError("ids.shape", what="token-ID shape", cause=cause, shape=(-1,))
    for restored in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(restored) is IdError and restored.rule == "ids.shape"
        assert str(restored) == "invalid token-ID shape: " + str(cause)
        assert type(restored.cause) is ShapeError
        assert restored.cause.extent == -1


def test_notes_survive_pickling() -> None:
    error = IdError("ids.out-of-range", id=7, position=1, vocabulary_size=4)
    error.add_note("while reading the batch")
    assert pickle.loads(pickle.dumps(error)).__notes__ == ["while reading the batch"]


def test_raise_from_keeps_the_cause_and_errors_stay_hashable_and_compare_by_identity() -> None:
    layout = ShapeError("shape.negative-extent", extent=-1, axis=0)
    fields = {"what": "token-ID shape", "cause": layout, "shape": (-1,)}
    with pytest.raises(IdError) as caught:
        raise IdError("ids.shape", **fields) from layout
    assert caught.value.__cause__ is layout is caught.value.cause
    assert caught.value != IdError("ids.shape", **fields)
    assert len({caught.value, layout}) == 2


# One argument order and one name across families ----------------------------------------------


def test_both_checkers_take_a_non_integer_id_as_position_then_value() -> None:
    for rule in ("ids.type", "gather.type"):
        error = IdError(rule, position=3, value="2")
        assert (error.position, error.value) == (3, "2")
        assert str(error).endswith("ID at flat position 3 must be an integer, got str '2'")


def test_both_checkers_take_an_out_of_range_id_as_position_then_id_then_bound() -> None:
    token = IdError("ids.out-of-range", id=5, position=1, vocabulary_size=4)
    gather = IdError("gather.out-of-range", id=5, position=1, vocabulary_size=4)
    assert (token.position, token.id, token.vocabulary_size) == (1, 5, 4)
    assert (gather.position, gather.id, gather.vocabulary_size) == (1, 5, 4)
    assert str(token) == "token ID 5 at flat position 1 is out of bounds for vocabulary size 4"
    assert str(gather) == "gather ID 5 at flat position 1 is out of bounds for 4 rows"
