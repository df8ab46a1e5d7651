"""``max_norm`` with a table that never changes (a frozen table, a constant) against PyTorch.

PyTorch renormalizes a frozen weight in place; here the table is a constant and is never written:
each lookup (and each bag) reads the renormalized rows from a new array instead. Every lookup
returns what PyTorch's lookup of the same IDs returns from a table not yet renormalized, in
float64 and float32 and with ``norm_type`` 1, 2 and 3.5: bit for bit for the 1-norm (both add
left to right), within the tolerance of ``test_embedding_options_against_torch.py`` otherwise
(PyTorch's 2-norm adds in SIMD lanes, and a power may differ in its last bit). The table, its
revision and every earlier output stay as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn import Embedding, EmbeddingBag, functional
from llm_from_scratch.tensor import Tensor

from conftest import import_optional

torch = import_optional("torch")

RELATIVE = {"float64": 1e-12, "float32": 1e-5}
NORM_TYPES = [1.0, 2.0, 3.5]


def assert_like_pytorch(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any], p: float) -> None:
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    if p == 1.0:
        assert ours.tobytes() == theirs.tobytes()
        return
    tolerance = RELATIVE[str(ours.dtype)]
    scale = float(np.abs(theirs).max(initial=0.0))
    np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance * scale)


def random_table(seed: int, dtype: str) -> tuple[np.random.Generator, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    rows, width = int(rng.integers(6, 30)), int(rng.integers(1, 40))
    return rng, (rng.normal(size=(rows, width)) * rng.uniform(0.3, 3.0)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm_type", NORM_TYPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_frozen_lookup_returns_pytorchs_renormalized_rows(
    dtype: str, norm_type: float, seed: int
) -> None:
    rng, values = random_table(seed, dtype)
    max_norm = float(rng.uniform(0.5, 2.0))
    layer = Embedding.from_pretrained(values, max_norm=max_norm, norm_type=norm_type)
    outputs = []
    for _ in range(4):
        ids = rng.integers(0, values.shape[0], size=(int(rng.integers(1, 4)), 7))
        ours = layer(ids)
        fresh = torch.nn.Embedding.from_pretrained(
            torch.tensor(values), max_norm=max_norm, norm_type=norm_type
        )
        theirs = fresh(torch.from_numpy(ids))
        assert ours.kind == "constant" and not theirs.requires_grad
        assert_like_pytorch(ours.numpy(), theirs.numpy(), norm_type)
        outputs.append((ours, ours.numpy().copy()))
    assert layer.table.tensor.numpy().tobytes() == values.tobytes()
    assert layer.table.tensor.value_revision == 0
    assert all(out.numpy().tobytes() == kept.tobytes() for out, kept in outputs)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm_type", NORM_TYPES)
def test_a_constant_table_gives_the_functional_lookup_pytorchs_rows(
    dtype: str, norm_type: float
) -> None:
    rng, values = random_table(7, dtype)
    table = TensorValue.constant(Tensor(values.shape, values, dtype=dtype))
    ids = rng.integers(0, values.shape[0], size=(3, 9))
    ours = functional.embedding(ids, table, max_norm=1.0, norm_type=norm_type, padding_idx=0)
    weight = torch.tensor(values)
    theirs = torch.nn.functional.embedding(
        torch.from_numpy(ids), weight, max_norm=1.0, norm_type=norm_type, padding_idx=0
    )
    assert_like_pytorch(ours.numpy(), theirs.numpy(), norm_type)
    assert table.numpy().tobytes() == values.tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm_type", NORM_TYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_a_frozen_bag_reduces_pytorchs_renormalized_rows(
    dtype: str, norm_type: float, mode: str
) -> None:
    rng, values = random_table(11, dtype)
    padding = int(rng.integers(0, values.shape[0]))
    layer = EmbeddingBag.from_pretrained(
        values, mode=mode, padding_idx=padding, max_norm=1.5, norm_type=norm_type
    )
    ids = rng.integers(0, values.shape[0], size=20)
    ids[3] = padding
    offsets = np.array([0, 0, 5, 12, 19])
    ours = layer(ids, offsets)
    theirs = torch.nn.EmbeddingBag.from_pretrained(
        torch.tensor(values), mode=mode, padding_idx=padding, max_norm=1.5, norm_type=norm_type
    )(torch.from_numpy(ids), torch.from_numpy(offsets))
    assert ours.kind == "constant"
    np.testing.assert_allclose(
        ours.numpy(), theirs.numpy(), rtol=RELATIVE[dtype], atol=RELATIVE[dtype] * 10
    )
    assert layer.table.tensor.numpy().tobytes() == values.tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_weights_on_a_frozen_bag_get_the_gradient_of_the_renormalized_rows(dtype: str) -> None:
    rng, values = random_table(13, dtype)
    layer = EmbeddingBag.from_pretrained(values, mode="sum", max_norm=1.0)
    ids = rng.integers(0, values.shape[0], size=(2, 6))
    weights = TensorValue.parameter(Tensor(ids.shape, rng.normal(size=ids.shape), dtype=dtype))
    layer(ids, per_sample_weights=weights).sum().backward()
    their_weights = torch.tensor(weights.numpy(), requires_grad=True)
    torch.nn.EmbeddingBag.from_pretrained(torch.tensor(values), mode="sum", max_norm=1.0)(
        torch.from_numpy(ids), per_sample_weights=their_weights
    ).sum().backward()
    gradient = weights.gradient_snapshot().numpy()  # type: ignore[union-attr]
    np.testing.assert_allclose(
        gradient, their_weights.grad.numpy(), rtol=RELATIVE[dtype], atol=RELATIVE[dtype] * 10
    )


def test_pytorchs_own_test_of_from_pretrained_options_passes_here() -> None:
    # TestEmbeddingNN.test_embedding_from_pretrained_options, where PyTorch's frozen weight `a`
    # changes; here `a` stays as it was and the lookup alone is renormalized.
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    embedding = Embedding.from_pretrained(a, max_norm=2.0, norm_type=0.5)
    output = embedding([0, 1]).numpy()
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(a), max_norm=2.0, norm_type=0.5)
    np.testing.assert_allclose(output, theirs(torch.tensor([0, 1])).numpy(), rtol=1e-12)
    assert (np.sum(np.sqrt(np.abs(output)), axis=1) ** 2 <= 2.0).all()
    assert a.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_pytorch_may_scale_a_frozen_row_again_where_ours_returns_the_first_result() -> None:
    # Rounding can leave a renormalized row's norm just above max_norm, and PyTorch, which wrote
    # the row, then scales it again on the next lookup; the unwritten table gives the first
    # lookup's row every time.
    values = np.array([[4.0, 4.3]], dtype=np.float32)
    ours = Embedding.from_pretrained(values, max_norm=3.0)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(values), max_norm=3.0)
    first, second = (theirs(torch.tensor([0])).numpy() for _ in range(2))
    assert first.tobytes() != second.tobytes()
    for _ in range(2):
        assert ours([0]).numpy().tobytes() == first.tobytes()
