"""StructuredError: errors declared by their fields and a message template.

The catalogue test raises every package error through a public call; these tests pin the
mechanism itself (construction, formatting, declaration checks).
"""

from __future__ import annotations

import inspect

import pytest

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.tensor import NegativeExtentError, NonIntegerExtentError, TensorError


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
    assert str(inspect.signature(NegativeExtentError)) == "(axis, extent)"


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
    with pytest.raises(TypeError, match="is a base class"):
        TensorError()


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


def test_an_extent_error_names_the_axis_then_the_extent() -> None:
    error = NonIntegerExtentError(1, 1.5)
    assert (error.axis, error.extent) == (1, 1.5)
    assert str(error) == "shape extent at axis 1 must be an integer, got float 1.5"
