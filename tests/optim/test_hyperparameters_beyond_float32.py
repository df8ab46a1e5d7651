"""Hyperparameters that are finite float64 values but beyond float32's range: on a float32 table
they round to infinity, the step they feed is not finite, and it is refused with
NonFiniteStepError (or, where the infinity cancels out, taken), with no NumPy overflow warning
(warnings are errors here), on the NumPy path and on the compiled row kernels alike."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import NonFiniteError
from llm_from_scratch.nn import Embedding
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW

from checks import leaf_state, raises_rule

BEYOND = 3.4028235677973366e38  # the next float64 above float32's largest finite value


@pytest.mark.parametrize("rows", [4, 70_000], ids=["numpy", "compiled"])
@pytest.mark.parametrize(
    ("make", "refused"),
    [
        (lambda p: SGD(p, BEYOND), True),
        (lambda p: Adagrad(p, BEYOND), True),
        (lambda p: Adagrad(p, 0.1, eps=BEYOND), False),
        (lambda p: Adam(p, BEYOND, eps=BEYOND), False),
        (lambda p: AdamW(p, 0.1, weight_decay=10 * BEYOND), True),  # 1 - lr * decay: -inf
    ],
)
@pytest.mark.parametrize("fused", [False, True])
def test_a_hyperparameter_beyond_float32_is_refused_or_cancels_without_a_warning(
    rows: int, make: Any, refused: bool, fused: bool
) -> None:
    layer = Embedding.from_pretrained(np.ones((rows, 2), dtype=np.float32), freeze=False)
    optimizer = make(layer.parameters())
    output = layer(np.arange(rows))
    seed = np.full((rows, 2), 0.5)
    before = leaf_state(layer.table.tensor)
    if not fused:
        output.backward_with_seed(seed)

    def step() -> None:
        optimizer.backward_step(output, seed) if fused else optimizer.step()

    if refused:
        with raises_rule(NonFiniteError, "optimizer.non-finite-step"):
            step()
        assert optimizer.step_count == 0
        if fused:
            assert leaf_state(layer.table.tensor) == before
        else:
            assert layer.table.tensor.numpy().tobytes() == np.ones((rows, 2), np.float32).tobytes()
    else:
        step()
        assert optimizer.step_count == 1
        assert np.isfinite(layer.table.tensor.numpy()).all()
