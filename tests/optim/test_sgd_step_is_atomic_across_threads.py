"""An SGD step is one atomic change of a parameter: a forward or a snapshot on another thread
sees the values of exactly one revision, a backward pass that overlaps the step is refused as
stale with nothing stored, and ``zero_grad`` waits for a step in progress.

The tables hold integers and every step subtracts exactly one from every value, so a table
read at any moment must be ``initial - k`` for one whole number ``k``: a read that mixed two
revisions would show two different ``k``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.errors import TapeError
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

JOIN_SECONDS = 60.0  # a guard against a hang, not a measurement
ROWS, WIDTH = 512, 128  # 65,536 values: gathers, scatters and row updates run compiled, nogil


def integer_layer() -> tuple[Embedding, np.ndarray[Any, Any]]:
    initial = (np.arange(ROWS * WIDTH) % 1000).astype(np.float64).reshape(ROWS, WIDTH)
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((ROWS, WIDTH), initial))
    return Embedding.from_parameter(table), initial


def steps_subtracting_one(layer: Embedding, count: int) -> Callable[[], None]:
    """``count`` SGD steps, each after a pass whose gradient is one everywhere."""
    leaf = layer.table.tensor
    optimizer = SGD(layer.parameters(), learning_rate=1.0)
    every_row = list(range(ROWS))

    def run() -> None:
        for _ in range(count):
            leaf.zero_grad()
            layer.forward(every_row, (ROWS,)).backward_with_seed(np.ones((ROWS, WIDTH)))
            optimizer.step()

    return run


def revisions_seen(initial: np.ndarray[Any, Any], seen: np.ndarray[Any, Any]) -> set[float]:
    return set(np.unique(initial - seen).tolist())


def test_forwards_and_snapshots_during_steps_see_one_revision_of_the_table() -> None:
    layer, initial = integer_layer()
    leaf = layer.table.tensor
    steps = 120
    stepper = threading.Thread(target=steps_subtracting_one(layer, steps))
    mixed: list[set[float]] = []
    reads = [0]

    def read_until_done() -> None:
        every_row = list(range(ROWS))
        while True:
            stepping = stepper.is_alive()
            for seen in (layer.forward(every_row, (ROWS,)).numpy(), leaf.value_snapshot().numpy()):
                offsets = revisions_seen(initial, seen)
                reads[0] += 1
                if len(offsets) != 1:
                    mixed.append(offsets)
            if not stepping:
                return

    readers = [threading.Thread(target=read_until_done) for _ in range(3)]
    for thread in (stepper, *readers):
        thread.start()
    for thread in (stepper, *readers):
        thread.join(JOIN_SECONDS)
    assert reads[0] > 0
    assert mixed == []
    assert leaf.value_revision == steps
    assert revisions_seen(initial, leaf.numpy()) == {float(steps)}


class AbandonedUpdateError(Exception):
    """Raised by a planned update to give its locks back without writing anything."""


def held_update(
    leaf: TensorValue,
    holding: threading.Event,
    go: threading.Event,
    write: Callable[[], Callable[[Any], None]] | None,
) -> Callable[[], None]:
    """An in-place update that holds ``leaf``'s lock until ``go``, then plans ``write()`` (or
    abandons the update when ``write`` is None)."""

    def planned() -> list[Callable[[Any], None]]:
        holding.set()
        go.wait(JOIN_SECONDS)
        if write is None:
            raise AbandonedUpdateError()
        return [write()]

    def run() -> None:
        update_leaves_in_place([leaf], planned)

    return run


def subtract_stored_gradient(leaf: TensorValue) -> Callable[[], Callable[[Any], None]]:
    """Plan ``values -= gradient``, reading the gradient when the plan runs."""

    def plan() -> Callable[[Any], None]:
        gradient = leaf.gradient
        assert gradient is not None
        step = gradient.numpy().copy()

        def write(values: Any) -> None:
            np.subtract(values, step, out=values)

        return write

    return plan


def test_a_backward_pass_that_overlaps_a_step_waits_and_then_is_refused_as_stale(
    known_layer: Embedding,
) -> None:
    leaf = known_layer.table.tensor
    output = known_layer([[2, 1, 2]])
    holding, go = threading.Event(), threading.Event()
    step = threading.Thread(
        target=held_update(leaf, holding, go, lambda: lambda values: np.add(values, 1, out=values))
    )
    step.start()
    assert holding.wait(JOIN_SECONDS)
    refused: list[TapeError] = []

    def backward() -> None:
        try:
            output.backward_with_seed(np.ones((1, 3, 2)))
        except TapeError as error:
            assert error.rule == "tape.stale-value"
            refused.append(error)

    passer = threading.Thread(target=backward)
    passer.start()
    passer.join(1.0)
    assert passer.is_alive(), "the pass stored its gradient while a step held the table"
    go.set()
    step.join(JOIN_SECONDS)
    passer.join(JOIN_SECONDS)
    assert len(refused) == 1
    assert (refused[0].recorded_revision, refused[0].current_revision) == (0, 1)
    assert not leaf.gradient.numpy().any()  # type: ignore[union-attr]
    assert leaf.value.flat_values() == [11, 12, 21, 22, 31, 32, 41, 42]


def test_zero_grad_waits_for_a_step_in_progress_so_the_step_reads_the_whole_gradient(
    known_layer: Embedding,
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.ones((1, 3, 2)))
    holding, go = threading.Event(), threading.Event()
    step = threading.Thread(target=held_update(leaf, holding, go, subtract_stored_gradient(leaf)))
    step.start()
    assert holding.wait(JOIN_SECONDS)
    resetter = threading.Thread(target=leaf.zero_grad)
    resetter.start()
    resetter.join(1.0)
    assert resetter.is_alive(), "zero_grad ran while a step held the parameter"
    go.set()
    step.join(JOIN_SECONDS)
    resetter.join(JOIN_SECONDS)
    assert leaf.value.flat_values() == [10, 11, 19, 20, 28, 29, 40, 41]
    assert not leaf.gradient.numpy().any()  # type: ignore[union-attr]


def test_a_forward_does_not_wait_while_a_step_only_plans(known_layer: Embedding) -> None:
    leaf = known_layer.table.tensor
    holding, go = threading.Event(), threading.Event()
    abandoned: list[AbandonedUpdateError] = []

    def abandoned_step() -> None:
        try:
            held_update(leaf, holding, go, None)()
        except AbandonedUpdateError as error:
            abandoned.append(error)

    step = threading.Thread(target=abandoned_step)
    step.start()
    assert holding.wait(JOIN_SECONDS)
    rows = known_layer([[3, 0]]).numpy()  # would hang if a forward took the update lock
    go.set()
    step.join(JOIN_SECONDS)
    assert rows.tolist() == [[[40.0, 41.0], [10.0, 11.0]]]
    assert len(abandoned) == 1 and leaf.value_revision == 0


def test_steps_and_backward_passes_on_other_threads_lose_no_pass() -> None:
    layer, initial = integer_layer()
    leaf = layer.table.tensor
    optimizer = SGD(layer.parameters(), learning_rate=1.0)
    every_row = list(range(ROWS))
    stored = [0] * 3

    def passes(slot: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(20):
                output = layer.forward(every_row, (ROWS,))
                try:
                    output.backward_with_seed(np.ones((ROWS, WIDTH)))
                except TapeError as error:
                    assert error.rule == "tape.stale-value"
                    continue
                stored[slot] += 1

        return run

    def steps() -> None:
        for _ in range(10):
            optimizer.step()

    threads = [threading.Thread(target=passes(slot)) for slot in range(3)]
    threads.append(threading.Thread(target=steps))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_SECONDS)
    gradient = leaf.gradient
    assert gradient is not None
    assert revisions_seen(np.zeros((ROWS, WIDTH)), gradient.numpy()) == {-float(sum(stored))}
    assert len(revisions_seen(initial, leaf.numpy())) == 1
    assert leaf.value_revision == 10


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Let the interpreter switch threads far more often, so that races show."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.mark.usefixtures("frequent_thread_switches")
@pytest.mark.parametrize("rows", [4, ROWS], ids=["NumPy rows", "compiled rows"])
def test_steps_from_several_threads_on_one_parameter_run_one_after_the_other(rows: int) -> None:
    initial = (np.arange(rows * WIDTH) % 1000).astype(np.float64).reshape(rows, WIDTH)
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((rows, WIDTH), initial))
    layer = Embedding.from_parameter(table)
    layer.forward(list(range(rows)), (rows,)).backward_with_seed(np.ones((rows, WIDTH)))
    threads, steps = 4, 200
    start = threading.Barrier(threads)

    def stepping() -> None:
        optimizer = SGD(layer.parameters(), learning_rate=1.0)
        start.wait(JOIN_SECONDS)
        for _ in range(steps):
            optimizer.step()

    workers = [threading.Thread(target=stepping) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(JOIN_SECONDS)
    assert table.tensor.value_revision == threads * steps
    assert revisions_seen(initial, table.tensor.numpy()) == {float(threads * steps)}
