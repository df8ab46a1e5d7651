"""Reverse mode: ``backward_with_seed`` and ``backward`` are all-or-nothing, on dense and
row-sparse stored gradients.

A pass either raises the documented error (seed type, shape, finiteness, retention, a released
or stale graph, a non-finite pass or accumulated gradient, memory) and leaves every stored
gradient as it was, or adds exactly the reference model's plain-loop scatter to the stored
gradient. The properties generate lookups whose table has a zero, row-sparse or dense stored
gradient, possibly released or made stale, and seeds of every kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llm_from_scratch.autograd.gradient as gradient_module
from llm_from_scratch.autograd import (
    GraphRetention,
    TensorValue,
)
from llm_from_scratch.errors import (
    RULES,
    AllocationError,
    LlmError,
    NonFiniteError,
    ShapeError,
    TapeError,
)
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import check_outcome, failing_numpy, leaf_state, raises_rule
from conftest import KNOWN_UPSTREAM
from reference import Outcome, Raises, expected_backward

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def parameter(*values: float) -> TensorValue:
    return TensorValue.parameter(Tensor((len(values),), values))


def test_backward_of_a_scalar_is_a_seed_of_one() -> None:
    w = parameter(3.0, -1.0)
    w.mul(w).sum().backward()
    assert w.gradient_snapshot().flat_values() == [6.0, -2.0]  # type: ignore[union-attr]


def test_gradients_accumulate_over_two_retained_passes() -> None:
    w = parameter(1.0, 2.0)
    loss = w.mul(Tensor((2,), [3.0, 5.0])).sum()
    loss.backward_with_seed(np.array(1.0), GraphRetention.RETAIN)
    loss.backward_with_seed(np.array(1.0), GraphRetention.RETAIN)
    assert w.gradient.flat_values() == [6.0, 10.0]  # type: ignore[union-attr]


def test_a_released_graph_refuses_a_second_backward() -> None:
    w = parameter(1.0, 2.0)
    loss = w.sum()
    loss.backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    assert w.gradient.flat_values() == [1.0, 1.0]  # type: ignore[union-attr]
    with raises_rule(TapeError, "tape.released") as caught:
        loss.backward()
    assert caught.value.operation == "sum"
    assert str(caught.value) == "the sum operation tape has been released"
    assert w.gradient.flat_values() == [1.0, 1.0]  # type: ignore[union-attr]


def test_release_frees_every_operation_the_pass_walked() -> None:
    w = parameter(1.0, 2.0)
    doubled = w.add(w)
    doubled.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    with raises_rule(TapeError, "tape.released") as caught:
        doubled.backward_with_seed(np.ones(2))
    assert caught.value.operation == "add"


def test_building_on_a_released_operand_names_the_operation_and_operand() -> None:
    w = parameter(1.0, 2.0)
    doubled = w.add(w)
    doubled.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    with raises_rule(TapeError, "tape.released-operand") as caught:
        w.mul(doubled)
    assert (caught.value.operation, caught.value.operand) == ("mul", "right")
    assert str(caught.value) == (
        "cannot build mul: operand right reaches a released operation tape"
    )


def test_an_operand_whose_ancestor_was_released_is_refused_too() -> None:
    w = parameter(1.0, 2.0)
    doubled = w.add(w)
    branch = doubled.mul(Tensor((2,), [1.0, 1.0]))
    doubled.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    with raises_rule(TapeError, "tape.released-operand") as caught:
        branch.sum()
    assert caught.value.operand == "input"


def test_parameters_are_never_released() -> None:
    w = parameter(1.0)
    w.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    w.sum().backward()
    assert w.gradient.flat_values() == [2.0]  # type: ignore[union-attr]


def test_seed_shape_must_match_the_output_shape() -> None:
    w = TensorValue.parameter(Tensor((2, 2), [1, 2, 3, 4]))
    with raises_rule(ShapeError, "seed.shape") as caught:
        w.mul(w).backward_with_seed(np.ones((4,)))
    assert (caught.value.expected, caught.value.actual) == ((2, 2), (4,))
    assert str(caught.value) == "backward seed shape [4] does not match output shape [2, 2]"


def test_a_non_finite_seed_leaves_the_gradient_untouched() -> None:
    w = parameter(1.0, 2.0)
    y = w.mul(Tensor((2,), [2.0, 2.0]))
    y.backward_with_seed(np.array([1.0, 1.0]))
    before = w.gradient_snapshot()
    with raises_rule(NonFiniteError, "seed.non-finite") as caught:
        y.backward_with_seed(np.array([1.0, np.nan]))
    assert caught.value.index == 1 and np.isnan(caught.value.value)
    assert w.gradient.equals(before)  # type: ignore[union-attr, arg-type]


def test_a_non_finite_vjp_raises_and_stores_nothing_anywhere() -> None:
    a, b = parameter(1.0), parameter(1e308)
    loss = a.sum().add(b.mul(Tensor((1,), [1e308])).sum())
    with raises_rule(NonFiniteError, "gradient.non-finite"):
        loss.backward_with_seed(np.array(1e10))
    assert a.gradient.flat_values() == [0.0]  # type: ignore[union-attr]
    assert b.gradient.flat_values() == [0.0]  # type: ignore[union-attr]


def test_an_accumulated_overflow_raises_and_keeps_the_earlier_gradient() -> None:
    w = parameter(1.0)
    loss = w.mul(Tensor((1,), [1e308])).sum()
    loss.backward()
    with raises_rule(NonFiniteError, "gradient.non-finite") as caught:
        loss.backward()
    assert caught.value.operation == "accumulated parameter"
    assert w.gradient.flat_values() == [1e308]  # type: ignore[union-attr]


def test_seed_must_be_a_tensor_or_numpy_array() -> None:
    w = parameter(1.0)
    with raises_rule(ShapeError, "seed.type"):
        w.sum().backward_with_seed([1.0])  # type: ignore[arg-type]


def test_seed_may_be_a_tensor() -> None:
    w = parameter(1.0, 2.0)
    w.mul(w).backward_with_seed(Tensor((2,), [1.0, 0.5]))
    assert w.gradient.flat_values() == [2.0, 2.0]  # type: ignore[union-attr]


def test_backward_without_seed_needs_a_scalar() -> None:
    with raises_rule(ShapeError, "value.not-scalar-output"):
        parameter(1.0, 2.0).mul(parameter(1.0, 1.0)).backward()


def test_backward_from_a_constant_is_refused() -> None:
    c = TensorValue.constant(Tensor((1,), [1.0]))
    with raises_rule(TapeError, "tape.not-recorded"):
        c.sum().backward()


def test_every_tape_error_is_a_tensor_autodiff_error() -> None:
    for rule in (
        "tape.released",
        "tape.released-operand",
        "seed.shape",
        "seed.non-finite",
        "tape.stale-value",
        "gradient.non-finite",
    ):
        assert issubclass(RULES[rule].family, LlmError)


def test_a_seed_changed_after_backward_does_not_change_the_stored_gradient(
    known_layer: Embedding,
) -> None:
    w = TensorValue.parameter(Tensor((2, 2), [1, 2, 3, 4]))
    seed = np.ones((4,))
    w.reshape((4,)).backward_with_seed(seed)
    direct = np.ones((2, 2))
    w.backward_with_seed(direct)
    seed[0] = 99.0
    direct[0, 0] = 99.0
    assert w.gradient.flat_values() == [2.0, 2.0, 2.0, 2.0]  # type: ignore[union-attr]
    lookup_seed = UPSTREAM.copy()  # and into a row-sparse store
    known_layer([[2, 1, 2]]).backward_with_seed(lookup_seed)
    lookup_seed[...] = 99.0
    gradient = known_layer.table.tensor.gradient
    assert gradient is not None
    assert gradient.flat_values() == [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 0.0, 0.0]


def test_an_overflowing_repeated_row_is_caught_even_though_copies_are_not_rescanned() -> None:
    table = TensorValue.parameter(Tensor((3, 1), [0.0, 0.0, 0.0]))
    rows = table.gather_rows([0, 2, 2], (3,))
    with raises_rule(NonFiniteError, "gradient.non-finite") as caught:
        rows.backward_with_seed(np.array([[1.0], [1e308], [1e308]]))
    assert (caught.value.operation, caught.value.index) == ("gather_rows", 2)
    assert not table.gradient.numpy().any()  # type: ignore[union-attr]


def test_two_finite_contributions_that_overflow_together_are_caught() -> None:
    w = parameter(1e308)
    with raises_rule(NonFiniteError, "gradient.non-finite"):
        w.add(w).sum().backward_with_seed(np.array(1e308))
    assert w.gradient.flat_values() == [0.0]  # type: ignore[union-attr]


def test_a_backward_that_runs_out_of_memory_is_a_typed_error_and_changes_no_stored_gradient(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.ones((1, 3, 2)))
    shifted = leaf.add(Tensor((4, 2), [0.0] * 8))  # an operation table: its gradient is densified
    output = shifted.gather_rows([3, 3], (2,))
    before = leaf_state(leaf)
    with (
        failing_numpy(monkeypatch, gradient_module, "zeros"),
        raises_rule(AllocationError, "output.allocation") as caught,
    ):
        output.backward_with_seed(np.ones((2, 2)))
    assert (caught.value.operation, caught.value.elements) == ("backward", 4)
    assert leaf_state(leaf) == before


# Properties ----------------------------------------------------------------------------------

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


def expected_for(scenario: Scenario, seed: object, retention: object) -> Outcome:
    """The reference model's outcome of ``scenario.output.backward_with_seed(seed, retention)``."""
    stored = scenario.layer.table.tensor.gradient_snapshot()
    assert stored is not None
    return expected_backward(
        seed.numpy() if isinstance(seed, Tensor) else seed,
        retention,
        ids=scenario.ids,
        output_shape=scenario.output.shape,
        stored_gradient=stored.numpy(),
        released=scenario.released,
        stale=scenario.stale,
    )


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
    expected = expected_for(scenario, seed, retention)
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
            Raises(TapeError, {"rule": "tape.released", "operation": "gather_rows"}),
        )
        released = {"rule": "tape.released-operand", "operation": "sum"}
        check_outcome(scenario.output.sum, Raises(TapeError, released))


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
    expected = expected_for(scenario, seed, GraphRetention.RELEASE)
    check_outcome(
        lambda: scenario.output.backward_with_seed(seed, GraphRetention.RELEASE), expected
    )
    if isinstance(expected, Raises):
        assert leaf_state(leaf) == before
        scenario.output.sum()  # the failed RELEASE pass released nothing
