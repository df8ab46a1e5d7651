"""A learning-rate schedule: ``optimizer.learning_rate = x`` sets the step size of the steps
that follow, checked as the constructor checks it. A step after the change is the step of an
optimizer built with the new rate and the same state, bit for bit, for every optimizer, with
``step()`` and with the fused ``backward_step``, below and above the compiled-kernel size."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_from_scratch.errors import OptionError

from optim_support import FACTORIES, layer_of, random_steps


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("tokens", [6, 4096])
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_changed_rate_steps_as_an_optimizer_built_with_it(
    name: str, tokens: int, fused: bool
) -> None:
    steps = random_steps(64, 32, tokens, 2, seed=tokens)
    values = np.random.default_rng(1).standard_normal((64, 32))
    scheduled_layer, rebuilt_layer = layer_of(values), layer_of(values)
    scheduled = FACTORIES[name](scheduled_layer.parameters())
    rebuilt = FACTORIES[name](rebuilt_layer.parameters())

    def step(layer: object, optimizer: object, ids: object, seed: object) -> None:
        output = layer(ids)  # type: ignore[operator]
        if fused:
            optimizer.backward_step(output, seed)  # type: ignore[attr-defined]
        else:
            output.backward_with_seed(seed)
            optimizer.step()  # type: ignore[attr-defined]
            optimizer.zero_grad()  # type: ignore[attr-defined]

    step(scheduled_layer, scheduled, *steps[0])
    step(rebuilt_layer, rebuilt, *steps[0])
    new_rate = scheduled.learning_rate / 3
    scheduled.learning_rate = new_rate
    assert scheduled.learning_rate == new_rate
    assert scheduled.hyperparameters["learning_rate"] == new_rate
    again = FACTORIES[name](rebuilt_layer.parameters())
    again.learning_rate = new_rate
    again.load_state_dict(rebuilt.state_dict())
    step(scheduled_layer, scheduled, *steps[1])
    step(rebuilt_layer, again, *steps[1])
    ours = scheduled_layer.table.tensor.numpy()
    assert ours.tobytes() == rebuilt_layer.table.tensor.numpy().tobytes()
    assert not np.array_equal(ours, values)


@pytest.mark.parametrize("refused", [0, -0.1, math.nan, math.inf, True, "0.1", None])
def test_a_refused_rate_leaves_the_step_size_as_it_was(refused: object) -> None:
    optimizer = FACTORIES["sgd"](layer_of(np.ones((2, 2))).parameters())
    with pytest.raises(OptionError):
        optimizer.learning_rate = refused  # type: ignore[assignment]
    assert optimizer.learning_rate == 0.1


def test_a_numpy_rate_is_read_once_as_a_float() -> None:
    optimizer = FACTORIES["adam"](layer_of(np.ones((2, 2))).parameters())
    optimizer.learning_rate = np.float32(0.5)
    assert type(optimizer.learning_rate) is float and optimizer.learning_rate == 0.5
