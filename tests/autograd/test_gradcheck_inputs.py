"""``check_gradient`` checks its step and tolerance (each read once) and its loss, with typed
errors instead of a division by zero; the probed parameter is never changed."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import OptionError
from llm_from_scratch.gradcheck import DEFAULT_STEP, check_gradient
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ChangingReal
from checks import leaf_state, raises_rule


def probed() -> TensorValue:
    return TensorValue.parameter(Tensor((2,), [3.0, -1.0]))


def squares(parameter: TensorValue) -> TensorValue:
    return parameter.mul(parameter).sum()


BAD_STEPS = [
    0.0,
    -0.0,
    -1e-6,
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    True,
    np.bool_(True),
    "1e-6",
    None,
    1j,
    np.array(1e-6),
    10**400,
]
BAD_TOLERANCES = [-1e-9, math.nan, math.inf, True, "0", None, 1j, np.array(1.0), -(10**400)]


@pytest.mark.parametrize("step", BAD_STEPS, ids=repr)
def test_a_step_that_is_not_a_usable_positive_real_is_a_typed_error(step: Any) -> None:
    parameter = probed()
    before = leaf_state(parameter)
    with raises_rule(OptionError, "gradcheck.argument") as caught:
        check_gradient(squares, parameter, step=step)
    assert caught.value.detail.startswith("the step must be a real number above zero")
    assert leaf_state(parameter) == before


@pytest.mark.parametrize("tolerance", BAD_TOLERANCES, ids=repr)
def test_a_tolerance_that_is_not_a_finite_real_at_or_above_zero_is_a_typed_error(
    tolerance: Any,
) -> None:
    with raises_rule(OptionError, "gradcheck.argument") as caught:
        check_gradient(squares, probed(), tolerance=tolerance)
    assert caught.value.detail.startswith("the tolerance must be a finite real number")


@pytest.mark.parametrize(
    ("step", "tolerance"),
    [(np.float32(1e-3), np.float64(1e-2)), (Fraction(1, 1000), 0), (1, Fraction(1, 2))],
)
def test_any_real_step_and_tolerance_are_accepted(step: Any, tolerance: Any) -> None:
    result = check_gradient(squares, probed(), step=step, tolerance=tolerance)
    assert result.tolerance == float(tolerance)
    assert result.analytic.tolist() == [6.0, -2.0]


@given(st.floats(1e-4, 1e-2), st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=3))
def test_a_step_whose_answer_changes_is_read_once(first: float, later: list[float]) -> None:
    step = ChangingReal([first, *later])
    result = check_gradient(squares, probed(), step=step, tolerance=1e-6)  # type: ignore[arg-type]
    assert step.reads == 1
    expected = [
        ((3.0 + first) ** 2 - (3.0 - first) ** 2) / (2 * first),
        ((-1.0 + first) ** 2 - (-1.0 - first) ** 2) / (2 * first),
    ]
    assert result.numeric.tolist() == pytest.approx(expected, rel=1e-9)


def test_the_zero_step_example_is_a_typed_error_not_a_division_by_zero() -> None:
    with raises_rule(OptionError, "gradcheck.argument"):
        check_gradient(squares, probed(), step=0.0)


def test_a_loss_that_is_not_callable_or_returns_no_scalar_value_is_a_typed_error() -> None:
    parameter = probed()
    with raises_rule(OptionError, "gradcheck.argument", match="callable"):
        check_gradient("loss", parameter)  # type: ignore[arg-type]
    with raises_rule(OptionError, "gradcheck.argument", match="TensorValue"):
        check_gradient(lambda p: 1.0, parameter)  # type: ignore[arg-type, return-value]
    with raises_rule(OptionError, "gradcheck.argument", match="scalar"):
        check_gradient(lambda p: p, parameter)


def test_a_step_that_takes_a_probed_value_to_infinity_is_a_typed_error() -> None:
    parameter = TensorValue.parameter(Tensor((2,), [1.0, 1.7e308]))
    before = leaf_state(parameter)
    with raises_rule(OptionError, "gradcheck.argument") as caught:
        check_gradient(lambda p: p.sum(), parameter, step=1e307)
    assert "flat position 1" in caught.value.detail
    assert leaf_state(parameter) == before


def test_the_default_probe_still_passes_on_the_chapter_fixture() -> None:
    assert check_gradient(squares, probed(), step=DEFAULT_STEP).passed
