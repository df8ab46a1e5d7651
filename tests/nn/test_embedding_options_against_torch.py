"""Every lookup option against PyTorch's ``torch.nn.functional.embedding`` on random cases:
float64 and float32, repeated IDs, negative ``padding_idx``, ``max_norm`` with ``norm_type`` 0.5,
1, 2 and 3, and ``scale_grad_by_freq``. The output, the table gradient and the renormalized table
equal PyTorch's within 1e-12 relative in float64 (1e-5 in float32), measured against the largest
magnitude of the compared array; they are bit for bit equal where PyTorch's CPU kernel adds in
the same order: the lookup itself, the gradient without ``scale_grad_by_freq`` (PyTorch adds the
upstream rows in flat order, as we do), and a 1-norm renormalization (both add left to right).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import TableError
from llm_from_scratch.nn import Embedding, NamedParameter, functional
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import import_optional

torch = import_optional("torch")

RELATIVE = {"float64": 1e-12, "float32": 1e-5}
OPTIONS: list[dict[str, Any]] = [
    {},
    {"padding_idx": 3},
    {"padding_idx": -1},
    {"scale_grad_by_freq": True},
    {"padding_idx": -7, "scale_grad_by_freq": True},
    {"max_norm": 1.0, "norm_type": 0.5},
    {"max_norm": 1.0, "norm_type": 1.0},
    {"max_norm": 1.5, "norm_type": 2.0},
    {"max_norm": 0.7, "norm_type": 3.0},
    {"max_norm": 2.0, "padding_idx": -2, "scale_grad_by_freq": True},
]


def assert_close(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any], dtype: str) -> None:
    """Equal within the dtype's relative tolerance of the array's largest magnitude."""
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    scale = float(np.abs(theirs).max(initial=0.0))
    np.testing.assert_allclose(ours, theirs, rtol=RELATIVE[dtype], atol=RELATIVE[dtype] * scale)


def torch_lookup(
    values: np.ndarray[Any, Any], ids: np.ndarray[Any, Any], upstream: Any, options: dict[str, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """PyTorch's output, table gradient and table after the call."""
    weight = torch.tensor(values, requires_grad=True)
    out = torch.nn.functional.embedding(torch.from_numpy(ids), weight, **options)
    out.backward(torch.from_numpy(upstream))
    return out.detach().numpy(), weight.grad.numpy(), weight.detach().numpy()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda options: repr(options))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_lookup_its_gradient_and_the_table_equal_pytorchs(
    dtype: str, options: dict[str, Any], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    rows, width = int(rng.integers(8, 40)), int(rng.integers(1, 70))
    values = (rng.normal(size=(rows, width)) * rng.uniform(0.2, 2.0)).astype(dtype)
    ids = rng.integers(0, rows, size=(int(rng.integers(1, 6)), int(rng.integers(1, 30))))
    ids[0, 0] = ids[-1, -1] = rows - 1  # a repeat of the last row (-1 as padding_idx)
    table = TensorValue.parameter(Tensor(values.shape, values, dtype=dtype))
    out = functional.embedding(ids, table, **options)
    upstream = rng.normal(size=out.shape).astype(dtype)
    out.backward_with_seed(upstream)
    theirs, their_gradient, their_table = torch_lookup(values, ids, upstream, options)
    gradient = table.gradient_snapshot().numpy()  # type: ignore[union-attr]
    for ours, reference in (
        (out.numpy(), theirs),
        (gradient, their_gradient),
        (table.numpy(), their_table),
    ):
        assert_close(ours, reference, dtype)
    if "max_norm" not in options or options.get("norm_type") == 1.0:
        assert out.numpy().tobytes() == theirs.tobytes()
        assert table.numpy().tobytes() == their_table.tobytes()
    if not options.get("scale_grad_by_freq"):
        assert gradient.tobytes() == their_gradient.tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_padded_layer_trains_like_pytorchs_over_several_sgd_steps(dtype: str) -> None:
    rng = np.random.default_rng(9)
    values = rng.normal(size=(12, 6)).astype(dtype)
    layer = Embedding.from_pretrained(values, freeze=False, padding_idx=-3)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(values), freeze=False, padding_idx=-3)
    optimizer, their_optimizer = (
        SGD(layer.parameters(), 0.1),
        torch.optim.SGD(theirs.parameters(), 0.1),
    )
    for _ in range(4):
        ids = rng.integers(0, 12, size=(3, 5))
        upstream = rng.normal(size=(3, 5, 6)).astype(dtype)
        layer(ids).backward_with_seed(upstream)
        theirs(torch.from_numpy(ids)).backward(torch.from_numpy(upstream))
        optimizer.step()
        their_optimizer.step()
        optimizer.zero_grad()
        their_optimizer.zero_grad()
    # PyTorch's step fuses the multiply and the add, so the two differ in the last bit at most.
    assert_close(layer.table.tensor.numpy(), theirs.weight.detach().numpy(), dtype)
    assert layer.table.tensor.numpy()[9].tobytes() == values[9].tobytes()  # the padding row


def test_a_new_padded_layer_has_a_zero_padding_row_as_pytorchs_does() -> None:
    from llm_from_scratch.nn import SplitMix64

    layer = Embedding.new("w", 6, 4, SplitMix64.from_seed(2), padding_idx=-6)
    theirs = torch.nn.Embedding(6, 4, padding_idx=-6)
    assert layer.padding_idx == theirs.padding_idx == 0
    assert layer.table.tensor.numpy()[0].tolist() == theirs.weight[0].tolist() == [0.0] * 4


def test_scale_grad_by_freq_counts_padding_ids_only_for_the_padding_row_itself() -> None:
    # PyTorch counts every ID, padding included; only the padding row's own count holds them,
    # and that row receives no gradient, so the other rows' gradients do not depend on them.
    values = np.arange(12.0).reshape(6, 2)
    ids = np.array([[0, 0, 1, 0, 5, 5]])
    upstream = np.ones((1, 6, 2))
    table = TensorValue.parameter(Tensor(values.shape, values))
    functional.embedding(ids, table, padding_idx=0, scale_grad_by_freq=True).backward_with_seed(
        upstream
    )
    _, theirs, _ = torch_lookup(
        values, ids, upstream, {"padding_idx": 0, "scale_grad_by_freq": True}
    )
    assert table.gradient_snapshot().tolist() == theirs.tolist()  # type: ignore[union-attr]
    assert theirs.tolist() == [[0, 0], [1, 1], [0, 0], [0, 0], [0, 0], [1, 1]]


def test_from_pretrained_looks_up_like_pytorchs_frozen_from_pretrained() -> None:
    values = np.random.default_rng(3).normal(size=(10, 5)).astype(np.float32)
    ids = np.array([[9, 0, 9], [4, 4, 1]])
    ours = Embedding.from_pretrained(values, padding_idx=4)(ids)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(values), padding_idx=4)(
        torch.from_numpy(ids)
    )
    assert not theirs.requires_grad and ours.kind == "constant"
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()


def test_from_parameter_with_max_norm_renormalizes_like_pytorchs_module() -> None:
    values = np.random.default_rng(4).normal(size=(10, 8)) * 2
    layer = Embedding.from_parameter(
        NamedParameter.from_tensor("w", Tensor(values.shape, values)), max_norm=1.0, norm_type=1.0
    )
    theirs = torch.nn.Embedding.from_pretrained(
        torch.tensor(values), freeze=False, max_norm=1.0, norm_type=1.0
    )
    ids = np.array([3, 7, 3, 0])
    assert layer(ids).numpy().tobytes() == theirs(torch.from_numpy(ids)).detach().numpy().tobytes()
    assert layer.table.tensor.numpy().tobytes() == theirs.weight.detach().numpy().tobytes()


def test_a_torch_tensor_is_named_as_such_when_refused_as_a_table() -> None:
    with raises_rule(TableError, "table.pretrained-type") as pretrained:
        Embedding.from_pretrained(torch.zeros(2, 2))
    assert pretrained.value.table_type == "torch.Tensor"
    with raises_rule(TableError, "table.type") as functional_table:
        functional.embedding([0], torch.zeros(2, 2))
    assert functional_table.value.table_type == "torch.Tensor"
