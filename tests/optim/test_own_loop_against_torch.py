"""The training loop a PyTorch user writes (a 1000x64 float32 table, [32, 16] IDs, a scalar
loss, SGD or SparseAdam for 100 steps, save, reload), written with this package and with
``torch`` from the same table and the same batches: the same loss and gradient bit for bit at
the first step, and the same table after 100 steps up to float32 rounding (PyTorch's steps
fuse a multiply and an add, ours round each)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.nn import Embedding, load_parameters, save_parameters
from llm_from_scratch.optim import SGD, Optimizer, SparseAdam

from conftest import import_optional

torch = import_optional("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

NAME = "token_embedding.weight"
STEPS = 100
rng = np.random.default_rng(27)
TABLE = rng.standard_normal((1000, 64), dtype=np.float32)
WEIGHTS = rng.standard_normal((32, 16, 64), dtype=np.float32)
BATCHES = [rng.integers(0, 1000, size=(32, 16)) for _ in range(STEPS)]

OPTIMIZERS: dict[str, tuple[Callable[[Any], Optimizer], Callable[[Any], Any]]] = {
    "SGD": (lambda p: SGD(p, learning_rate=0.5), lambda p: torch.optim.SGD(p, lr=0.5)),
    "SparseAdam": (
        lambda p: SparseAdam(p, learning_rate=1e-2),
        lambda p: torch.optim.SparseAdam(p, lr=1e-2),
    ),
}


def our_layer() -> Embedding:
    layer = Embedding(1000, 64)  # as nn.Embedding(1000, 64); then the shared table
    layer.load_state_dict({NAME: TABLE})
    return layer


def their_layer(sparse: bool = True) -> Any:
    weight = torch.from_numpy(TABLE.copy())
    return torch.nn.Embedding.from_pretrained(weight, freeze=False, sparse=sparse)


def our_loss(layer: Embedding, ids: np.ndarray[Any, Any]) -> Any:
    return (layer(ids) * WEIGHTS).sum() * (1 / ids.size)


def their_loss(layer: Any, ids: np.ndarray[Any, Any]) -> Any:
    return (layer(torch.from_numpy(ids)) * torch.from_numpy(WEIGHTS)).sum() * (1 / ids.size)


def our_steps(layer: Embedding, optimizer: Optimizer, batches: list[Any]) -> list[float]:
    losses = []
    for ids in batches:
        loss = our_loss(layer, ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss))
    return losses


def their_steps(layer: Any, optimizer: Any, batches: list[Any]) -> list[float]:
    losses = []
    for ids in batches:
        loss = their_loss(layer, ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_the_first_loss_and_table_gradient_equal_pytorchs_bit_for_bit() -> None:
    ours, theirs = our_layer(), their_layer(sparse=False)
    loss, their = our_loss(ours, BATCHES[0]), their_loss(theirs, BATCHES[0])
    loss.backward()
    their.backward()
    assert loss.item() == pytest.approx(their.item(), rel=1e-6)  # NumPy sums in another order
    gradient = ours.table.tensor.gradient.numpy()  # type: ignore[union-attr]
    assert gradient.tobytes() == theirs.weight.grad.numpy().tobytes()


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_a_hundred_steps_give_pytorchs_table_and_losses(name: str) -> None:
    ours_for, theirs_for = OPTIMIZERS[name]
    ours, theirs = our_layer(), their_layer()
    our_losses = our_steps(ours, ours_for(ours.parameters()), BATCHES)
    their_losses = their_steps(theirs, theirs_for(theirs.parameters()), BATCHES)
    # float32 losses: a loss near zero keeps float32's absolute rounding, not its relative one
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-5, atol=1e-6)
    table = ours.table.tensor.numpy()
    np.testing.assert_allclose(table, theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(table, TABLE, rtol=1e-3)  # the steps did move the table


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_a_run_saved_and_reloaded_continues_as_one_that_never_stopped(
    name: str, tmp_path: Path
) -> None:
    ours_for, _ = OPTIMIZERS[name]
    straight = our_layer()
    straight_optimizer = ours_for(straight.parameters())
    our_steps(straight, straight_optimizer, BATCHES)

    first = our_layer()
    first_optimizer = ours_for(first.parameters())
    our_steps(first, first_optimizer, BATCHES[:60])
    save_parameters(tmp_path / "model.safetensors", first.parameters())
    state = first_optimizer.state_dict()

    resumed = Embedding(1000, 64, rng=1)
    load_parameters(tmp_path / "model.safetensors", into=resumed.parameters())
    resumed_optimizer = ours_for(resumed.parameters())
    resumed_optimizer.load_state_dict(state)
    our_steps(resumed, resumed_optimizer, BATCHES[60:])
    assert resumed.table.tensor.value.equals(straight.table.tensor.value)

    from safetensors.torch import load_file  # needs torch

    their = their_layer()  # PyTorch reads the saved file and the state dict as its own
    saved = load_file(str(tmp_path / "model.safetensors"))
    their.load_state_dict({"weight": saved[NAME]})
    np.testing.assert_array_equal(their.weight.detach().numpy(), first.state_dict()[NAME])
