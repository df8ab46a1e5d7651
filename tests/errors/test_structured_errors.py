"""StructuredError: errors declared by their fields and a message template.

The catalogue test raises every package error through a public call; these tests pin the
mechanism itself (construction, formatting, declaration checks, pickling, chaining) and the one
argument order the families share.
"""

from __future__ import annotations

import copy
import inspect
import pickle
from collections.abc import Mapping
from typing import ClassVar

import pytest

from llm_from_scratch.autograd import (
    EmbeddingError,
    GatherIndexOutOfBoundsError,
    GatherIndexTypeError,
    TokenIdDtypeError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
)
from llm_from_scratch.errors import StructuredError
from llm_from_scratch.tensor import (
    NegativeExtentError,
    NonIntegerExtentError,
    TensorError,
)


class RowError(StructuredError, IndexError):
    """A test error: a row at a flat position, checked against a row count."""

    template = "row {row!r} ({row!t}) at flat position {position} is not below {rows} in {shape}"
    position: int
    row: object
    rows: int
    shape: tuple[int, ...] = (4, 2)


def test_fields_are_taken_positionally_in_declaration_order_or_by_keyword() -> None:
    positional = RowError(1, 7, 4)
    by_keyword = RowError(rows=4, row=7, position=1)
    for error in (positional, by_keyword):
        assert (error.position, error.row, error.rows, error.shape) == (1, 7, 4, (4, 2))
        assert str(error) == "row 7 (int) at flat position 1 is not below 4 in [4, 2]"
        assert error.args == (str(error),)
    assert RowError.field_names == ("position", "row", "rows", "shape")
    assert isinstance(positional, IndexError)


def test_the_message_prints_type_names_with_t_and_tuples_as_lists_unless_converted() -> None:
    error = RowError(0, (1, 2), 4, (3,))
    assert str(error) == "row (1, 2) (tuple) at flat position 0 is not below 4 in [3]"


def test_the_constructor_signature_is_the_fields_in_order() -> None:
    assert str(inspect.signature(RowError)) == "(position, row, rows, shape=(4, 2))"
    assert str(inspect.signature(TokenIdTypeError)) == "(position, value, checker='embedding')"


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        ((1, 7), {}, "missing a required argument: 'rows'"),
        ((1, 7, 4, (2,), 5), {}, "too many positional arguments"),
        ((1, 7, 4), {"colour": 1}, "got an unexpected keyword argument 'colour'"),
        ((1, 7, 4), {"position": 2}, "multiple values for argument 'position'"),
    ],
)
def test_arguments_that_do_not_bind_to_the_fields_are_a_type_error(
    args: tuple[object, ...], kwargs: dict[str, object], problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        RowError(*args, **kwargs)


def test_a_class_without_a_template_is_a_base_class_that_cannot_be_constructed() -> None:
    for base, args in ((TensorError, ()), (EmbeddingError, ())):
        with pytest.raises(TypeError, match="is a base class"):
            base(*args)


def test_a_subclass_takes_its_base_class_fields_first() -> None:
    assert TokenIdTypeError.field_names == ("position", "value", "checker")
    assert TokenIdDtypeError.field_names == ("position", "value", "checker", "dtype")
    error = TokenIdDtypeError(None, None, "gather", "float64")
    assert (error.position, error.checker, error.dtype) == (None, "gather", "float64")
    assert str(error) == "gather IDs must be integers, got an empty array of dtype float64"


def test_a_field_with_a_default_may_be_omitted() -> None:
    assert TokenIdTypeError(2, 1.5).checker == "embedding"
    assert TokenIdTypeError(2, 1.5, checker="gather").checker == "gather"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("row {colour}", "names 'colour'"),
        ("row {}", "names ''"),
        ("row {row!x}", "only !r, !s, !a, !t"),
        ("row {row:{rows}}", "only !r, !s, !a, !t"),
    ],
)
def test_a_template_naming_anything_but_a_field_fails_when_the_class_is_defined(
    template: str, problem: str
) -> None:
    namespace = {"template": template, "__annotations__": {"row": "int", "rows": "int"}}
    with pytest.raises(TypeError, match=problem):
        type("BadError", (StructuredError,), namespace)


def test_a_field_without_a_default_after_one_with_a_default_fails_when_defined() -> None:
    with pytest.raises(ValueError, match="non-default argument follows default argument"):

        class BadError(RowError):
            """Never built: ``shape`` has a default and ``extra`` does not."""

            extra: int


def test_a_field_declared_again_by_a_subclass_fails_when_defined() -> None:
    with pytest.raises(ValueError, match="declares the field 'id' twice"):
        type("BadError", (WordedRowError,), {"__annotations__": {"id": "int"}})


def test_an_error_pickles_and_copies_by_its_fields_with_its_cause_field() -> None:
    cause = NegativeExtentError(0, -1)
    error = TokenShapeError("token-ID shape", (-1,), cause)
    for restored in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(restored) is TokenShapeError
        assert str(restored) == "invalid token-ID shape: " + str(cause)
        assert type(restored.cause) is NegativeExtentError
        assert restored.cause.extent == -1


def test_raise_from_keeps_the_cause_and_errors_stay_hashable_and_compare_by_identity() -> None:
    layout = NegativeExtentError(0, -1)
    with pytest.raises(TokenShapeError) as caught:
        raise TokenShapeError("token-ID shape", (-1,), layout) from layout
    assert caught.value.__cause__ is layout is caught.value.cause
    assert caught.value != TokenShapeError("token-ID shape", (-1,), layout)
    assert len({caught.value, layout}) == 2


def test_match_reads_fields_in_constructor_order() -> None:
    match TokenIdTypeError(2, 1.5):
        case TokenIdTypeError(position, value):
            assert (position, value) == (2, 1.5)
        case _:
            pytest.fail("the positional pattern did not match")


# One argument order and one name across families ----------------------------------------------


def test_both_families_take_a_non_integer_id_as_position_then_value() -> None:
    for cls in (TokenIdTypeError, GatherIndexTypeError):
        error = cls(3, "2")
        assert (error.position, error.value) == (3, "2")
        assert str(error).endswith("ID at flat position 3 must be an integer, got str '2'")


def test_both_families_take_an_out_of_range_id_as_position_then_id_then_bound() -> None:
    token = TokenIdOutOfBoundsError(1, 5, 4)
    gather = GatherIndexOutOfBoundsError(1, 5, 4, "gather")  # the earlier name of the class
    assert type(gather) is TokenIdOutOfBoundsError
    assert (token.position, token.id, token.vocabulary_size) == (1, 5, 4)
    assert (gather.position, gather.id, gather.rows) == (1, 5, 4)
    assert gather.index == gather.id  # the earlier name still reads
    assert str(token) == "token ID 5 at flat position 1 is out of bounds for vocabulary size 4"
    assert str(gather) == "gather ID 5 at flat position 1 is out of bounds for 4 rows"


class WordedRowError(StructuredError, IndexError):
    """A test error worded by who checked it: ``checker`` chooses the template."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "layer": "token ID {id} is not below {rows}",
        "gather": "gather ID {id} is out of bounds for {rows} rows",
    }
    id: int
    rows: int
    checker: str = "layer"


def test_a_keyed_template_chooses_its_wording_by_the_key_field() -> None:
    assert str(WordedRowError(5, 4)) == "token ID 5 is not below 4"
    assert str(WordedRowError(5, 4, "gather")) == "gather ID 5 is out of bounds for 4 rows"
    by_keyword = WordedRowError(id=5, rows=4, checker="gather")
    assert str(by_keyword) == str(WordedRowError(5, 4, "gather"))
    assert WordedRowError.field_names == ("id", "rows", "checker")


def test_a_keyed_error_pickles_and_copies_with_its_wording() -> None:
    error = WordedRowError(5, 4, "gather")
    for restored in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(restored) is WordedRowError
        assert restored.checker == "gather"
        assert restored.args == error.args


def test_a_key_field_value_without_a_wording_is_a_key_error_at_construction() -> None:
    with pytest.raises(KeyError):
        WordedRowError(5, 4, "bag")


@pytest.mark.parametrize(
    ("namespace", "problem"),
    [
        ({"template_key": "colour"}, "template_key must name a field"),
        ({"template_key": None}, "template_key must name a field"),
        ({"template_key": "checker", "template": {"layer": "row {colour}"}}, "names 'colour'"),
        ({"template_key": "checker", "template": {"layer": "row {id!x}"}}, "only !r, !s, !a, !t"),
    ],
)
def test_a_bad_key_or_keyed_template_is_refused_when_the_class_is_defined(
    namespace: dict[str, object], problem: str
) -> None:
    body: dict[str, object] = {
        "template": {"layer": "row {id}", "gather": "gather row {id}"},
        "__annotations__": {"id": "int", "checker": "str"},
        **namespace,
    }
    with pytest.raises(TypeError, match=problem):
        type("BadError", (StructuredError,), body)


def test_an_extent_error_names_the_axis_then_the_extent() -> None:
    error = NonIntegerExtentError(1, 1.5)
    assert (error.axis, error.extent) == (1, 1.5)
    assert str(error) == "shape extent at axis 1 must be an integer, got float 1.5"
