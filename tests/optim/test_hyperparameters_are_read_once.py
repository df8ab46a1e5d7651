"""Every optimizer checks its learning rate with the one shared ``checked_learning_rate``, and
reads every real hyperparameter once: any finite real number in range but a bool, NumPy scalars
included, is taken by one ``float()``; anything else is an ``OptionError`` that names
the optimizer, and nothing is built."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import OptionError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW, Optimizer

from adversarial_inputs import ChangingReal
from checks import raises_rule

Build = Callable[..., Optimizer]
OPTIMIZERS: dict[str, Build] = {"SGD": SGD, "Adagrad": Adagrad, "Adam": Adam, "AdamW": AdamW}
ACCEPTED = [0.5, 2, np.float32(0.25), np.float16(0.5), np.int64(1), np.uint8(3), Fraction(1, 8)]
REFUSED_TYPES = [True, np.bool_(False), "0.1", None, 1j, np.array(0.1), [0.1]]
REFUSED_VALUES = [0, -0.5, np.float32(-1), float("nan"), float("inf"), 10**400]


def parameters() -> Any:
    return Embedding.new("w", 4, 2, SplitMix64.from_seed(1)).parameters()


@pytest.mark.parametrize("rate", ACCEPTED, ids=repr)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_takes_any_finite_positive_real_as_its_float(name: str, rate: Any) -> None:
    optimizer = OPTIMIZERS[name](parameters(), rate)
    assert optimizer.learning_rate == float(rate)  # type: ignore[attr-defined]
    assert type(optimizer.learning_rate) is float  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rate", "rule"),
    [(rate, "optimizer.setting-type") for rate in REFUSED_TYPES]
    + [(rate, "optimizer.setting-value") for rate in REFUSED_VALUES],
    ids=repr,
)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_refuses_any_other_learning_rate_alike(
    name: str, rate: Any, rule: str
) -> None:
    with raises_rule(OptionError, rule, requirement="finite and positive") as caught:
        OPTIMIZERS[name](parameters(), rate)
    fields = (caught.value.optimizer, caught.value.name, caught.value.value)
    assert fields[:2] == (name, "learning_rate") and fields[2] is rate
    assert str(caught.value).startswith(f"{name} learning_rate must be finite and positive, got ")


HYPERPARAMETERS: list[tuple[str, str, Callable[[Any], Optimizer]]] = [
    ("SGD", "learning_rate", lambda value: SGD(parameters(), value)),
    ("Adagrad", "learning_rate", lambda value: Adagrad(parameters(), value)),
    ("Adagrad", "eps", lambda value: Adagrad(parameters(), 0.1, eps=value)),
    ("Adagrad", "initial_accumulator", lambda v: Adagrad(parameters(), 0.1, initial_accumulator=v)),
    ("Adam", "learning_rate", lambda value: Adam(parameters(), value)),
    ("Adam", "betas[0]", lambda value: Adam(parameters(), 0.1, betas=(value, 0.5))),
    ("Adam", "betas[1]", lambda value: Adam(parameters(), 0.1, betas=[0.5, value])),
    ("Adam", "eps", lambda value: Adam(parameters(), 0.1, eps=value)),
    ("AdamW", "weight_decay", lambda value: AdamW(parameters(), 0.1, weight_decay=value)),
]


@pytest.mark.parametrize(
    ("name", "argument", "build"), HYPERPARAMETERS, ids=[f"{n} {a}" for n, a, _ in HYPERPARAMETERS]
)
def test_a_hyperparameter_whose_answer_changes_is_read_once(
    name: str, argument: str, build: Callable[[Any], Optimizer]
) -> None:
    value = ChangingReal([0.25, -1.0, float("nan")])
    build(value)
    assert value.reads == 1
    refused = ChangingReal([-1.0, 0.25])  # out of every range on its one read
    with raises_rule(OptionError, "optimizer.setting-value") as caught:
        build(refused)
    assert refused.reads == 1
    assert (caught.value.optimizer, caught.value.name, caught.value.value) == (
        name,
        argument,
        refused,
    )


@pytest.mark.parametrize(
    ("name", "argument", "build"), HYPERPARAMETERS, ids=[f"{n} {a}" for n, a, _ in HYPERPARAMETERS]
)
def test_a_real_float_cannot_convert_is_a_value_error_not_an_overflow(
    name: str, argument: str, build: Callable[[Any], Optimizer]
) -> None:
    with raises_rule(OptionError, "optimizer.setting-value") as caught:
        build(10**400)
    assert (caught.value.optimizer, caught.value.name) == (name, argument)
    assert isinstance(caught.value.__cause__, OverflowError)
