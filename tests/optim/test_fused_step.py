"""``backward_step``: the row updates fused into the backward give what backward, step and
zero_grad give, bit for bit, and change nothing when anything fails."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import (
    GraphRetention,
    TensorValue,
)
from llm_from_scratch.errors import NonFiniteError, OptionError, ShapeError, TapeError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD, Adagrad, Adam, Optimizer
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from optim_support import FACTORIES, Factory

Loss = Callable[[Embedding, TensorValue, Any], TensorValue]


def snapshot(layer: Embedding, bias: TensorValue, optimizer: Optimizer) -> dict[str, bytes]:
    """Everything a step may change, as bytes."""
    state = {key: value.tobytes() for key, value in optimizer.state_dict().items()}
    for name, leaf in (("table", layer.table.tensor), ("bias", bias)):
        gradient = leaf.gradient_snapshot()
        state[f"{name} values"] = leaf.numpy().tobytes()
        state[f"{name} gradient"] = b"" if gradient is None else gradient.numpy().tobytes()
        state[f"{name} revision"] = str(leaf.value_revision).encode()
    return state


def lookup(layer: Embedding, bias: TensorValue, ids: Any) -> TensorValue:
    return layer.forward(ids, (ids.size,))


def lookup_times_weights_plus_bias(layer: Embedding, bias: TensorValue, ids: Any) -> TensorValue:
    rows = layer.forward(ids, (ids.size,))
    weights = Tensor(rows.shape, np.linspace(-1, 1, rows.value.element_count), rows.dtype)
    return rows.mul(weights).sum().add(bias.sum())


def two_lookups(layer: Embedding, bias: TensorValue, ids: Any) -> TensorValue:
    return layer.forward(ids, (ids.size,)).sum().add(layer.forward(ids[::-1], (ids.size,)).sum())


def lookup_and_dense_use(layer: Embedding, bias: TensorValue, ids: Any) -> TensorValue:
    table = layer.table.tensor
    scale = Tensor(table.shape, np.full(table.value.element_count, 0.5), table.dtype)
    return layer.forward(ids, (ids.size,)).sum().add(table.mul(scale).sum())


def run(
    factory: Factory,
    loss: Loss,
    rows: int,
    width: int,
    dtype: str,
    fused: bool,
    prior_gradient: bool = False,
) -> dict[str, bytes]:
    layer = Embedding.new("token_embedding.weight", rows, width, SplitMix64.from_seed(3), dtype)
    bias = TensorValue.parameter(Tensor((3,), [0.5, -1.0, 2.0], dtype=dtype))
    optimizer = factory([*layer.parameters(), bias])
    rng = np.random.default_rng(4)
    for _ in range(3):
        ids = rng.integers(0, rows // 2, size=2 * rows)
        if prior_gradient:
            layer.forward(ids[:3], (3,)).sum().backward()
        output = loss(layer, bias, ids)
        seed = None
        if output.shape:
            seed = rng.standard_normal(output.shape).astype(dtype)
        if fused:
            optimizer.backward_step(output, seed)
        else:
            if seed is None:
                output.backward()
            else:
                output.backward_with_seed(seed)
            optimizer.step()
            optimizer.zero_grad()
        with raises_rule(TapeError, "tape.stale-value"):
            optimizer.backward_step(output, seed)
    return snapshot(layer, bias, optimizer)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("rows", [10, 1200], ids=["numpy", "compiled"])
@pytest.mark.parametrize(
    "loss", [lookup, lookup_times_weights_plus_bias, two_lookups, lookup_and_dense_use]
)
@pytest.mark.parametrize("name", FACTORIES)
def test_backward_step_equals_backward_then_step_then_zero_grad(
    name: str, loss: Loss, rows: int, dtype: str
) -> None:
    factory = FACTORIES[name]
    fused = run(factory, loss, rows, 64, dtype, fused=True)
    assert fused == run(factory, loss, rows, 64, dtype, fused=False)


@pytest.mark.parametrize("name", FACTORIES)
def test_a_stored_gradient_is_added_before_the_step(name: str) -> None:
    factory = FACTORIES[name]
    fused = run(factory, lookup, 1200, 64, "float64", fused=True, prior_gradient=True)
    assert fused == run(factory, lookup, 1200, 64, "float64", fused=False, prior_gradient=True)


def test_a_fused_step_never_stores_the_table_gradient() -> None:
    layer = Embedding.new("w", 40_000, 64, SplitMix64.from_seed(5))
    optimizer = Adam(layer.parameters(), learning_rate=0.1)
    ids = np.random.default_rng(1).integers(0, 40_000, size=4_000)
    seed = np.ones((4_000, 64))
    optimizer.backward_step(layer(ids), seed)  # the first step may set up scratch space
    output = layer(ids)
    summed_bytes = np.unique(ids).size * 64 * 8
    tracemalloc.start()
    try:
        optimizer.backward_step(output, seed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < summed_bytes / 4
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.rows.size == 0 and optimizer.step_count == 2


@pytest.mark.parametrize("rows", [10, 1200], ids=["numpy", "compiled"])
@pytest.mark.parametrize("retention", list(GraphRetention))
def test_a_step_that_would_overflow_changes_no_value_state_or_gradient(
    rows: int, retention: GraphRetention
) -> None:
    layer = Embedding.new("w", rows, 64, SplitMix64.from_seed(3))
    bias = TensorValue.parameter(Tensor((3,), [1.0, 2.0, 3.0]))
    other = TensorValue.parameter(Tensor((3,), [1.0, 1.0, 1.0]))  # not in the optimizer
    optimizer = SGD([*layer.parameters(), bias], learning_rate=1e308)
    ids = np.arange(rows)
    rows_output = layer.forward(ids, (rows,))
    weights = np.ones(rows_output.shape)
    weights[rows - 1, 0] = -10.0  # the step overflows there
    loss = rows_output.mul(Tensor(weights.shape, weights.ravel())).sum()
    loss = loss.add(bias.mul(other).sum())
    before = snapshot(layer, bias, optimizer)
    other_before = other.gradient_snapshot()
    with raises_rule(NonFiniteError, "optimizer.non-finite-step") as caught:
        optimizer.backward_step(loss, retention=retention)
    assert (caught.value.parameter, caught.value.index) == ("w", (rows - 1) * 64)
    assert snapshot(layer, bias, optimizer) == before
    after = other.gradient_snapshot()
    assert after is not None and other_before is not None
    assert after.numpy().tobytes() == other_before.numpy().tobytes()
    loss.backward()  # the graph was neither released nor made stale


@pytest.mark.parametrize("rows", [10, 1200], ids=["numpy", "compiled"])
def test_a_fused_row_sum_that_overflows_is_the_tapes_error_and_changes_nothing(
    rows: int,
) -> None:
    def attempt(fused: bool) -> tuple[BaseException, dict[str, bytes]]:
        layer = Embedding.new("w", rows, 64, SplitMix64.from_seed(3))
        bias = TensorValue.parameter(Tensor((3,), [1.0, 2.0, 3.0]))
        optimizer = Adam([*layer.parameters(), bias], learning_rate=0.1)
        output = layer.forward(np.array([1, 0, 1] * rows), (3 * rows,))
        seed = np.ones(output.shape)
        seed[0, 7] = seed[2, 7] = 1.7e308  # row 1 sums two of them
        before = snapshot(layer, bias, optimizer)
        with raises_rule(NonFiniteError, "gradient.non-finite") as caught:
            if fused:
                optimizer.backward_step(output, seed)
            else:
                output.backward_with_seed(seed)
        assert snapshot(layer, bias, optimizer) == before
        return caught.value, before

    fused_error, _ = attempt(True)
    plain_error, _ = attempt(False)
    assert (fused_error.operation, fused_error.index, fused_error.value) == (  # type: ignore[attr-defined]
        plain_error.operation,  # type: ignore[attr-defined]
        plain_error.index,  # type: ignore[attr-defined]
        plain_error.value,  # type: ignore[attr-defined]
    )
    assert fused_error.index == 64 + 7  # type: ignore[attr-defined]


def test_backward_step_checks_like_backward_with_seed() -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(1))
    optimizer = SGD(layer.parameters(), 0.1)
    output = layer([1, 2])
    with raises_rule(OptionError, "optimizer.output-type"):
        optimizer.backward_step(np.ones((2, 2)))  # type: ignore[arg-type]
    with raises_rule(ShapeError, "value.not-scalar-output"):
        optimizer.backward_step(output)
    with raises_rule(ShapeError, "seed.shape"):
        optimizer.backward_step(output, np.ones((2, 3)))
    optimizer.backward_step(output, np.ones((2, 2)), GraphRetention.RELEASE)
    with raises_rule(TapeError, "tape.released"):
        output.backward_with_seed(np.ones((2, 2)))
    assert optimizer.step_count == 1 and layer.table.tensor.value_revision == 1


@pytest.mark.parametrize("overflowing", [0, 1])
@pytest.mark.parametrize("fused", [False, True])
def test_with_two_large_tables_an_overflow_in_either_changes_neither(
    overflowing: int, fused: bool
) -> None:
    # The first large row update is written in one pass with an undo log; the second is
    # checked before anything is written.
    layers = [Embedding.new(f"table{i}", 1200, 64, SplitMix64.from_seed(i)) for i in (0, 1)]
    optimizer = Adagrad([*layers[0].parameters(), *layers[1].parameters()], learning_rate=0.1)
    ids = np.arange(1200)
    outputs = [layer.forward(ids, (1200,)) for layer in layers]
    seeds = [np.ones((1200, 64)), np.ones((1200, 64))]
    seeds[overflowing][700, 3] = 1e200  # its square overflows the sum
    loss = outputs[0].mul(Tensor((1200, 64), seeds[0].ravel())).sum()
    loss = loss.add(outputs[1].mul(Tensor((1200, 64), seeds[1].ravel())).sum())
    before = [layer.table.tensor.value_snapshot().numpy().tobytes() for layer in layers]
    state = optimizer.state_dict()
    with raises_rule(NonFiniteError, "optimizer.non-finite-step") as caught:
        if fused:
            optimizer.backward_step(loss)
        else:
            loss.backward()
            optimizer.step()
    assert caught.value.parameter == f"table{overflowing}"
    assert (caught.value.state, caught.value.index) == ("sum", 700 * 64 + 3)
    assert [layer.table.tensor.numpy().tobytes() for layer in layers] == before
    after = optimizer.state_dict()
    assert all(after[key].tobytes() == state[key].tobytes() for key in state)
    assert [layer.table.tensor.value_revision for layer in layers] == [0, 0]


def test_two_large_tables_step_like_backward_then_step() -> None:
    def trained(fused: bool) -> list[bytes]:
        layers = [Embedding.new(f"t{i}", 1200, 64, SplitMix64.from_seed(i)) for i in (0, 1)]
        optimizer = Adam([*layers[0].parameters(), *layers[1].parameters()], 0.01)
        rng = np.random.default_rng(2)
        for _ in range(3):
            ids = rng.integers(0, 600, size=2400)
            loss = layers[0].forward(ids, (2400,)).sum()
            loss = loss.add(layers[1].forward(ids[::-1], (2400,)).sum())
            if fused:
                optimizer.backward_step(loss)
            else:
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        state = [value.tobytes() for value in optimizer.state_dict().values()]
        return [layer.table.tensor.numpy().tobytes() for layer in layers] + state

    assert trained(True) == trained(False)


@pytest.mark.parametrize("rows", [10, 1200], ids=["numpy", "compiled"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("also", ["nothing", "stale", "retention"])
def test_a_non_finite_seed_is_reported_first_as_by_backward_with_seed(
    rows: int, bad: float, also: str
) -> None:
    def attempt(fused: bool) -> tuple[BaseException, bool]:
        layer = Embedding.new("w", rows, 64, SplitMix64.from_seed(3))
        optimizer = SGD(layer.parameters(), learning_rate=0.1)
        output = layer.forward(np.arange(rows) % 7, (rows,))  # single-use rows too
        if also == "stale":
            layer([0]).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        before = snapshot(layer, TensorValue.parameter(Tensor((3,), [0.0] * 3)), optimizer)
        seed = np.ones(output.shape)
        seed[rows - 1, 9] = bad  # row (rows - 1) % 7, maybe used once
        retention: Any = "release" if also == "retention" else GraphRetention.RETAIN
        with pytest.raises(Exception) as caught:
            if fused:
                optimizer.backward_step(output, seed, retention)
            else:
                output.backward_with_seed(seed, retention)
        after = snapshot(layer, TensorValue.parameter(Tensor((3,), [0.0] * 3)), optimizer)
        return caught.value, after == before

    fused, unchanged = attempt(True)
    plain, _ = attempt(False)
    assert unchanged
    assert type(fused) is type(plain) and fused.args == plain.args
    assert (type(fused), fused.rule) == (NonFiniteError, "seed.non-finite")  # type: ignore[attr-defined]
