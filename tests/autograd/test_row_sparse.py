"""Row-sparse table gradients: the lookup's VJP stores only the touched rows, the dense view
fills the rest with zeros, both scatter strategies and the compiled kernels equal the plain
loop bit for bit, and a table that also feeds a dense operation falls back to dense."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llm_from_scratch.autograd.gradient as gradient_module
from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.autograd.gradient import scatter_sums
from llm_from_scratch.autograd.kernels import scatter_rows
from llm_from_scratch.errors import AllocationError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import failing_numpy, leaf_state, raises_rule
from reference import plain_lookup, plain_scatter

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


def test_a_dense_gradient_view_that_cannot_be_allocated_is_a_typed_error_and_changes_nothing(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.ones((1, 3, 2)))
    before = leaf_state(leaf)
    with failing_numpy(monkeypatch, gradient_module, "zeros"):
        for read in (lambda: leaf.gradient, leaf.gradient_snapshot):
            with raises_rule(AllocationError, "output.allocation") as caught:
                read()
            assert caught.value.elements == 8
        sparse = leaf.sparse_gradient  # the row-sparse form needs no new memory
        assert sparse is not None and sparse.rows.tolist() == [1, 2]
    assert leaf_state(leaf) == before


@given(
    st.lists(st.integers(0, 6), min_size=0, max_size=300),
    st.integers(1, 4),
    st.sampled_from(["float64", "float32"]),
    st.integers(0, 2**32 - 1),
)
def test_both_scatter_strategies_equal_the_plain_loop_bit_for_bit(
    ids: list[int], width: int, dtype: str, seed: int
) -> None:
    indices = np.array(ids, dtype=np.intp)
    upstream = np.random.default_rng(seed).normal(size=(len(ids), width)).astype(dtype)
    upstream[::7] = -0.0  # signed zeros must sum like the loop, which starts from +0.0
    dense = plain_scatter(ids, upstream, 7, width)
    if not ids:
        return
    for rows, values, counts in (
        scatter_sums(indices, upstream),
        scatter_rows(indices, upstream, 7),
    ):
        assert rows.tolist() == sorted(set(ids))
        assert counts.tolist() == [ids.count(row) for row in rows.tolist()]
        assert values.dtype == upstream.dtype
        assert values.tobytes() == dense[rows].tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_lookup_and_backward_run_compiled_and_match_the_loop(dtype: str) -> None:
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 50, size=COMPILED_KERNEL_MIN_VALUES // 8 + 3).tolist()
    layer = Embedding.new("w", 50, 8, SplitMix64.from_seed(2), dtype)
    out = layer.forward(ids, (len(ids),))
    assert out.value.element_count >= COMPILED_KERNEL_MIN_VALUES
    assert out.numpy().tobytes() == plain_lookup(layer.table.tensor.numpy(), ids).tobytes()
    upstream = rng.normal(size=out.shape).astype(dtype)
    upstream[5] = -0.0
    out.backward_with_seed(upstream)
    expected = plain_scatter(ids, upstream, 50, 8)
    assert layer.table.tensor.gradient.numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]
