"""Adam and AdamW: PyTorch's dense update, SparseAdam's lazy row-sparse update, all or nothing."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.errors import NonFiniteError, OptionError, TapeError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import Adam, AdamW
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
DENSE_SETTINGS = [
    {"learning_rate": 0.01},
    {"learning_rate": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1},
    {"learning_rate": 0.01, "betas": (0.3, 0.5), "eps": 1e-12},  # lerp's other form
    {"learning_rate": 0.01, "weight_decay": 0.05, "decoupled": True},
]


def torch_adam(torch: Any, settings: dict[str, Any]) -> Any:
    kind = torch.optim.AdamW if settings.get("decoupled") else torch.optim.Adam
    return lambda weights: kind(
        weights,
        lr=settings["learning_rate"],
        betas=settings.get("betas", (0.9, 0.999)),
        eps=settings.get("eps", 1e-8),
        weight_decay=settings.get("weight_decay", 0.0),
    )


def state_of(optimizer: Adam, name: str = "token_embedding.weight") -> dict[str, Any]:
    state = optimizer.state_dict()
    return {key: state[f"{name}.{key}"] for key in ("exp_avg", "exp_avg_sq")}


@pytest.mark.parametrize("settings", DENSE_SETTINGS)
def test_dense_adam_equals_torch_adam_or_adamw_over_twenty_steps(settings: dict[str, Any]) -> None:
    torch = import_optional("torch")
    values = np.random.default_rng(7).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=8)
    layer = layer_of(values)
    optimizer = Adam(layer.parameters(), **settings)
    train(layer, optimizer, steps, dense=True)
    expected, state = train_torch(torch, values, torch_adam(torch, settings), steps, False)
    assert_relatively_close(layer.table.tensor.numpy(), expected)
    for name, array in state_of(optimizer).items():
        assert_relatively_close(array, state[name])


def test_adamw_is_adam_with_decoupled_weight_decay_and_torch_defaults() -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(1))
    optimizer = AdamW(layer.parameters(), learning_rate=1e-3)
    assert isinstance(optimizer, Adam) and optimizer.decoupled
    assert (optimizer.betas, optimizer.eps, optimizer.weight_decay) == ((0.9, 0.999), 1e-8, 0.01)
    with raises_rule(OptionError, "optimizer.setting-value") as caught:
        AdamW(layer.parameters(), learning_rate=-1.0)
    assert caught.value.optimizer == "AdamW"


@pytest.mark.parametrize(
    "settings",
    [
        {"learning_rate": 0.01},
        {"learning_rate": 0.05, "betas": (0.5, 0.9), "eps": 1e-4},
        {"learning_rate": 0.01, "betas": (0.0, 0.0), "eps": 1e-3},
    ],
)
def test_row_sparse_adam_equals_torch_sparse_adam_over_twenty_steps(
    settings: dict[str, Any],
) -> None:
    torch = import_optional("torch")
    values = np.random.default_rng(7).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=8)
    layer = layer_of(values)
    optimizer = Adam(layer.parameters(), **settings)
    train(layer, optimizer, steps)

    def sparse_adam(weights: list[Any]) -> Any:
        return torch.optim.SparseAdam(
            weights,
            lr=settings["learning_rate"],
            betas=settings.get("betas", (0.9, 0.999)),
            eps=settings.get("eps", 1e-8),
        )

    expected, state = train_torch(torch, values, sparse_adam, steps, True)
    assert_relatively_close(layer.table.tensor.numpy(), expected)
    for name, array in state_of(optimizer).items():
        assert_relatively_close(array, state[name])


@pytest.mark.parametrize("decoupled", [False, True], ids=["adam", "adamw"])
def test_lazy_weight_decay_is_sparse_adam_on_the_decayed_touched_rows(decoupled: bool) -> None:
    torch = import_optional("torch")
    values = np.random.default_rng(5).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=6)
    rate, decay = 0.01, 0.2
    layer = layer_of(values)
    optimizer = Adam(layer.parameters(), rate, weight_decay=decay, decoupled=decoupled)
    train(layer, optimizer, steps)

    weight = torch.from_numpy(values.copy()).requires_grad_(True)
    reference = torch.optim.SparseAdam([weight], lr=rate)
    for ids, upstream in steps:
        weight.grad = None
        torch.nn.functional.embedding(torch.from_numpy(ids), weight, sparse=True).backward(
            torch.from_numpy(upstream)
        )
        gradient = weight.grad.coalesce()
        rows = gradient.indices()[0]
        with torch.no_grad():
            if decoupled:  # the touched rows shrink first
                weight[rows] = weight[rows] * (1 - rate * decay)
                weight.grad = gradient
            else:  # the touched rows' gradients add the decay term
                grown = gradient.values() + decay * weight[rows]
                weight.grad = torch.sparse_coo_tensor(gradient.indices(), grown, weight.shape)
        reference.step()
    assert_relatively_close(layer.table.tensor.numpy(), weight.detach().numpy())


def test_rows_outside_the_gradient_keep_their_values_and_moments_bit_for_bit() -> None:
    values = np.random.default_rng(1).standard_normal((ROWS, WIDTH))
    layer = layer_of(values)
    optimizer = Adam(layer.parameters(), learning_rate=0.1, weight_decay=0.3)
    train(layer, optimizer, random_steps(ROWS, WIDTH, TOKENS, 3, seed=2))
    before, state = layer.table.tensor.value_snapshot().numpy(), state_of(optimizer)
    layer([0, 3, 3]).backward_with_seed(np.ones((3, WIDTH)))
    optimizer.step()
    after, new_state = layer.table.tensor.numpy(), state_of(optimizer)
    others = [row for row in range(ROWS) if row not in (0, 3)]
    assert after[others].tobytes() == before[others].tobytes()
    for name in state:
        assert new_state[name][others].tobytes() == state[name][others].tobytes()
    assert (after[[0, 3]] != before[[0, 3]]).all()


def lazy_reference(
    values: Any, m: Any, v: Any, g: Any, step: int, rate: float, betas: tuple[float, float]
) -> tuple[Any, Any, Any]:
    """SparseAdam's update of the given rows, term by term, in the values' dtype."""
    kind = values.dtype.type
    m_update = (g - m) * kind(1 - betas[0])
    v_update = (g * g - v) * kind(1 - betas[1])
    step_size = rate * math.sqrt(1 - betas[1] ** step) / (1 - betas[0] ** step)
    denominator = np.sqrt(v_update + v) + kind(1e-8)
    new_values = values + kind(-step_size) * ((m_update + m) / denominator)
    return new_values, m + m_update, v + v_update


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_compiled_step_rounds_like_the_formula(dtype: str) -> None:
    rows, width, betas = 3000, 64, (0.8, 0.95)
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(9), dtype)
    optimizer = Adam(layer.parameters(), learning_rate=0.3, betas=betas)
    leaf = layer.table.tensor
    m, v = np.zeros((rows, width), dtype), np.zeros((rows, width), dtype)
    for step in (1, 2, 3):
        ids = np.random.default_rng(step).integers(0, rows, size=2000)
        out = layer(ids)
        out.backward_with_seed(np.random.default_rng(step + 10).normal(size=out.shape))
        sparse = leaf.sparse_gradient
        assert sparse is not None and sparse.values.size >= COMPILED_KERNEL_MIN_VALUES
        expected, touched = np.array(leaf.numpy(), copy=True), sparse.rows
        expected[touched], m[touched], v[touched] = lazy_reference(
            expected[touched], m[touched], v[touched], sparse.values, step, 0.3, betas
        )
        optimizer.step()
        optimizer.zero_grad()
        assert leaf.numpy().tobytes() == expected.tobytes()
        state = state_of(optimizer, "w")
        assert state["exp_avg"].tobytes() == m.tobytes()
        assert state["exp_avg_sq"].tobytes() == v.tobytes()


@pytest.mark.parametrize("rows", [4, 2000], ids=["numpy", "compiled"])
@pytest.mark.parametrize(("big_value", "state"), [(1.0, "exp_avg_sq"), (1e308, "value")])
def test_a_step_that_would_overflow_changes_no_value_moment_or_step_count(
    rows: int, big_value: float, state: str
) -> None:
    values = np.random.default_rng(3).standard_normal((rows, 64))
    values[0, 5] = big_value
    layer = layer_of(values)
    optimizer = Adam(layer.parameters(), learning_rate=1e308 if big_value > 1 else 1.0)
    out = layer(list(range(rows)))
    seed = np.ones(out.shape)
    seed[0, 5] = -1e200 if big_value == 1 else -1.0  # g * g overflows, or value + 1e308 does
    out.backward_with_seed(seed)
    before, saved = layer.table.tensor.value_snapshot().numpy(), optimizer.state_dict()
    with raises_rule(NonFiniteError, "optimizer.non-finite-step") as caught:
        optimizer.step()
    assert (caught.value.state, caught.value.index, caught.value.optimizer) == (state, 5, "Adam")
    assert layer.table.tensor.numpy().tobytes() == before.tobytes()
    assert layer.table.tensor.value_revision == 0 and optimizer.step_count == 0
    after = optimizer.state_dict()
    assert all(after[key].tobytes() == saved[key].tobytes() for key in saved)


def test_zero_eps_and_a_zero_gradient_over_zero_moments_is_refused() -> None:
    leaf = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
    leaf.mul(Tensor((2,), [1.0, 0.0])).sum().backward()
    optimizer = Adam([leaf], learning_rate=0.1, eps=0.0)
    with raises_rule(NonFiniteError, "optimizer.non-finite-step") as caught:
        optimizer.step()  # 0 / (sqrt(0) / 1 + 0) is NaN
    assert (caught.value.parameter, caught.value.state, caught.value.index) == ("0", "value", 1)
    assert leaf.numpy().tolist() == [1.0, 2.0] and optimizer.step_count == 0


@pytest.mark.parametrize("decoupled", [False, True])
def test_a_step_makes_graphs_recorded_before_it_stale(decoupled: bool) -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(1))
    out = layer([1, 1])
    out.backward_with_seed(np.ones((2, 2)))
    Adam(layer.parameters(), learning_rate=0.1, decoupled=decoupled).step()
    assert layer.table.tensor.value_revision == 1
    with raises_rule(TapeError, "tape.stale-value"):
        out.backward_with_seed(np.ones((2, 2)))


@pytest.mark.parametrize(
    ("arguments", "rule", "name"),
    [
        ({"learning_rate": 0.0}, "optimizer.setting-value", "learning_rate"),
        ({"learning_rate": np.True_}, "optimizer.setting-type", "learning_rate"),
        ({"learning_rate": 0.1, "betas": 0.9}, "optimizer.setting-type", "betas"),
        ({"learning_rate": 0.1, "betas": (0.9, 0.99, 0.9)}, "optimizer.setting-type", "betas"),
        ({"learning_rate": 0.1, "betas": (1.0, 0.999)}, "optimizer.setting-value", "betas[0]"),
        ({"learning_rate": 0.1, "betas": (0.9, -0.1)}, "optimizer.setting-value", "betas[1]"),
        ({"learning_rate": 0.1, "betas": (0.9, "a")}, "optimizer.setting-type", "betas[1]"),
        (
            {"learning_rate": 0.1, "betas": (float("nan"), 0.9)},
            "optimizer.setting-value",
            "betas[0]",
        ),
        ({"learning_rate": 0.1, "eps": -1.0}, "optimizer.setting-value", "eps"),
        ({"learning_rate": 0.1, "eps": float("inf")}, "optimizer.setting-value", "eps"),
        ({"learning_rate": 0.1, "weight_decay": -0.1}, "optimizer.setting-value", "weight_decay"),
        ({"learning_rate": 0.1, "weight_decay": None}, "optimizer.setting-type", "weight_decay"),
        ({"learning_rate": 0.1, "decoupled": 1}, "optimizer.setting-type", "decoupled"),
        ({"learning_rate": 0.0, "eps": -1.0}, "optimizer.setting-value", "learning_rate"),
        (
            {"learning_rate": 0.1, "betas": (2, 2), "eps": -1.0},
            "optimizer.setting-value",
            "betas[0]",
        ),
    ],
)
def test_adam_checks_its_hyperparameters_in_signature_order(
    arguments: dict[str, Any], rule: str, name: str
) -> None:
    layer = Embedding.new("w", 2, 2, SplitMix64.from_seed(1))
    with raises_rule(OptionError, rule, optimizer="Adam", name=name):
        Adam(layer.parameters(), **arguments)


def test_adam_accepts_numpy_numbers_and_lists_of_betas() -> None:
    layer = Embedding.new("w", 2, 2, SplitMix64.from_seed(1))
    optimizer = Adam(
        layer.parameters(),
        np.float32(0.5),
        betas=[np.float64(0.5), np.float32(0.25)],  # type: ignore[arg-type]
        eps=np.int64(0),
        weight_decay=np.float16(0.5),
        decoupled=np.bool_(True),
    )
    assert optimizer.betas == (0.5, 0.25) and optimizer.decoupled is True
    assert (optimizer.learning_rate, optimizer.eps, optimizer.weight_decay) == (0.5, 0.0, 0.5)
