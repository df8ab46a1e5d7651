"""Adagrad: PyTorch's update, dense and row-sparse alike, all or nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.errors import NonFiniteError, OptionError, TapeError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import Adagrad
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import import_optional
from optim_support import (
    assert_relatively_close,
    layer_of,
    random_steps,
    train,
    train_torch,
)

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

ROWS, WIDTH, TOKENS = 40, 5, 24
SETTINGS = [
    {"learning_rate": 0.1},
    {"learning_rate": 0.5, "eps": 1e-3, "initial_accumulator": 0.25},
    {"learning_rate": 0.05, "eps": 0.0, "initial_accumulator": 0.5},
]


def torch_adagrad(torch: Any, settings: dict[str, float]) -> Any:
    return lambda weights: torch.optim.Adagrad(
        weights,
        lr=settings["learning_rate"],
        eps=settings.get("eps", 1e-10),
        initial_accumulator_value=settings.get("initial_accumulator", 0.0),
    )


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("settings", SETTINGS)
def test_adagrad_equals_torch_over_twenty_steps_with_repeated_ids(
    settings: dict[str, float], sparse: bool
) -> None:
    torch = import_optional("torch")
    values = np.random.default_rng(7).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=8)
    layer = layer_of(values)
    optimizer = Adagrad(layer.parameters(), **settings)
    train(layer, optimizer, steps, dense=not sparse)
    expected, state = train_torch(torch, values, torch_adagrad(torch, settings), steps, sparse)
    assert_relatively_close(layer.table.tensor.numpy(), expected)
    assert_relatively_close(optimizer.state_dict()["token_embedding.weight.sum"], state["sum"])
    assert optimizer.step_count == 20


@pytest.mark.parametrize("settings", SETTINGS)
def test_torch_sparse_adagrad_matches_its_dense_adagrad_and_leaves_untouched_rows(
    settings: dict[str, float],
) -> None:
    # What the row-sparse rule rests on: with eps > 0 or a positive initial sum, PyTorch's
    # dense update leaves a row with a zero gradient exactly as it was. Touched rows agree up
    # to rounding only (PyTorch sums and fuses multiply-adds differently in the two paths).
    torch = import_optional("torch")
    values = np.random.default_rng(7).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=8)
    dense, dense_state = train_torch(torch, values, torch_adagrad(torch, settings), steps, False)
    sparse, sparse_state = train_torch(torch, values, torch_adagrad(torch, settings), steps, True)
    untouched = sorted(set(range(ROWS)) - {int(i) for ids, _ in steps for i in ids})
    assert untouched and dense[untouched].tobytes() == values[untouched].tobytes()
    assert sparse[untouched].tobytes() == values[untouched].tobytes()
    assert_relatively_close(sparse, dense)
    assert_relatively_close(sparse_state["sum"], dense_state["sum"])


def test_torch_dense_adagrad_without_eps_or_initial_sum_turns_untouched_rows_nan() -> None:
    torch = import_optional("torch")
    values = np.random.default_rng(7).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 1, seed=8)
    settings = {"learning_rate": 0.1, "eps": 0.0}
    dense, _ = train_torch(torch, values, torch_adagrad(torch, settings), steps, False)
    sparse, _ = train_torch(torch, values, torch_adagrad(torch, settings), steps, True)
    untouched = sorted(set(range(ROWS)) - {int(i) for i in steps[0][0]})
    assert np.isnan(dense[untouched]).all()
    assert sparse[untouched].tobytes() == values[untouched].tobytes()


def test_without_eps_or_initial_sum_dense_refuses_a_zero_gradient_but_rows_update() -> None:
    # 0 / (sqrt(0) + 0) is NaN in the dense update (PyTorch gives NaN too); a row-sparse step
    # never computes the untouched rows.
    layer = layer_of(np.array([[1.0], [2.0], [3.0]]))
    leaf = layer.table.tensor
    optimizer = Adagrad(layer.parameters(), learning_rate=0.1, eps=0.0)
    layer([2]).sum().backward()
    optimizer.step()
    assert leaf.numpy().ravel().tolist() == [1.0, 2.0, 2.9]
    layer([2]).sum().backward()
    leaf.mul(Tensor.zeros((3, 1))).sum().backward()  # the stored gradient turns dense
    with raises_rule(NonFiniteError, "optimizer.non-finite-step") as caught:
        optimizer.step()
    assert (caught.value.state, caught.value.index) == ("value", 0)


@pytest.mark.parametrize("settings", SETTINGS)
def test_row_sparse_adagrad_equals_dense_adagrad_bit_for_bit(settings: dict[str, float]) -> None:
    values = np.random.default_rng(3).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=4)
    sparse_layer, dense_layer = layer_of(values), layer_of(values)
    sparse_optimizer = Adagrad(sparse_layer.parameters(), **settings)
    dense_optimizer = Adagrad(dense_layer.parameters(), **settings)
    train(sparse_layer, sparse_optimizer, steps)
    train(dense_layer, dense_optimizer, steps, dense=True)
    assert sparse_layer.table.tensor.numpy().tobytes() == dense_layer.table.tensor.numpy().tobytes()
    sparse_state, dense_state = sparse_optimizer.state_dict(), dense_optimizer.state_dict()
    assert sparse_state.keys() == dense_state.keys()
    assert all(sparse_state[key].tobytes() == dense_state[key].tobytes() for key in sparse_state)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_compiled_step_rounds_like_the_formula(dtype: str) -> None:
    rows, width = 3000, 64
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(9), dtype)
    optimizer = Adagrad(layer.parameters(), learning_rate=0.3, eps=1e-6, initial_accumulator=0.1)
    leaf = layer.table.tensor
    state_sum = np.full((rows, width), 0.1, dtype=dtype)
    for seed in (1, 2):
        ids = np.random.default_rng(seed).integers(0, rows, size=2000)
        out = layer(ids)
        out.backward_with_seed(np.random.default_rng(seed + 10).normal(size=out.shape))
        sparse = leaf.sparse_gradient
        assert sparse is not None and sparse.values.size >= COMPILED_KERNEL_MIN_VALUES
        expected = np.array(leaf.numpy(), copy=True)
        g, kind = sparse.values, np.dtype(dtype).type
        state_sum[sparse.rows] = state_sum[sparse.rows] + g * g
        denominator = np.sqrt(state_sum[sparse.rows]) + kind(1e-6)
        expected[sparse.rows] = expected[sparse.rows] + (kind(-0.3) * g) / denominator
        optimizer.step()
        optimizer.zero_grad()
        assert leaf.numpy().tobytes() == expected.tobytes()
        assert optimizer.state_dict()["w.sum"].tobytes() == state_sum.tobytes()


@pytest.mark.parametrize("rows", [4, 2000], ids=["numpy", "compiled"])
def test_a_step_that_would_overflow_changes_no_value_sum_or_step_count(rows: int) -> None:
    layer = Embedding.new("w", rows, 64, SplitMix64.from_seed(9))
    optimizer = Adagrad(layer.parameters(), learning_rate=1.0)
    out = layer(list(range(rows)))
    seed = np.ones(out.shape)
    seed[rows - 1, 63] = 1e200  # its square overflows the sum
    out.backward_with_seed(seed)
    before, state = layer.table.tensor.value_snapshot().numpy(), optimizer.state_dict()
    with raises_rule(NonFiniteError, "optimizer.non-finite-step") as caught:
        optimizer.step()
    assert (caught.value.state, caught.value.index) == ("sum", rows * 64 - 1)
    assert caught.value.parameter == "w" and caught.value.optimizer == "Adagrad"
    assert layer.table.tensor.numpy().tobytes() == before.tobytes()
    assert layer.table.tensor.value_revision == 0 and optimizer.step_count == 0
    after = optimizer.state_dict()
    assert all(after[key].tobytes() == state[key].tobytes() for key in state)


def test_a_step_makes_graphs_recorded_before_it_stale() -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(1))
    out = layer([1, 1])
    out.backward_with_seed(np.ones((2, 2)))
    Adagrad(layer.parameters(), learning_rate=0.1).step()
    assert layer.table.tensor.value_revision == 1
    with raises_rule(TapeError, "tape.stale-value"):
        out.backward_with_seed(np.ones((2, 2)))


def test_a_bare_leaf_with_a_dense_gradient_follows_the_formula() -> None:
    leaf = TensorValue.parameter(Tensor((3,), [1.0, -2.0, 0.5]))
    leaf.mul(Tensor((3,), [2.0, 0.0, -4.0])).sum().backward()
    optimizer = Adagrad([leaf], learning_rate=0.5, eps=0.0, initial_accumulator=1.0)
    optimizer.step()
    sums = np.array([1.0 + 4.0, 1.0, 1.0 + 16.0])
    expected = np.array([1.0, -2.0, 0.5]) + (-0.5 * np.array([2.0, 0.0, -4.0])) / np.sqrt(sums)
    assert leaf.numpy().tobytes() == expected.tobytes()
    assert optimizer.state_dict()["0.sum"].tolist() == sums.tolist()


@pytest.mark.parametrize(
    ("arguments", "rule", "name"),
    [
        ({"learning_rate": 0.0}, "optimizer.setting-value", "learning_rate"),
        ({"learning_rate": True}, "optimizer.setting-type", "learning_rate"),
        ({"learning_rate": 0.1, "eps": -1e-10}, "optimizer.setting-value", "eps"),
        ({"learning_rate": 0.1, "eps": float("nan")}, "optimizer.setting-value", "eps"),
        ({"learning_rate": 0.1, "eps": "1e-10"}, "optimizer.setting-type", "eps"),
        (
            {"learning_rate": 0.1, "initial_accumulator": float("inf")},
            "optimizer.setting-value",
            "initial_accumulator",
        ),
        (
            {"learning_rate": float("nan"), "initial_accumulator": -1},
            "optimizer.setting-value",
            "learning_rate",
        ),
    ],
)
def test_adagrad_checks_its_hyperparameters_in_signature_order(
    arguments: dict[str, Any], rule: str, name: str
) -> None:
    layer = Embedding.new("w", 2, 2, SplitMix64.from_seed(1))
    with raises_rule(OptionError, rule, optimizer="Adagrad", name=name):
        Adagrad(layer.parameters(), **arguments)


def test_adagrad_accepts_numpy_numbers() -> None:
    layer = Embedding.new("w", 2, 2, SplitMix64.from_seed(1))
    optimizer = Adagrad(
        layer.parameters(), np.float32(0.5), eps=np.float64(1e-8), initial_accumulator=np.int64(1)
    )
    assert (optimizer.learning_rate, optimizer.eps, optimizer.initial_accumulator) == (
        0.5,
        1e-8,
        1.0,
    )
