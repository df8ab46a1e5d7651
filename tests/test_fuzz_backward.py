"""Property tests: reverse mode is all-or-nothing, on dense and row-sparse stored gradients.

``backward_with_seed`` either raises the documented error (seed type, shape, finiteness,
retention, a released or stale graph, a non-finite pass or accumulated gradient) and leaves
every stored gradient as it was, or adds exactly the plain-loop scatter to the stored gradient.
An SGD step changes only the rows a row-sparse gradient touched, marks the values as changed,
and makes graphs recorded before it refuse to run backward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    GraphReleasedError,
    GraphRetention,
    NonFiniteGradientError,
    NonFiniteSeedError,
    ReleasedOperandError,
    RetentionTypeError,
    SeedShapeMismatchError,
    SeedTypeError,
    StaleValueError,
    TensorValue,
)
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD, NonFiniteStepError
from llm_from_scratch.tensor import Tensor

from fuzz_support import Outcome, Raises, Returns, check_outcome, leaf_state

SMALL = st.floats(-4, 4, width=32)
SEED_VALUES = st.one_of(
    *[SMALL] * 8,
    st.sampled_from([0.0, -0.0, 3e38, -3e38, 1.7e308, -1.7e308]),
    st.sampled_from([3e38, 1.7e308]),
    st.sampled_from([float("nan"), float("inf"), -float("inf")]),
)


@dataclass
class Scenario:
    layer: Embedding
    ids: list[int]
    shape: tuple[int, ...]
    output: TensorValue
    released: bool
    stale: bool


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A lookup output whose table has a zero, row-sparse or dense stored gradient, possibly
    already released by an earlier pass or made stale by an SGD step."""
    rows, width = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    layer = Embedding.new("w", rows, width, SplitMix64.from_seed(draw(st.integers(0, 99))), dtype)
    leaf = layer.table.tensor
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    count = int(np.prod(shape, dtype=np.int64))
    ids = draw(st.lists(st.integers(0, rows - 1), min_size=count, max_size=count))
    history = draw(st.sampled_from(["untouched", "row-sparse", "dense"]))
    if history != "untouched":
        earlier = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=4))
        values = draw(st.lists(st.floats(-4, 4, width=32), min_size=width, max_size=width))
        seed = np.tile(np.array(values, dtype=dtype), (len(earlier), 1))
        layer.forward(earlier, (len(earlier),)).backward_with_seed(seed)
    if history == "dense":
        leaf.mul(Tensor(leaf.shape, np.ones(leaf.shape), dtype=dtype)).sum().backward()
    output = layer.forward(ids, shape)
    released = draw(st.booleans()) and draw(st.booleans())
    if released:
        output.backward_with_seed(np.zeros(output.shape), GraphRetention.RELEASE)
    stale = draw(st.booleans()) and draw(st.booleans())
    if stale:
        SGD(layer.parameters(), learning_rate=1e-3).step()
    return Scenario(layer, ids, shape, output, released, stale)


@st.composite
def seeds(draw: st.DrawFn, shape: tuple[int, ...]) -> object:
    """Seeds of the right shape in many dtypes (some non-finite), and bad seeds of every kind."""
    kind = draw(st.sampled_from(["float", "float", "float", "narrow", "shape", "type", "tensor"]))
    count = int(np.prod(shape, dtype=np.int64))
    if kind == "type":
        return draw(
            st.sampled_from(
                [None, 1.0, [1.0], "1", np.zeros(shape, dtype=complex), np.zeros(shape, object)]
            )
        )
    if kind == "shape":
        other = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
        return np.zeros(other)
    values = np.array(draw(st.lists(SEED_VALUES, min_size=count, max_size=count)), dtype=float)
    if kind == "narrow":
        dtype = draw(st.sampled_from([np.float16, np.int8, np.uint16, np.int64, np.bool_]))
        with np.errstate(all="ignore"):
            clipped = np.nan_to_num(np.clip(values, -100, 100))
            return clipped.astype(dtype).reshape(shape)
    array = values.reshape(shape)
    if draw(st.booleans()):
        with np.errstate(over="ignore"):  # a float32 seed may overflow to inf: that is the point
            array = array.astype(np.float32)
    if kind == "tensor":
        return Tensor(shape, array.reshape(-1), dtype=array.dtype)
    if draw(st.booleans()):
        array.flags.writeable = False
    return array


def expected_backward(scenario: Scenario, seed: object, retention: object) -> Outcome:
    """The checks in documented order, then the plain-loop scatter added to the stored gradient."""
    output, leaf = scenario.output, scenario.layer.table.tensor
    if isinstance(seed, Tensor):
        array = seed.numpy()
    elif isinstance(seed, np.ndarray | np.generic) and seed.dtype.kind in "biuf":
        array = np.asarray(seed)
    else:
        return Raises(SeedTypeError, {"seed_type": type(seed).__name__})
    if array.shape != output.shape:
        return Raises(SeedShapeMismatchError, {"expected": output.shape, "actual": array.shape})
    with np.errstate(over="ignore"):
        converted = array.astype(output.dtype).reshape(-1)
    for index, value in enumerate(converted.tolist()):
        if not np.isfinite(value):
            return Raises(NonFiniteSeedError, {"index": index, "value": value})
    if not isinstance(retention, GraphRetention):
        return Raises(RetentionTypeError, {"retention": retention})
    if scenario.released:
        return Raises(GraphReleasedError, {"operation": "gather_rows"})
    if scenario.stale:
        return Raises(
            StaleValueError,
            {
                "operation": "gather_rows",
                "operand": "table",
                "recorded_revision": 0,
                "current_revision": 1,
            },
        )
    rows, width = leaf.shape
    upstream = converted.reshape(len(scenario.ids), width)
    pass_gradient = np.zeros((rows, width), dtype=output.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for position, token_id in enumerate(scenario.ids):
            for feature in range(width):
                pass_gradient[token_id, feature] += upstream[position, feature]
    first = _first_non_finite(pass_gradient)
    if first is not None:
        return Raises(NonFiniteGradientError, {"operation": "gather_rows", **first})
    stored = leaf.gradient_snapshot().numpy()  # type: ignore[union-attr]
    total = stored.copy()
    touched = sorted(set(scenario.ids))
    with np.errstate(over="ignore", invalid="ignore"):
        total[touched] = stored[touched] + pass_gradient[touched]
    first = _first_non_finite(total)
    if first is not None:
        return Raises(NonFiniteGradientError, {"operation": "accumulated parameter", **first})
    return Returns(total)


def _first_non_finite(array: np.ndarray[Any, Any]) -> dict[str, object] | None:
    for index, value in enumerate(array.reshape(-1).tolist()):
        if not np.isfinite(value):
            return {"index": index, "value": value}
    return None


@given(
    scenarios(),
    st.data(),
    st.sampled_from([GraphRetention.RETAIN, GraphRetention.RELEASE, "release", None, 1]),
)
def test_backward_raises_the_first_documented_error_and_changes_nothing_or_adds_the_plain_loop(
    scenario: Scenario, data: st.DataObject, retention: object
) -> None:
    seed = data.draw(seeds(scenario.output.shape), label="seed")
    leaf = scenario.layer.table.tensor
    before = leaf_state(leaf)
    sparse_before = leaf.sparse_gradient
    expected = expected_backward(scenario, seed, retention)
    check_outcome(
        lambda: scenario.output.backward_with_seed(seed, retention),  # type: ignore[arg-type]
        expected,
    )
    if isinstance(expected, Raises):
        assert leaf_state(leaf) == before
        if not scenario.released:  # a failed RELEASE pass released nothing
            scenario.output.sum()
        return
    total = expected.value
    assert np.array_equal(leaf.gradient.numpy(), total)  # type: ignore[union-attr, arg-type]
    assert (leaf.numpy().tobytes(), leaf.value_revision) == (before.values, before.revision)
    sparse = leaf.sparse_gradient
    if sparse_before is None:
        assert sparse is None  # a dense store stays dense
    else:
        touched = set(sparse_before.rows.tolist()) | set(scenario.ids)
        assert sparse is not None and sparse.rows.tolist() == sorted(touched)
        assert np.array_equal(sparse.values, total[sparse.rows])  # type: ignore[index]
    if retention is GraphRetention.RELEASE:
        check_outcome(
            lambda: scenario.output.backward_with_seed(np.zeros(scenario.output.shape)),
            Raises(GraphReleasedError, {"operation": "gather_rows"}),
        )
        check_outcome(scenario.output.sum, Raises(ReleasedOperandError, {"operation": "sum"}))


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
    with np.errstate(over="ignore", invalid="ignore"):
        rate = np.dtype(dtype).type(learning_rate)
        planned = old_values - rate * gradient
    touched = sorted(set(ids))
    if not np.isfinite(planned[touched]).all():
        with np.errstate(over="ignore"):
            check_outcome(SGD(layer.parameters(), learning_rate).step, Raises(NonFiniteStepError))
        assert leaf_state(leaf) == before  # a step that would leave NaN/inf changes nothing
        output.backward_with_seed(seed)  # and the graph is not stale
        return
    with np.errstate(over="ignore"):
        SGD(layer.parameters(), learning_rate).step()
    after = leaf.numpy()
    untouched = [row for row in range(rows) if row not in touched]
    assert after[untouched].tobytes() == old_values[untouched].tobytes()
    assert after[touched].tobytes() == planned[touched].tobytes()
    assert leaf.value_revision == before.revision + 1
    check_outcome(
        lambda: output.backward_with_seed(seed),
        Raises(
            StaleValueError,
            {
                "operation": "gather_rows",
                "operand": "table",
                "recorded_revision": 0,
                "current_revision": 1,
            },
        ),
    )
    assert leaf.gradient_snapshot().numpy().tobytes() == gradient.tobytes()  # type: ignore[union-attr]
    layer(ids).backward_with_seed(seed)  # a new forward records the new revision


@given(
    scenarios().filter(lambda s: not (s.released or s.stale) and len(s.ids) > 1),
    st.data(),
)
def test_an_overflowing_sum_of_repeated_ids_raises_and_leaves_the_stored_gradient_as_it_was(
    scenario: Scenario, data: st.DataObject
) -> None:
    shape, dtype = scenario.output.shape, scenario.output.dtype
    largest = float(np.finfo(dtype).max)
    signs = data.draw(st.lists(st.sampled_from([1.0, 1.0, -1.0, 0.5]), min_size=1, max_size=1))
    seed = np.full(shape, largest * signs[0], dtype=dtype)
    seed.reshape(-1)[::3] = largest  # a mixture, so row sums overflow at different positions
    leaf = scenario.layer.table.tensor
    before = leaf_state(leaf)
    expected = expected_backward(scenario, seed, GraphRetention.RELEASE)
    check_outcome(
        lambda: scenario.output.backward_with_seed(seed, GraphRetention.RELEASE), expected
    )
    if isinstance(expected, Raises):
        assert leaf_state(leaf) == before
        scenario.output.sum()  # the failed RELEASE pass released nothing
