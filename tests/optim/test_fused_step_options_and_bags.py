"""``backward_step`` on layers with options and on bags: the fused step applies the same
gradient rule as backward then step (the padding row never moves, sums divided by frequency),
and a bag's deferred sums equal its stored gradient's, bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.nn import Embedding, EmbeddingBag, SplitMix64

from optim_support import FACTORIES

Layer = Embedding | EmbeddingBag
Forward = Callable[[Layer, Any, Any], TensorValue]


def lookup(layer: Layer, ids: Any, rng: Any) -> TensorValue:
    assert isinstance(layer, Embedding)
    return layer(ids)


def bags_by_offsets(layer: Layer, ids: Any, rng: Any) -> TensorValue:
    assert isinstance(layer, EmbeddingBag)
    cuts = np.sort(rng.integers(0, ids.size, size=7))
    cuts[0] = 0
    return layer(ids, cuts)


def weighted_bags(layer: Layer, ids: Any, rng: Any) -> TensorValue:
    assert isinstance(layer, EmbeddingBag)
    rows = ids.reshape(4, -1)
    return layer(
        rows, per_sample_weights=rng.standard_normal(rows.shape).astype(layer.table.tensor.dtype)
    )


Builder = Callable[[int, str], Layer]


def built(layer_type: type[Embedding] | type[EmbeddingBag], **options: Any) -> Builder:
    """A builder of a ``[rows, 64]`` layer of ``layer_type`` with ``options``, always drawn
    from the same seed."""

    def build(rows: int, dtype: str) -> Layer:
        rng = SplitMix64.from_seed(3)
        return layer_type.new("token_embedding.weight", rows, 64, rng, dtype, **options)

    return build


CASES: dict[str, tuple[Builder, Forward]] = {
    "padding_idx": (built(Embedding, padding_idx=1), lookup),
    "scale_grad_by_freq": (built(Embedding, scale_grad_by_freq=True), lookup),
    "bag sum": (built(EmbeddingBag, mode="sum"), bags_by_offsets),
    "bag mean with padding": (built(EmbeddingBag, mode="mean", padding_idx=2), bags_by_offsets),
    "bag max": (built(EmbeddingBag, mode="max"), bags_by_offsets),
    "bag sum weighted": (built(EmbeddingBag, mode="sum"), weighted_bags),
}


def trained(case: str, name: str, rows: int, dtype: str, fused: bool) -> dict[str, bytes]:
    build, forward = CASES[case]
    layer = build(rows, dtype)
    optimizer = FACTORIES[name](layer.parameters())
    rng = np.random.default_rng(5)
    for _ in range(3):
        ids = rng.integers(0, rows // 2, size=2 * rows)
        ids[::5] = 1 if case == "padding_idx" else 2  # the padding row, used often
        output = forward(layer, ids, rng)
        seed = rng.standard_normal(output.shape).astype(dtype)
        if fused:
            optimizer.backward_step(output, seed)
        else:
            output.backward_with_seed(seed)
            optimizer.step()
            optimizer.zero_grad()
    state = {key: value.tobytes() for key, value in optimizer.state_dict().items()}
    state["values"] = layer.table.tensor.numpy().tobytes()
    return state


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("rows", [10, 1200], ids=["numpy", "compiled"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", FACTORIES)
def test_a_fused_step_with_options_or_bags_equals_backward_then_step(
    name: str, case: str, rows: int, dtype: str
) -> None:
    fused = trained(case, name, rows, dtype, fused=True)
    assert fused == trained(case, name, rows, dtype, fused=False)


@pytest.mark.parametrize("rows", [10, 1200], ids=["numpy", "compiled"])
@pytest.mark.parametrize("name", FACTORIES)
def test_a_fused_step_never_moves_the_padding_row(name: str, rows: int) -> None:
    layer = Embedding.from_pretrained(
        np.arange(rows * 4, dtype=np.float64).reshape(rows, 4) + 1.0, freeze=False, padding_idx=-1
    )
    before = layer.table.tensor.numpy().copy()
    optimizer = FACTORIES[name](layer.parameters())
    ids = np.arange(2 * rows) % rows  # every row, the padding row included, twice
    optimizer.backward_step(layer(ids).sum())
    after = layer.table.tensor.numpy()
    assert after[-1].tolist() == before[-1].tolist()
    assert (after[:-1] != before[:-1]).all()
