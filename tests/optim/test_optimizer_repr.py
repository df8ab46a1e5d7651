"""An optimizer's repr names its kind, its parameters, every setting as the constructor takes
it, and its step count, on one line, and follows a learning-rate schedule."""

from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW
from llm_from_scratch.tensor import Tensor


def parameters() -> list[NamedParameter]:
    return [
        *Embedding(4, 2).parameters(),
        NamedParameter.from_tensor("head.weight", Tensor((2,), [1.0, 2.0])),
    ]


@pytest.mark.parametrize(
    ("optimizer", "expected"),
    [
        (
            lambda: SGD(parameters(), 0.1),
            "SGD(parameters={names}, learning_rate=0.1, step_count=0)",
        ),
        (
            lambda: Adagrad(parameters(), 0.5, eps=1e-6, initial_accumulator=0.1),
            "Adagrad(parameters={names}, learning_rate=0.5, eps=1e-06, "
            "initial_accumulator=0.1, step_count=0)",
        ),
        (
            lambda: Adam(parameters(), 1e-3, betas=(0.8, 0.99), weight_decay=0.1),
            "Adam(parameters={names}, learning_rate=0.001, betas=(0.8, 0.99), eps=1e-08, "
            "weight_decay=0.1, step_count=0)",
        ),
        (
            lambda: AdamW(parameters(), 1e-3),
            "AdamW(parameters={names}, learning_rate=0.001, betas=(0.9, 0.999), eps=1e-08, "
            "weight_decay=0.01, step_count=0)",
        ),
    ],
)
def test_the_repr_shows_every_setting_as_the_constructor_takes_it(
    optimizer: object, expected: str
) -> None:
    names = "['token_embedding.weight', 'head.weight']"
    assert repr(optimizer()) == expected.format(names=names)  # type: ignore[operator]


def test_the_repr_follows_the_schedule_and_the_steps() -> None:
    layer = Embedding(4, 2)
    optimizer = SGD(layer.parameters(), 0.1)
    layer([1, 2]).sum().backward()
    optimizer.step()
    optimizer.learning_rate = np.float32(0.05)
    assert repr(optimizer).endswith(f"learning_rate={float(np.float32(0.05))!r}, step_count=1)")
