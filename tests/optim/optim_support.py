"""Shared helpers of the optimizer tests: the four optimizers by name, and training runs of ours
and of PyTorch on one stream."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW, Optimizer
from llm_from_scratch.tensor import Tensor

Steps = list[tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]]
Factory = Callable[[Any], Optimizer]


def factories(initial_accumulator: float = 0.0) -> dict[str, Factory]:
    """``sgd``, ``adagrad``, ``adam`` (with weight decay) and ``adamw``, each a function of
    the parameters; ``initial_accumulator`` starts Adagrad's sums (non-zero: a state to keep)."""
    return {
        "sgd": lambda parameters: SGD(parameters, 0.1),
        "adagrad": lambda parameters: Adagrad(
            parameters, 0.1, initial_accumulator=initial_accumulator
        ),
        "adam": lambda parameters: Adam(parameters, 0.01, weight_decay=0.1),
        "adamw": lambda parameters: AdamW(parameters, 0.01),
    }


FACTORIES = factories()


def random_steps(
    vocabulary_size: int, width: int, tokens: int, count: int, seed: int, dtype: str = "float64"
) -> Steps:
    """``count`` steps of IDs drawn from the first half of the rows (so IDs repeat and some rows
    are never touched) and normal upstream gradients."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(count):
        ids = rng.integers(0, max(vocabulary_size // 2, 1), size=tokens)
        steps.append((ids, rng.standard_normal((tokens, width)).astype(dtype)))
    return steps


def layer_of(values: npt.NDArray[np.floating[Any]]) -> Embedding:
    """An embedding ``token_embedding.weight`` holding a copy of ``values``."""
    tensor = Tensor(values.shape, values.ravel(), dtype=values.dtype)
    return Embedding.from_parameter(NamedParameter.from_tensor("token_embedding.weight", tensor))


def train(
    layer: Embedding, optimizer: Optimizer, steps: Sequence[Any], dense: bool = False
) -> None:
    """One backward and step per entry of ``steps``; ``dense`` also feeds the table to a dense
    operation with a zero seed, so its stored gradient is dense (the same values)."""
    leaf = layer.table.tensor
    zeros = Tensor.zeros(leaf.shape, dtype=leaf.dtype)
    for ids, upstream in steps:
        layer.forward(ids, (ids.size,)).backward_with_seed(upstream)
        if dense:
            leaf.mul(zeros).backward_with_seed(np.zeros(leaf.shape, dtype=leaf.dtype))
            assert leaf.sparse_gradient is None
        optimizer.step()
        optimizer.zero_grad()


def train_torch(
    torch: ModuleType,
    values: npt.NDArray[np.floating[Any]],
    make_optimizer: Callable[[list[Any]], Any],
    steps: Sequence[Any],
    sparse: bool,
) -> tuple[npt.NDArray[np.floating[Any]], dict[str, npt.NDArray[np.floating[Any]]]]:
    """PyTorch's embedding and optimizer on the same steps: final values and per-value state."""
    weight = torch.from_numpy(values.copy()).requires_grad_(True)
    optimizer = make_optimizer([weight])
    for ids, upstream in steps:
        weight.grad = None
        output = torch.nn.functional.embedding(torch.from_numpy(ids), weight, sparse=sparse)
        output.backward(torch.from_numpy(upstream))
        optimizer.step()
    state = {
        name: (tensor.to_dense() if tensor.is_sparse else tensor).detach().numpy().copy()
        for name, tensor in optimizer.state[weight].items()
        if name != "step"
    }
    return weight.detach().numpy().copy(), state


def assert_relatively_close(actual: Any, expected: Any, tolerance: float = 1e-12) -> None:
    """``|actual - expected| <= tolerance * |expected|`` element by element."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    error = np.abs(actual - expected)
    worst = float(np.max(error / np.maximum(np.abs(expected), np.finfo(np.float64).tiny)))
    assert np.all(error <= tolerance * np.abs(expected)), f"relative error {worst:.3e}"
