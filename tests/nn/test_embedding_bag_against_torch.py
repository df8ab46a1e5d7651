"""Every bag mode against PyTorch's ``torch.nn.functional.embedding_bag`` on random cases:
float64 and float32, repeated IDs, empty bags, 2-D IDs and offsets (with and without the last
offset), positive and negative ``padding_idx``, per-sample weights, and ``max_norm`` with
``norm_type`` 0.5, 1, 2 and 3. The output, the table gradient, the weights' gradient and the
renormalized table equal PyTorch's within 1e-12 relative in float64 (1e-5 in float32), measured
against the largest magnitude of the compared array. They are bit for bit equal where PyTorch's
CPU kernel adds in the same order: the ``sum`` and ``mean`` outputs (a flat-order sum, then a
division by the bag size) and the ``max`` output and gradient (PyTorch's loop keeps the first
maximum and adds the gradient bag by bag). PyTorch's ``sum`` and ``mean`` backward sorts the IDs
without keeping their order, and scales by a rounded reciprocal, so only our gradient is
bit-identical to the flat-order loop (``test_embedding_bag.py`` checks that).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn import EmbeddingBag, NamedParameter, functional
from llm_from_scratch.tensor import Tensor

from conftest import import_optional

torch = import_optional("torch")

RELATIVE = {"float64": 1e-12, "float32": 1e-5}


def assert_close(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any], dtype: str) -> None:
    """Equal within the dtype's relative tolerance of the array's largest magnitude."""
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    scale = float(np.abs(theirs).max(initial=0.0))
    np.testing.assert_allclose(ours, theirs, rtol=RELATIVE[dtype], atol=RELATIVE[dtype] * scale)


def random_case(seed: int, dtype: str, two_d: bool) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    rows, width = int(rng.integers(6, 30)), int(rng.integers(1, 40))
    values = rng.normal(size=(rows, width)).astype(dtype)
    values[rows - 1] = values[0]  # two rows that tie everywhere
    if two_d:
        ids = rng.integers(0, rows, size=(int(rng.integers(1, 8)), int(rng.integers(1, 9))))
        return {"rng": rng, "values": values, "ids": ids, "offsets": None}
    ids = rng.integers(0, rows, size=int(rng.integers(0, 60)))
    cuts = np.sort(rng.integers(0, ids.size + 1, size=int(rng.integers(0, 9))))
    offsets = np.concatenate([[0], cuts, [ids.size, ids.size]]).astype(np.int64)  # empty bags
    return {"rng": rng, "values": values, "ids": ids, "offsets": offsets}


def compare(
    case: dict[str, Any],
    dtype: str,
    mode: str,
    *,
    padding_idx: int | None = None,
    weighted: bool = False,
    include_last_offset: bool = False,
    max_norm: float | None = None,
    norm_type: float = 2.0,
) -> None:
    rng, values, ids, offsets = case["rng"], case["values"], case["ids"], case["offsets"]
    if offsets is not None and not include_last_offset:
        offsets = offsets[:-1]
    weights = rng.normal(size=ids.shape).astype(dtype) if weighted else None
    table = TensorValue.parameter(Tensor(values.shape, values, dtype=dtype))
    weight_leaf = (
        TensorValue.parameter(Tensor(ids.shape, weights, dtype=dtype)) if weighted else None
    )
    options = {
        "mode": mode,
        "padding_idx": padding_idx,
        "max_norm": max_norm,
        "norm_type": norm_type,
    }
    out = functional.embedding_bag(
        ids,
        table,
        offsets,
        per_sample_weights=weight_leaf,
        include_last_offset=include_last_offset,
        **options,
    )
    upstream = rng.normal(size=out.shape).astype(dtype)
    out.backward_with_seed(upstream)

    their_table = torch.tensor(values, requires_grad=True)
    their_weights = torch.tensor(weights, requires_grad=True) if weighted else None
    theirs = torch.nn.functional.embedding_bag(
        torch.from_numpy(ids),
        their_table,
        None if offsets is None else torch.from_numpy(offsets),
        per_sample_weights=their_weights,
        include_last_offset=include_last_offset,
        **options,
    )
    theirs.backward(torch.from_numpy(upstream))
    gradient = table.gradient_snapshot().numpy()  # type: ignore[union-attr]
    assert_close(out.numpy(), theirs.detach().numpy(), dtype)
    assert_close(gradient, their_table.grad.numpy(), dtype)
    assert_close(table.numpy(), their_table.detach().numpy(), dtype)
    if weighted:
        assert_close(weight_leaf.gradient_snapshot().numpy(), their_weights.grad.numpy(), dtype)  # type: ignore[union-attr]
    if max_norm is None and not weighted:
        assert out.numpy().tobytes() == theirs.detach().numpy().tobytes()
    if mode == "max" and max_norm is None:
        assert gradient.tobytes() == their_table.grad.numpy().tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("two_d", [False, True], ids=["offsets", "2-D"])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_mode_equals_pytorchs_bag_with_and_without_padding(
    dtype: str, mode: str, two_d: bool, padding_idx: int | None, seed: int
) -> None:
    compare(random_case(seed, dtype, two_d), dtype, mode, padding_idx=padding_idx)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("seed", [3, 4])
def test_offsets_with_the_last_offset_equal_pytorchs(dtype: str, mode: str, seed: int) -> None:
    compare(random_case(seed, dtype, False), dtype, mode, include_last_offset=True, padding_idx=0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("two_d", [False, True], ids=["offsets", "2-D"])
@pytest.mark.parametrize("padding_idx", [None, -3])
@pytest.mark.parametrize("seed", [5, 6])
def test_per_sample_weights_and_their_gradient_equal_pytorchs(
    dtype: str, two_d: bool, padding_idx: int | None, seed: int
) -> None:
    compare(random_case(seed, dtype, two_d), dtype, "sum", padding_idx=padding_idx, weighted=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("norm_type", [0.5, 1.0, 2.0, 3.0])
def test_max_norm_renormalizes_the_table_as_pytorchs_bag_does(
    dtype: str, mode: str, norm_type: float
) -> None:
    case = random_case(7, dtype, False)
    case["values"] = case["values"] * 3
    compare(case, dtype, mode, max_norm=2.0, norm_type=norm_type, padding_idx=1)


def test_the_bag_layer_from_a_parameter_equals_pytorchs_module() -> None:
    values = np.random.default_rng(10).normal(size=(20, 6))
    layer = EmbeddingBag.from_parameter(
        NamedParameter.from_tensor("w", Tensor(values.shape, values)), mode="max", padding_idx=4
    )
    theirs = torch.nn.EmbeddingBag.from_pretrained(
        torch.tensor(values), freeze=False, mode="max", padding_idx=4
    )
    ids, offsets = np.array([4, 3, 19, 3, 0, 4]), np.array([0, 2, 2, 5])
    out = layer(ids, offsets)
    their_out = theirs(torch.from_numpy(ids), torch.from_numpy(offsets))
    assert out.numpy().tobytes() == their_out.detach().numpy().tobytes()
    assert out.numpy()[3].tolist() == [0.0] * 6  # a bag of padding only
