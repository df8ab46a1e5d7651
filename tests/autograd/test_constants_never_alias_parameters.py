"""Only a parameter's values change (by an optimizer step). A constant or an operation result,
built under ``no_grad()`` or not, never changes, and a graph that read a parameter before the
step refuses to run backward with ``tape.stale-value``."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import TensorValue, no_grad
from llm_from_scratch.errors import TapeError
from llm_from_scratch.nn import NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import raises_rule

ONES = Tensor((2, 2), [1.0] * 4)


def give_gradient_and_step(parameter: TensorValue) -> None:
    """An SGD step that subtracts one from every value of ``parameter``."""
    parameter.zero_grad()
    parameter.mul(Tensor(parameter.shape, [1.0] * 4)).sum().backward()
    SGD([parameter], learning_rate=1.0).step()


def test_a_constant_reshaped_from_a_parameter_under_no_grad_keeps_its_values_after_a_step() -> None:
    p = NamedParameter.from_tensor("w", Tensor((2, 2), [1.0, 2.0, 3.0, 4.0]))
    q = TensorValue.parameter(Tensor((4,), [1.0, 1.0, 1.0, 1.0]))
    with no_grad():
        r = p.tensor.reshape((4,))
    loss = q.mul(r).sum()
    give_gradient_and_step(p.tensor)
    assert p.tensor.value.flat_values() == [0.0, 1.0, 2.0, 3.0]
    assert r.kind == "constant" and r.value.flat_values() == [1.0, 2.0, 3.0, 4.0]
    loss.backward()
    assert q.gradient.flat_values() == [1.0, 2.0, 3.0, 4.0]  # type: ignore[union-attr]


def test_a_reshape_recorded_from_a_parameter_keeps_its_values_and_its_graph_goes_stale() -> None:
    p = TensorValue.parameter(Tensor((2, 2), [1.0, 2.0, 3.0, 4.0]))
    r = p.reshape((4,))
    loss = r.mul(r).sum()
    give_gradient_and_step(p)
    assert r.kind == "operation" and r.value.flat_values() == [1.0, 2.0, 3.0, 4.0]
    p.zero_grad()
    with raises_rule(TapeError, "tape.stale-value") as caught:
        loss.backward()
    assert (caught.value.operation, caught.value.operand) == ("reshape", "input")
    assert (caught.value.recorded_revision, caught.value.current_revision) == (0, 1)
    assert p.gradient.flat_values() == [0.0] * 4  # type: ignore[union-attr]


BUILT_FROM_A_PARAMETER: dict[str, Callable[[TensorValue], TensorValue]] = {
    "reshape": lambda p: p.reshape((4,)),
    "reshape to the same shape": lambda p: p.reshape((2, 2)),
    "add": lambda p: p.add(ONES),
    "mul": lambda p: p.mul(ONES),
    "sum": lambda p: p.sum(),
    "gather_rows": lambda p: p.gather_rows([1, 0], (2,)),
    "constant of its value": lambda p: TensorValue.constant(p.value),
    "parameter of its value": lambda p: TensorValue.parameter(p.value),
    "add of its value as a tensor": lambda p: TensorValue.constant(ONES).add(p.value),
}


@pytest.mark.parametrize("quiet", [False, True], ids=["recorded", "under no_grad"])
@pytest.mark.parametrize("build", BUILT_FROM_A_PARAMETER.values(), ids=BUILT_FROM_A_PARAMETER)
def test_no_value_built_from_a_parameter_shares_its_memory(
    build: Callable[[TensorValue], TensorValue], quiet: bool
) -> None:
    p = TensorValue.parameter(Tensor((2, 2), [1.0, 2.0, 3.0, 4.0]))
    with no_grad() if quiet else nullcontext():
        value = build(p)
    assert not np.shares_memory(value.numpy(), p.numpy())
    before = value.value_snapshot()
    give_gradient_and_step(p)
    assert value.value.equals(before)


def test_a_reshape_of_a_value_that_is_not_a_parameter_is_a_view_not_a_copy() -> None:
    p = TensorValue.parameter(Tensor((2, 2), [1.0, 2.0, 3.0, 4.0]))
    doubled = p.add(p)
    for quiet in (False, True):
        with no_grad() if quiet else nullcontext():
            flat = doubled.reshape((4,))
        assert np.shares_memory(flat.numpy(), doubled.numpy())


# A property over generated programs -------------------------------------------------------

OPERATIONS = ("add", "mul", "reshape", "gather_rows", "constant of a value", "add a value")
SMALL_INTEGERS = st.integers(-3, 3).map(float)


@dataclass(frozen=True)
class Built:
    """A value the program built, and whether a recorded operation in its graph read ``p``."""

    value: TensorValue
    reads_p: bool


def _same_shape(pool: list[Built], first: Built, pick: int) -> Built:
    matching = [built for built in pool if built.value.shape == first.value.shape]
    return matching[pick % len(matching)]


def run_step(pool: list[Built], p: TensorValue, step: tuple[str, int, int, bool]) -> Built:
    """Run one generated operation and model whether its result records a read of ``p``."""
    operation, first_pick, second_pick, quiet = step
    first = pool[first_pick % len(pool)]
    if operation == "gather_rows":
        tables = [built for built in pool if built.value.shape == (2, 2)]
        first = tables[first_pick % len(tables)]
    second = _same_shape(pool, first, second_pick)
    context: AbstractContextManager[None] = no_grad() if quiet else nullcontext()
    operands = [first]
    with context:
        if operation == "add":
            value, operands = first.value.add(second.value), [first, second]
        elif operation == "mul":
            value, operands = first.value.mul(second.value), [first, second]
        elif operation == "reshape":
            value = first.value.reshape((4,) if first.value.shape == (2, 2) else (2, 2))
        elif operation == "gather_rows":
            value = first.value.gather_rows([second_pick % 2, second_pick // 2 % 2], (2,))
        elif operation == "constant of a value":
            value, operands = TensorValue.constant(first.value.value), []
        else:
            value = first.value.add(second.value.value)  # a Tensor operand, copied
    recorded = not quiet and any(built.value.kind != "constant" for built in operands)
    assert value.kind == ("operation" if recorded else "constant")
    reads_p = recorded and any(built.value.is_same_node(p) or built.reads_p for built in operands)
    return Built(value, reads_p)


def pass_gradients(loss: TensorValue, parameters: tuple[TensorValue, ...]) -> list[bytes]:
    for parameter in parameters:
        parameter.zero_grad()
    loss.backward()
    snapshots = [parameter.gradient_snapshot() for parameter in parameters]
    return [snapshot.numpy().tobytes() for snapshot in snapshots if snapshot is not None]


STEPS = st.tuples(
    st.sampled_from(OPERATIONS), st.integers(0, 40), st.integers(0, 40), st.booleans()
)


@given(
    p_values=st.lists(SMALL_INTEGERS, min_size=4, max_size=4),
    q_values=st.lists(SMALL_INTEGERS, min_size=4, max_size=4),
    c_values=st.lists(SMALL_INTEGERS, min_size=4, max_size=4),
    steps=st.lists(STEPS, min_size=1, max_size=6),
)
def test_after_a_step_every_other_value_is_unchanged_and_every_graph_is_exact_or_stale(
    p_values: list[float],
    q_values: list[float],
    c_values: list[float],
    steps: list[tuple[str, int, int, bool]],
) -> None:
    p = TensorValue.parameter(Tensor((2, 2), p_values))
    q = TensorValue.parameter(Tensor((4,), q_values))
    pool = [
        Built(p, False),
        Built(q, False),
        Built(TensorValue.constant(Tensor((4,), c_values)), False),
    ]
    for step in steps:
        pool.append(run_step(pool, p, step))
    others = pool[2:]  # the constant c and every built value
    before = [built.value.value_snapshot().numpy().tobytes() for built in others]
    losses = [
        (built.value.sum(), built.value.is_same_node(p) or built.reads_p)
        for built in pool
        if built.value.kind != "constant"
    ]
    passes = [pass_gradients(loss, (p, q)) for loss, _ in losses]

    give_gradient_and_step(p)

    after = [built.value.value_snapshot().numpy().tobytes() for built in others]
    assert after == before
    assert [built.value.numpy().tobytes() for built in others] == before
    for (loss, reads_p), expected in zip(losses, passes, strict=True):
        if reads_p:
            for parameter in (p, q):
                parameter.zero_grad()
            with raises_rule(TapeError, "tape.stale-value"):
                loss.backward()
            for parameter in (p, q):
                assert not parameter.gradient.numpy().any()  # type: ignore[union-attr]
        else:
            assert pass_gradients(loss, (p, q)) == expected
