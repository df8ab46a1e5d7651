"""The step count at its limit: an exact Python int, bounded where it enters (``load_state_dict``
and ``load_state`` take an ``int64`` at least zero) and where it would leave its ``int64`` (a step
past ``2**63 - 1`` is refused before anything changes), so ``state_dict()`` and ``save_state``
always hold it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.errors import FormatError
from llm_from_scratch.optim import load_state, save_state

from checks import leaf_state, raises_rule
from optim_support import FACTORIES, layer_of

LIMIT = 2**63 - 1


def trained(name: str, step: int):  # type: ignore[no-untyped-def]
    layer = layer_of(np.arange(8.0).reshape(4, 2))
    optimizer = FACTORIES[name](layer.parameters())
    layer([[2, 1, 2]]).sum().backward()
    optimizer.step()
    optimizer.load_state_dict({**optimizer.state_dict(), "step": np.array(step)})
    layer([[0, 2]]).sum().backward()
    return layer, optimizer


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_the_last_countable_step_runs_and_its_count_fits_the_state_dict(
    name: str, tmp_path: Path
) -> None:
    layer, optimizer = trained(name, LIMIT - 1)
    optimizer.step()
    assert optimizer.step_count == LIMIT and type(optimizer.step_count) is int
    state = optimizer.state_dict()
    assert state["step"].dtype == np.int64 and int(state["step"]) == LIMIT
    assert np.isfinite(layer.table.tensor.numpy()).all()
    save_state(tmp_path / "state.safetensors", optimizer)
    resumed = FACTORIES[name](layer.parameters())
    load_state(tmp_path / "state.safetensors", resumed)
    assert resumed.step_count == LIMIT


@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("fused", [False, True])
def test_a_step_past_the_limit_is_refused_and_changes_nothing(
    name: str, fused: bool, tmp_path: Path
) -> None:
    layer, optimizer = trained(name, LIMIT)
    before, state = leaf_state(layer.table.tensor), optimizer.state_dict()
    output = layer([[1, 3]]).sum()
    with raises_rule(FormatError, "optimizer.state") as caught:
        optimizer.backward_step(output) if fused else optimizer.step()
    assert (caught.value.key, caught.value.actual) == ("step", LIMIT)
    assert "2**63 - 1" in caught.value.requirement
    assert leaf_state(layer.table.tensor) == before
    assert optimizer.step_count == LIMIT
    after = optimizer.state_dict()
    assert after.keys() == state.keys()
    assert all(after[key].tobytes() == state[key].tobytes() for key in state)
    save_state(tmp_path / "state.safetensors", optimizer)  # still saves


@pytest.mark.parametrize("step", [-1, LIMIT + 1, 2**64])
def test_a_loaded_step_outside_int64_at_least_zero_is_refused(step: int) -> None:
    _, optimizer = trained("adam", 3)
    state = optimizer.state_dict()
    if step >= 0:  # beyond int64: only an unsigned (up to 2**64 - 1) or object array holds it
        if step < 2**64:
            with raises_rule(FormatError, "optimizer.state"):
                optimizer.load_state_dict({**state, "step": np.array(step, dtype=np.uint64)})
        with raises_rule(FormatError, "optimizer.state"):
            optimizer.load_state_dict({**state, "step": np.array(step, dtype=object)})
    else:
        with raises_rule(FormatError, "optimizer.state"):
            optimizer.load_state_dict({**state, "step": np.array(step)})
    assert optimizer.step_count == 3
