"""A learning rate is any finite positive real number but a bool, NumPy scalars included, read
once by ``float()``; anything else is an ``OptionError`` and nothing is built or changed."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.errors import OptionError
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.optim.validation import checked_learning_rate
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ChangingReal
from checks import leaf_state, raises_rule
from conftest import KNOWN_TABLE

ACCEPTED = [
    0.5,
    2,
    np.float32(0.1),
    np.float64(0.25),
    np.float16(0.5),
    np.int64(1),
    np.uint8(3),
    Fraction(1, 8),
    np.longdouble("0.5"),
]
REFUSED = [
    True,
    False,
    np.bool_(True),
    0,
    0.0,
    -0.5,
    np.float32(-1),
    math.nan,
    math.inf,
    np.float64("nan"),
    10**400,
    -(10**400),
    "0.1",
    None,
    1j,
    Decimal("0.1"),
    np.array(0.1),
    [0.1],
]


def trained_layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    layer.forward([2, 1, 2], (3,)).backward_with_seed(np.ones((3, 2)))
    return layer


@pytest.mark.parametrize("rate", ACCEPTED, ids=repr)
def test_any_finite_positive_real_is_a_learning_rate_and_the_step_uses_its_float(
    rate: Any,
) -> None:
    layer = trained_layer()
    optimizer = SGD(layer.parameters(), learning_rate=rate)
    assert optimizer.learning_rate == float(rate) and type(optimizer.learning_rate) is float
    before = layer.table.tensor.value_snapshot().numpy()
    optimizer.step()
    after = layer.table.tensor.numpy()
    assert after[1].tolist() == (before[1] - float(rate) * 1.0).tolist()
    assert after[2].tolist() == (before[2] - float(rate) * 2.0).tolist()
    assert after[0].tolist() == before[0].tolist()


@pytest.mark.parametrize("rate", REFUSED, ids=repr)
def test_anything_else_is_an_optimizer_error_and_changes_nothing(rate: Any) -> None:
    layer = trained_layer()
    before = leaf_state(layer.table.tensor)
    with pytest.raises(OptionError) as caught:
        SGD(layer.parameters(), learning_rate=rate)
    error = caught.value
    assert (error.name, error.requirement, repr(error.value)) == (
        "learning_rate",
        "finite and positive",
        repr(rate),
    )
    assert leaf_state(layer.table.tensor) == before


def test_the_huge_integer_example_is_an_optimizer_error_not_an_overflow() -> None:
    with raises_rule(OptionError, "optimizer.setting-value"):
        SGD(trained_layer().parameters(), 10**400)


@given(st.floats(1e-6, 10.0), st.lists(st.floats(-10.0, 10.0), min_size=1, max_size=3))
def test_a_learning_rate_whose_answer_changes_is_read_once(
    first: float, later: list[float]
) -> None:
    rate = ChangingReal([first, *later])
    optimizer = SGD(trained_layer().parameters(), learning_rate=rate)  # type: ignore[arg-type]
    assert rate.reads == 1 and optimizer.learning_rate == first


def test_the_check_is_one_shared_function() -> None:
    assert checked_learning_rate(np.float32(0.5)) == 0.5
    with raises_rule(OptionError, "optimizer.setting-type"):
        checked_learning_rate(True)
