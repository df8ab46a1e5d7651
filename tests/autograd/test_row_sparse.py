"""Row-sparse table gradients: views, merges, the dense fallback and the SGD step."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import RowSparseGradient, TensorValue
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD, OptimizerError
from llm_from_scratch.tensor import Tensor

from conftest import plain_scatter

ROWS, WIDTH = 6, 3


@st.composite
def passes(draw: st.DrawFn) -> tuple[str, list[tuple[tuple[int, ...], list[int], int]]]:
    dtype = draw(st.sampled_from(["float64", "float32"]))
    count = draw(st.integers(1, 3))
    drawn = []
    for _ in range(count):
        shape = draw(st.sampled_from([(), (0,), (4,), (2, 3), (1, 5)]))
        size = int(np.prod(shape)) if shape else 1
        ids = draw(st.lists(st.integers(0, ROWS - 1), min_size=size, max_size=size))
        drawn.append((shape, ids, draw(st.integers(0, 2**32 - 1))))
    return dtype, drawn


@given(passes())
def test_sparse_and_dense_views_agree_with_the_loop_over_several_passes(
    case: tuple[str, list[tuple[tuple[int, ...], list[int], int]]],
) -> None:
    dtype, drawn = case
    layer = Embedding.new("token_embedding.weight", ROWS, WIDTH, SplitMix64.from_seed(1), dtype)
    expected = np.zeros((ROWS, WIDTH), dtype=dtype)
    for shape, ids, seed in drawn:
        upstream = np.random.default_rng(seed).normal(size=(*shape, WIDTH)).astype(dtype)
        layer.forward(ids, shape).backward_with_seed(upstream)
        expected = expected + plain_scatter(ids, upstream, ROWS, WIDTH)
    leaf = layer.table.tensor
    sparse = leaf.sparse_gradient
    assert sparse is not None
    touched = sorted({i for _, ids, _ in drawn for i in ids})
    assert sparse.rows.tolist() == touched
    assert sparse.values.tobytes() == expected[touched].tobytes()
    assert leaf.gradient.numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]


def test_untouched_rows_are_absent_and_exactly_zero_in_the_dense_view() -> None:
    layer = Embedding.new("w", 5, 2, SplitMix64.from_seed(3))
    layer([4, 1, 4]).backward_with_seed(np.ones((3, 2)))
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.rows.tolist() == [1, 4]
    dense = layer.table.tensor.gradient.numpy()  # type: ignore[union-attr]
    assert dense[[0, 2, 3]].tobytes() == np.zeros((3, 2)).tobytes()


def test_a_large_table_never_allocates_a_dense_gradient_on_backward_or_step() -> None:
    layer = Embedding.new("w", 40_000, 64, SplitMix64.from_seed(5))  # a 20 MiB table
    optimizer = SGD(layer.parameters(), learning_rate=0.1)
    out = layer([7, 39_999, 7, 12])
    tracemalloc.start()
    try:
        out.backward_with_seed(np.ones((4, 64)))
        optimizer.step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_sgd_updates_only_the_touched_rows_bit_for_bit() -> None:
    layer = Embedding.new("w", 6, 2, SplitMix64.from_seed(8), dtype=np.float32)
    before = layer.table.tensor.value_snapshot().numpy()
    upstream = np.array([[1.0, -2.0], [0.5, 0.25], [3.0, 4.0]], dtype=np.float32)
    layer([2, 5, 2]).backward_with_seed(upstream)
    SGD(layer.parameters(), learning_rate=0.5).step()
    after = layer.table.tensor.numpy()
    gradient = plain_scatter([2, 5, 2], upstream, 6, 2)
    expected = before.copy()
    expected[[2, 5]] = before[[2, 5]] - np.float32(0.5) * gradient[[2, 5]]
    assert after.tobytes() == expected.tobytes()
    assert after[[0, 1, 3, 4]].tobytes() == before[[0, 1, 3, 4]].tobytes()
    assert layer.table.tensor.value_revision == 1


def test_sgd_zero_grad_resets_the_row_sparse_store() -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(8))
    optimizer = SGD(layer.parameters(), learning_rate=0.1)
    layer([1]).backward_with_seed(np.ones((1, 2)))
    optimizer.zero_grad()
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.rows.size == 0


def test_a_step_that_would_overflow_changes_nothing() -> None:
    leaf = TensorValue.parameter(Tensor((2, 1), [1e308, 0.0]))
    leaf.gather_rows([0], (1,)).backward_with_seed(np.array([[-1e308]]))
    with pytest.raises(OptimizerError):
        SGD([leaf], learning_rate=10.0).step()
    assert leaf.numpy().tolist() == [[1e308], [0.0]] and leaf.value_revision == 0


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf")])
def test_sgd_needs_a_finite_positive_learning_rate(rate: float) -> None:
    layer = Embedding.new("w", 2, 2, SplitMix64.from_seed(1))
    with pytest.raises(OptimizerError):
        SGD(layer.parameters(), learning_rate=rate)


def test_a_table_that_also_feeds_a_dense_operation_falls_back_to_dense() -> None:
    table = TensorValue.parameter(Tensor((3, 2), [1, 2, 3, 4, 5, 6]))
    weights = Tensor((3, 2), [0.5, 0.5, 1.0, 1.0, 2.0, 2.0])
    loss = table.gather_rows([2, 2], (2,)).sum().add(table.mul(weights).sum())
    loss.backward()
    assert table.sparse_gradient is None
    assert table.gradient.numpy().tolist() == [[0.5, 0.5], [1.0, 1.0], [4.0, 4.0]]  # type: ignore[union-attr]
    table.gather_rows([0], (1,)).sum().backward()  # sparse onto dense stays dense
    assert table.gradient.numpy().tolist() == [[1.5, 1.5], [1.0, 1.0], [4.0, 4.0]]  # type: ignore[union-attr]


def test_a_seed_of_another_float_dtype_is_converted_to_the_table_dtype() -> None:
    layer = Embedding.new("w", 3, 2, SplitMix64.from_seed(2), dtype=np.float32)
    out = layer([1, 1])
    out.backward_with_seed(np.full((2, 2), 0.1, dtype=np.float64))
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.values.dtype == np.float32
    assert sparse.values.tolist() == [[np.float32(0.1) + np.float32(0.1)] * 2]
    assert layer.table.tensor.dtype == np.float32


def test_row_sparse_values_are_read_only() -> None:
    layer = Embedding.new("w", 3, 2, SplitMix64.from_seed(2))
    layer([0]).backward_with_seed(np.ones((1, 2)))
    sparse = layer.table.tensor.sparse_gradient
    assert isinstance(sparse, RowSparseGradient)
    with pytest.raises(ValueError):
        sparse.values[0, 0] = 5.0
    with pytest.raises(ValueError):
        sparse.rows[0] = 2


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_compiled_sgd_step_rounds_like_the_numpy_expression(dtype: str) -> None:
    rows, width = 3000, 64
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(9), dtype)
    ids = np.random.default_rng(1).integers(0, rows, size=2000).tolist()
    out = layer(ids)
    upstream = np.random.default_rng(2).normal(size=out.shape).astype(dtype)
    out.backward_with_seed(upstream)
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.values.size >= COMPILED_KERNEL_MIN_VALUES
    before = layer.table.tensor.value_snapshot().numpy()
    SGD(layer.parameters(), learning_rate=0.3).step()
    rate = np.dtype(dtype).type(0.3)
    expected = before.copy()
    expected[sparse.rows] = before[sparse.rows] - rate * sparse.values
    assert layer.table.tensor.numpy().tobytes() == expected.tobytes()


def test_a_large_compiled_step_that_would_overflow_changes_nothing() -> None:
    layer = Embedding.new("w", 2000, 64, SplitMix64.from_seed(9))
    out = layer(list(range(2000)))
    seed = np.ones(out.shape)
    seed[1999, 63] = -1e308
    out.backward_with_seed(seed)
    before = layer.table.tensor.value_snapshot().numpy()
    with pytest.raises(OptimizerError):
        SGD(layer.parameters(), learning_rate=10.0).step()
    assert layer.table.tensor.numpy().tobytes() == before.tobytes()
    assert layer.table.tensor.value_revision == 0
