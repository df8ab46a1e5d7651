"""Shared helpers of the optimizer state-file tests: a small model (a table and a bias), its
training steps in four ways (stored row-sparse or dense gradients, each stepped or fused into
the backward), and snapshots of everything a step or a load may change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import Optimizer
from llm_from_scratch.tensor import Tensor

from optim_support import factories, layer_of, random_steps

FACTORIES = factories(initial_accumulator=0.1)
KINDS = {"sgd": "SGD", "adagrad": "Adagrad", "adam": "Adam", "adamw": "AdamW"}

MODES = ("row_sparse", "dense", "fused_row_sparse", "fused_dense")
"""How a step runs: backward, ``step()`` and ``zero_grad()``, or ``backward_step``; with the
table reached only through its lookup (a row-sparse gradient, fused into the backward by
``backward_step``), or also through a dense operation (a dense gradient)."""

SIZES = {"numpy": (30, 4, 20), "compiled": (1200, 64, 2400)}
"""Rows, width and tokens per step: the second is large enough for the compiled row kernels."""

BIAS_WEIGHTS = (0.5, -1.0, 2.0)

Steps = list[tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]]


@dataclass(frozen=True)
class Model:
    """A token table ``token_embedding.weight`` and a bias leaf (which an optimizer names
    ``1``, its position)."""

    layer: Embedding
    bias: TensorValue

    @classmethod
    def of(cls, table: npt.NDArray[np.floating[Any]], bias: Sequence[float]) -> Model:
        values = np.array(bias, dtype=table.dtype)
        return cls(layer_of(table), TensorValue.parameter(Tensor.from_numpy(values)))

    def parameters(self) -> list[NamedParameter | TensorValue]:
        """What the optimizer steps: the named table, then the bare bias leaf."""
        return [*self.layer.parameters(), self.bias]

    def named_parameters(self) -> list[NamedParameter]:
        """What a parameter file holds."""
        return [*self.layer.parameters(), NamedParameter.from_value("output.bias", self.bias)]


def new_model(size: str, dtype: str, seed: int = 7) -> Model:
    rows, width, _ = SIZES[size]
    rng = np.random.default_rng(seed)
    return Model.of(rng.standard_normal((rows, width)).astype(dtype), (0.25, -0.5, 1.0))


def steps_for(size: str, dtype: str, count: int, seed: int = 8) -> Steps:
    rows, width, tokens = SIZES[size]
    return random_steps(rows, width, tokens, count, seed, dtype)


def loss(model: Model, ids: Any, weights: Any, dense: bool) -> TensorValue:
    """``sum(rows * weights) + sum(bias * BIAS_WEIGHTS)``, plus ``sum(table * 0)`` when
    ``dense`` (the same gradient values, stored dense)."""
    rows = model.layer.forward(ids, (ids.size,))
    dtype = weights.dtype
    bias_weights = Tensor.from_numpy(np.array(BIAS_WEIGHTS, dtype=dtype))
    total = rows.mul(Tensor.from_numpy(weights)).sum().add(model.bias.mul(bias_weights).sum())
    if dense:
        table = model.layer.table.tensor
        total = total.add(table.mul(Tensor.zeros(table.shape, dtype=dtype)).sum())
    return total


def train(model: Model, optimizer: Optimizer, steps: Steps, mode: str) -> None:
    for ids, weights in steps:
        output = loss(model, ids, weights, dense=mode.endswith("dense"))
        if mode.startswith("fused"):
            optimizer.backward_step(output)
        else:
            output.backward()
            optimizer.step()
            optimizer.zero_grad()


def state_bytes(optimizer: Optimizer) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """The optimizer's state dict: each array's dtype, shape and bytes."""
    return {
        key: (str(array.dtype), array.shape, array.tobytes())
        for key, array in optimizer.state_dict().items()
    }


def snapshot(model: Model, optimizer: Optimizer) -> dict[str, object]:
    """Everything a step or a load may change: values, revisions, gradients, state."""
    taken: dict[str, object] = {"state": state_bytes(optimizer), "steps": optimizer.step_count}
    for name, leaf in (("table", model.layer.table.tensor), ("bias", model.bias)):
        gradient = leaf.gradient_snapshot()
        taken[f"{name} values"] = leaf.numpy().tobytes()
        taken[f"{name} revision"] = leaf.value_revision
        taken[f"{name} gradient"] = None if gradient is None else gradient.numpy().tobytes()
    return taken
