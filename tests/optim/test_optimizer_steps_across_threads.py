"""Every optimizer steps as one atomic change of its parameters: ``step()`` and
``backward_step()`` wait for a parameter's update lock, two steps of one optimizer at once are
two steps in a row, ``state_dict()`` waits for a step in progress, and a pass that commits into a
fused table while the fused pass computes is added before the step."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import Optimizer
from llm_from_scratch.tensor import Tensor

from optim_support import FACTORIES

JOIN_SECONDS = 60.0  # a guard against a hang, not a measurement
SIZES = {"numpy": 10, "compiled": 1200}  # 1200 x 64 values run the compiled row kernels


class AbandonedUpdateError(Exception):
    """Raised by a planned update to give its lock back without writing anything."""


class HeldLock:
    """A thread holding ``leaf``'s update lock until :meth:`release`; it writes nothing."""

    def __init__(self, leaf: TensorValue) -> None:
        self._holding, self._go = threading.Event(), threading.Event()

        def planned() -> list[Callable[[Any], None]]:
            self._holding.set()
            self._go.wait(JOIN_SECONDS)
            raise AbandonedUpdateError()

        def run() -> None:
            with contextlib.suppress(AbandonedUpdateError):
                update_leaves_in_place([leaf], planned)

        self._thread = threading.Thread(target=run)
        self._thread.start()
        assert self._holding.wait(JOIN_SECONDS)

    def release(self) -> None:
        self._go.set()
        self._thread.join(JOIN_SECONDS)


def started(call: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """``call`` running on a new thread, and the list its exception goes to."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def table(rows: int) -> Embedding:
    return Embedding.new("token_embedding.weight", rows, 64, SplitMix64.from_seed(3))


def stored(*leaves: TensorValue) -> dict[str, bytes]:
    """Each leaf's values, gradient and revision, as bytes (no optimizer lock is taken)."""
    state = {}
    for index, leaf in enumerate(leaves):
        gradient = leaf.gradient_snapshot()
        assert gradient is not None
        state[f"{index} values"] = leaf.numpy().tobytes()
        state[f"{index} gradient"] = gradient.numpy().tobytes()
        state[f"{index} revision"] = str(leaf.value_revision).encode()
    return state


def everything(layer: Embedding, optimizer: Optimizer, *others: TensorValue) -> dict[str, bytes]:
    """Values, gradients, revisions and optimizer state, as bytes."""
    state = {key: value.tobytes() for key, value in optimizer.state_dict().items()}
    return state | stored(layer.table.tensor, *others)


@pytest.mark.parametrize("fused", [False, True], ids=["step", "backward_step"])
@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize("name", FACTORIES)
def test_a_step_waits_while_another_update_holds_a_parameter(
    name: str, size: int, fused: bool
) -> None:
    layer = table(size)
    optimizer = FACTORIES[name](layer.parameters())
    ids = np.arange(size)
    output = layer.forward(ids, (size,))
    seed = np.ones((size, 64))
    if not fused:
        output.backward_with_seed(seed)
    before = stored(layer.table.tensor)
    held = HeldLock(layer.table.tensor)
    if fused:
        stepper, errors = started(lambda: optimizer.backward_step(output, seed))
    else:
        stepper, errors = started(optimizer.step)
    stepper.join(0.25)
    assert stepper.is_alive(), "the step ran while another update held the table"
    assert stored(layer.table.tensor) == before
    held.release()
    stepper.join(JOIN_SECONDS)
    assert errors == []
    assert optimizer.step_count == 1 and layer.table.tensor.value_revision == 1


@pytest.mark.parametrize("name", FACTORIES)
def test_state_dict_waits_for_a_step_in_progress_and_holds_its_result(name: str) -> None:
    layer = table(SIZES["compiled"])
    optimizer = FACTORIES[name](layer.parameters())
    layer.forward([1, 2, 2], (3,)).backward_with_seed(np.ones((3, 64)))
    held = HeldLock(layer.table.tensor)
    stepper, errors = started(optimizer.step)
    stepper.join(0.25)
    states: list[dict[str, np.ndarray[Any, Any]]] = []
    reader, _ = started(lambda: states.append(optimizer.state_dict()))
    reader.join(0.25)
    assert reader.is_alive(), "state_dict read the state while a step was waiting to write it"
    held.release()
    stepper.join(JOIN_SECONDS)
    reader.join(JOIN_SECONDS)
    assert errors == [] and len(states) == 1
    assert int(states[0]["step"]) == 1
    after = optimizer.state_dict()
    assert all(states[0][key].tobytes() == after[key].tobytes() for key in after)


@pytest.mark.parametrize("name", FACTORIES)
def test_steps_of_one_optimizer_on_two_threads_are_steps_in_a_row(name: str) -> None:
    def trained(threads: int) -> tuple[bytes, int]:
        layer = table(SIZES["compiled"])
        optimizer = FACTORIES[name](layer.parameters())
        ids = np.random.default_rng(1).integers(0, SIZES["compiled"], size=2000)
        layer.forward(ids, (ids.size,)).backward_with_seed(np.ones((ids.size, 64)))
        steps = 12

        def run() -> None:
            for _ in range(steps // threads):
                optimizer.step()

        runners = [started(run) for _ in range(threads)]
        for thread, _ in runners:
            thread.join(JOIN_SECONDS)
        assert all(errors == [] for _, errors in runners)
        return layer.table.tensor.numpy().tobytes(), optimizer.step_count

    assert trained(threads=2) == trained(threads=1)


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize("name", FACTORIES)
def test_a_pass_that_commits_into_the_fused_table_meanwhile_is_stepped_with_it(
    name: str, size: int
) -> None:
    def run(concurrent: bool) -> dict[str, bytes]:
        bias = TensorValue.parameter(Tensor((3,), [0.5, -1.0, 2.0]))  # created first: locked first
        layer = table(size)
        optimizer = FACTORIES[name]([*layer.parameters(), bias])
        rng = np.random.default_rng(4)
        fused_ids = rng.integers(0, size // 2, size=2 * size)
        fused = layer.forward(fused_ids, (fused_ids.size,)).sum().add(bias.sum())
        other = layer.forward(fused_ids[::-1][:7], (7,))
        other_seed = rng.standard_normal((7, 64))
        if not concurrent:
            other.backward_with_seed(other_seed)
            optimizer.backward_step(fused)
            return everything(layer, optimizer, bias)
        held = HeldLock(bias)  # the fused pass computes, then waits for the bias's lock
        stepper, errors = started(lambda: optimizer.backward_step(fused))
        stepper.join(0.25)
        other.backward_with_seed(other_seed)  # commits into the table: its lock is free
        held.release()
        stepper.join(JOIN_SECONDS)
        assert errors == []
        return everything(layer, optimizer, bias)

    assert run(concurrent=True) == run(concurrent=False)
