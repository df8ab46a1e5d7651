"""``SGD``: the step updates only the rows a row-sparse gradient touched, rounds like the
reference model's ``w - lr * g`` in the table's dtype (compiled or not), changes nothing when a
value would become non-finite, bumps the value revision, and so makes every graph recorded
before it refuse to run backward."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.errors import NonFiniteError, OptionError, TapeError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import check_outcome, leaf_state, raises_rule
from conftest import KNOWN_UPSTREAM
from reference import Raises, Returns, expected_sgd_step, plain_scatter

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def test_sgd_updates_only_the_touched_rows_bit_for_bit() -> None:
    layer = Embedding.new("w", 6, 2, SplitMix64.from_seed(8), dtype=np.float32)
    before = layer.table.tensor.value_snapshot().numpy()
    upstream = np.array([[1.0, -2.0], [0.5, 0.25], [3.0, 4.0]], dtype=np.float32)
    layer([2, 5, 2]).backward_with_seed(upstream)
    SGD(layer.parameters(), learning_rate=0.5).step()
    after = layer.table.tensor.numpy()
    gradient = plain_scatter([2, 5, 2], upstream, 6, 2)
    expected = expected_sgd_step(before, gradient, [2, 5], 0.5)
    assert isinstance(expected, Returns)
    assert after.tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]
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
    with raises_rule(NonFiniteError, "optimizer.non-finite-step"):
        SGD([leaf], learning_rate=10.0).step()
    assert leaf.numpy().tolist() == [[1e308], [0.0]] and leaf.value_revision == 0


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf")])
def test_sgd_needs_a_finite_positive_learning_rate(rate: float) -> None:
    layer = Embedding.new("w", 2, 2, SplitMix64.from_seed(1))
    with raises_rule(OptionError, "optimizer.setting-value", name="learning_rate"):
        SGD(layer.parameters(), learning_rate=rate)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_compiled_sgd_step_rounds_like_the_plain_loop(dtype: str) -> None:
    rows, width = 3000, 64
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(9), dtype)
    ids = np.random.default_rng(1).integers(0, rows, size=2000).tolist()
    out = layer(ids)
    upstream = np.random.default_rng(2).normal(size=out.shape).astype(dtype)
    out.backward_with_seed(upstream)
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.values.size >= COMPILED_KERNEL_MIN_VALUES
    before = layer.table.tensor.value_snapshot().numpy()
    gradient = np.zeros_like(before)
    gradient[sparse.rows] = sparse.values
    SGD(layer.parameters(), learning_rate=0.3).step()
    expected = expected_sgd_step(before, gradient, sparse.rows.tolist(), 0.3)
    assert isinstance(expected, Returns)
    assert layer.table.tensor.numpy().tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]


def test_a_large_compiled_step_that_would_overflow_changes_nothing() -> None:
    layer = Embedding.new("w", 2000, 64, SplitMix64.from_seed(9))
    out = layer(list(range(2000)))
    seed = np.ones(out.shape)
    seed[1999, 63] = -1e308
    out.backward_with_seed(seed)
    before = layer.table.tensor.value_snapshot().numpy()
    with raises_rule(NonFiniteError, "optimizer.non-finite-step"):
        SGD(layer.parameters(), learning_rate=10.0).step()
    assert layer.table.tensor.numpy().tobytes() == before.tobytes()
    assert layer.table.tensor.value_revision == 0


def test_an_optimizer_step_is_the_supported_update_and_marks_recorded_graphs_stale(
    known_layer: Embedding,
) -> None:
    leaf = known_layer.table.tensor
    weight = Tensor((4, 2), [1.0] * 8)
    dense = leaf.mul(weight).sum()  # records the table through a dense operation
    lookup = known_layer([[2, 1, 2]])
    lookup.backward_with_seed(UPSTREAM)
    SGD(known_layer.parameters(), learning_rate=0.5).step()
    assert leaf.value_revision == 1
    stored = leaf.gradient_snapshot()
    for graph, operation, operand in ((dense, "mul", "left"), (lookup, "gather_rows", "table")):
        with raises_rule(TapeError, "tape.stale-value") as caught:
            graph.backward_with_seed(np.ones(graph.shape))
        assert (caught.value.operation, caught.value.operand) == (operation, operand)
        assert (caught.value.recorded_revision, caught.value.current_revision) == (0, 1)
        assert str(caught.value).endswith("run the forward again")
    assert leaf.gradient.equals(stored)  # type: ignore[union-attr, arg-type]
    known_layer([[2, 1, 2]]).backward_with_seed(UPSTREAM)  # a new forward is fine


# Properties ----------------------------------------------------------------------------------


@given(
    st.integers(1, 5),
    st.integers(1, 3),
    st.lists(st.integers(0, 4), min_size=1, max_size=8),
    st.sampled_from([1e-3, 0.5, 2, 1e308]),
    st.sampled_from([np.float64, np.float32]),
)
def test_sgd_updates_only_touched_rows_marks_the_change_and_makes_old_graphs_stale(
    rows: int, width: int, raw_ids: list[int], learning_rate: float, dtype: type
) -> None:
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(rows * 10 + width), dtype)
    leaf = layer.table.tensor
    ids = [token_id % rows for token_id in raw_ids]
    output = layer(ids)
    seed = np.linspace(-2, 3, output.value.element_count).reshape(output.shape)
    output.backward_with_seed(seed)
    old_values, gradient = leaf.value_snapshot().numpy(), leaf.gradient_snapshot().numpy()  # type: ignore[union-attr]
    before = leaf_state(leaf)
    expected = expected_sgd_step(old_values, gradient, sorted(set(ids)), learning_rate)
    if isinstance(expected, Raises):
        with np.errstate(over="ignore"):
            check_outcome(SGD(layer.parameters(), learning_rate).step, expected)
        assert leaf_state(leaf) == before  # a step that would leave NaN/inf changes nothing
        output.backward_with_seed(seed)  # and the graph is not stale
        return
    with np.errstate(over="ignore"):
        SGD(layer.parameters(), learning_rate).step()
    assert leaf.numpy().tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]
    assert leaf.value_revision == before.revision + 1
    check_outcome(
        lambda: output.backward_with_seed(seed),
        Raises(
            TapeError,
            {
                "rule": "tape.stale-value",
                "operation": "gather_rows",
                "operand": "table",
                "recorded_revision": 0,
                "current_revision": 1,
            },
        ),
    )
    assert leaf.gradient_snapshot().numpy().tobytes() == gradient.tobytes()  # type: ignore[union-attr]
    layer(ids).backward_with_seed(seed)  # a new forward records the new revision
