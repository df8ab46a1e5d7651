"""Leaves pickle and deep-copy with their values and stored gradient in its own form; an
operation result refuses; a crafted pickle gets the typed error of its first bad part."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llm_from_scratch.autograd.leaf_state as leaf_state_module
from llm_from_scratch.autograd import (
    GraphRetention,
    TensorValue,
    no_grad,
)
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.autograd.value import restore_value
from llm_from_scratch.errors import AllocationError, NonFiniteError, TapeError
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ShowsOtherValues
from checks import PicklePayload, failing_numpy, leaf_state, raises_rule, unpickled
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)
DTYPES = [np.float64, np.float32]


def known_parameter(dtype: type = np.float64) -> TensorValue:
    return TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE, dtype=dtype))


def with_row_sparse_gradient(dtype: type = np.float64) -> TensorValue:
    """The chapter's table after the lookup of [[2, 1, 2]]: rows 1 and 2, row 2 summed."""
    table = known_parameter(dtype)
    seed = np.array(KNOWN_UPSTREAM, dtype=dtype).reshape(1, 3, 2)
    table.gather_rows([2, 1, 2], (1, 3)).backward_with_seed(seed)
    return table


def with_dense_gradient(dtype: type = np.float64) -> TensorValue:
    table = with_row_sparse_gradient(dtype)
    table.mul(Tensor((4, 2), np.full(8, 0.5), dtype=dtype)).sum().backward()
    return table


LEAVES = {
    "untouched table": known_parameter,
    "row-sparse gradient": with_row_sparse_gradient,
    "dense gradient": with_dense_gradient,
}


def round_trips(leaf: TensorValue) -> list[TensorValue]:
    """The leaf through every pickle protocol, and its deep copy."""
    return [*(pickle.loads(pickle.dumps(leaf, p)) for p in PROTOCOLS), copy.deepcopy(leaf)]


def assert_same_leaf_contents(copied: TensorValue, original: TensorValue) -> None:
    """Kind, values and stored gradient (form, rows, values, summed) bit for bit; a new node
    at revision 0."""
    assert type(copied) is TensorValue and copied.kind == original.kind
    assert not copied.is_same_node(original)
    assert copied.value_revision == 0
    assert copied.dtype == original.dtype and copied.shape == original.shape
    assert copied.numpy().tobytes() == original.numpy().tobytes()
    assert not np.shares_memory(copied.numpy(), original.numpy())
    if original.kind == "constant":
        assert copied.gradient is None and copied.sparse_gradient is None
        return
    sparse, expected = copied.sparse_gradient, original.sparse_gradient
    assert (sparse is None) == (expected is None)
    if sparse is not None and expected is not None:
        assert sparse.shape == expected.shape and sparse.dtype == expected.dtype
        assert sparse.rows.dtype == np.intp
        assert sparse.rows.tolist() == expected.rows.tolist()
        assert sparse.values.tobytes() == expected.values.tobytes()
        assert sparse.values.shape == expected.values.shape
        summed, expected_summed = sparse.summed, expected.summed
        assert (summed is None) == (expected_summed is None)
        if summed is not None and expected_summed is not None:
            assert summed.tolist() == expected_summed.tolist()
    assert copied.gradient_snapshot().numpy().tobytes() == (  # type: ignore[union-attr]
        original.gradient_snapshot().numpy().tobytes()  # type: ignore[union-attr]
    )


# Round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("history", LEAVES)
def test_a_parameter_round_trips_with_its_gradient_in_the_same_form(
    history: str, dtype: type
) -> None:
    original = LEAVES[history](dtype)
    for copied in round_trips(original):
        assert_same_leaf_contents(copied, original)
    assert original.value_revision == 0 and leaf_state(original) == leaf_state(original)


def test_the_row_sparse_gradient_keeps_its_summed_rows() -> None:
    restored = unpickled(with_row_sparse_gradient())
    sparse = restored.sparse_gradient
    assert sparse.rows.tolist() == [1, 2] and sparse.summed.tolist() == [1]
    assert restored.gradient.numpy().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 2), (0,), (0, 3), (3, 0), (2, 0, 2)])
def test_parameters_of_any_rank_and_zero_size_round_trip(
    shape: tuple[int, ...], dtype: type
) -> None:
    count = int(np.prod(shape))
    original = TensorValue.parameter(Tensor(shape, np.arange(count) - 1.5, dtype=dtype))
    if count:
        original.mul(original.value).sum().backward()
    for copied in round_trips(original):
        assert_same_leaf_contents(copied, original)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_constant_round_trips_non_finite_values_included(dtype: type) -> None:
    original = TensorValue.constant(Tensor((3,), [np.nan, -np.inf, 2.5], dtype=dtype))
    for copied in round_trips(original):
        assert_same_leaf_contents(copied, original)


def test_a_constant_built_under_no_grad_is_a_leaf_and_round_trips() -> None:
    table = known_parameter()
    with no_grad():
        rows = table.gather_rows([3, 0], (2,))
    assert rows.kind == "constant"
    for copied in round_trips(rows):
        assert_same_leaf_contents(copied, rows)


def test_the_value_revision_restarts_at_zero_on_the_new_leaf() -> None:
    table = with_row_sparse_gradient()
    SGD([table], learning_rate=0.5).step()
    SGD([table], learning_rate=0.5).step()
    assert table.value_revision == 2
    for copied in round_trips(table):
        assert_same_leaf_contents(copied, table)


def test_a_rebuilt_leaf_trains_on_its_own_and_leaves_the_original_alone() -> None:
    original = with_row_sparse_gradient()
    before = leaf_state(original)
    for copied in round_trips(original):
        copied.gather_rows([0, 2], (2,)).sum().backward()
        assert copied.sparse_gradient.rows.tolist() == [0, 1, 2]  # type: ignore[union-attr]
        assert copied.gradient.numpy().tolist() == [[1, 1], [0, 2], [5, 5], [0, 0]]  # type: ignore[union-attr]
        SGD([copied], learning_rate=1.0).step()
        assert copied.value_revision == 1
        assert leaf_state(original) == before


def test_a_graph_recorded_on_the_original_still_runs_after_copies() -> None:
    original = known_parameter()
    output = original.gather_rows([1], (1,))
    twin = copy.deepcopy(original)
    SGD([twin], learning_rate=1.0).step()
    output.backward_with_seed(np.ones((1, 2)))
    assert original.sparse_gradient.rows.tolist() == [1]  # type: ignore[union-attr]


# Sharing and shallow copies ------------------------------------------------------------------


def test_copy_is_a_new_handle_on_the_same_node_for_every_kind() -> None:
    table = known_parameter()
    constant = TensorValue.constant(Tensor((1,), [1.0]))
    result = table.gather_rows([1, 1], (2,))
    for value in (table, constant, result):
        twin = copy.copy(value)
        assert twin is not value and twin.is_same_node(value) and twin.kind == value.kind
    copy.copy(result).sum().backward()
    assert table.gradient.numpy().tolist() == [[0, 0], [2, 2], [0, 0], [0, 0]]  # type: ignore[union-attr]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_handles_on_one_node_come_back_on_one_new_node(protocol: int) -> None:
    table = with_row_sparse_gradient()
    other = known_parameter()
    for a, b, c in (
        pickle.loads(pickle.dumps((table, copy.copy(table), other), protocol)),
        copy.deepcopy((table, copy.copy(table), other)),
    ):
        assert a.is_same_node(b) and not a.is_same_node(c) and not a.is_same_node(table)
        assert_same_leaf_contents(a, table)


def test_separate_pickles_give_separate_leaves() -> None:
    table = known_parameter()
    data = pickle.dumps(table)
    assert not pickle.loads(data).is_same_node(pickle.loads(data))


# Operation results ---------------------------------------------------------------------------


def test_an_operation_result_refuses_to_pickle_and_to_deep_copy() -> None:
    result = known_parameter().gather_rows([2, 1, 2], (1, 3)).sum()
    with raises_rule(TapeError, "tape.unpicklable") as caught:
        pickle.dumps(result)
    assert (caught.value.action, caught.value.operation) == ("pickle", "sum")
    assert isinstance(caught.value, TypeError)
    with raises_rule(TapeError, "tape.unpicklable") as caught:
        copy.deepcopy(result)
    assert (caught.value.action, caught.value.operation) == ("deep-copy", "sum")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_anything_holding_an_operation_result_refuses_in_every_protocol(protocol: int) -> None:
    table = known_parameter()
    rows = table.gather_rows([0], (1,))
    with raises_rule(TapeError, "tape.unpicklable", match="gather_rows"):
        pickle.dumps([table, {"rows": rows}], protocol)
    with raises_rule(TapeError, "tape.unpicklable"):
        copy.deepcopy([table, rows])


def test_a_released_operation_result_refuses_with_its_operation_name() -> None:
    rows = known_parameter().gather_rows([0, 3], (2,))
    rows.backward_with_seed(np.ones((2, 2)), GraphRetention.RELEASE)
    for call in (pickle.dumps, copy.deepcopy):
        with raises_rule(TapeError, "tape.unpicklable") as caught:
            call(rows)
        assert caught.value.operation == "gather_rows"


def test_a_refused_pickle_changes_nothing() -> None:
    table = with_row_sparse_gradient()
    before = leaf_state(table)
    with raises_rule(TapeError, "tape.unpicklable"):
        pickle.dumps((table, table.sum()))
    assert leaf_state(table) == before


def test_a_deep_copy_that_cannot_allocate_is_an_output_allocation_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = with_row_sparse_gradient()
    before = leaf_state(table)
    with (
        failing_numpy(monkeypatch, leaf_state_module, "array"),
        raises_rule(AllocationError, "output.allocation") as caught,
    ):
        copy.deepcopy(table)
    assert (caught.value.operation, caught.value.elements) == ("leaf copy", 8)
    assert leaf_state(table) == before


# Crafted pickles -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Crafted:
    """A leaf state a pickle can hold, and the error it must get."""

    name: str
    state: object
    error: type[Exception]
    attributes: dict[str, object]


F8 = np.float64
VALUES = np.arange(8, dtype=F8).reshape(4, 2)


def parameter_state(gradient: object, values: object = VALUES) -> dict[str, object]:
    return {"kind": "parameter", "values": values, "gradient": gradient}


def sparse(rows: object, values: object = None, summed: object = None) -> dict[str, object]:
    if values is None:
        values = np.ones((len(rows), 2), dtype=F8)  # type: ignore[arg-type]
    return {"form": "row_sparse", "rows": rows, "values": values, "summed": summed}


def dense(values: object) -> dict[str, object]:
    return {"form": "dense", "values": values}


def leaf_error(part: str, detail: str) -> tuple[type[Exception], dict[str, object]]:
    return TapeError, {"rule": "tape.leaf-state", "part": part, "detail": detail}


CRAFTED = [
    Crafted("a list", [1.0], *leaf_error("state", "must be a dict, got list")),
    Crafted(
        "an operation",
        {"kind": "operation", "values": VALUES},
        *leaf_error("kind", "must be one of ['constant', 'parameter'], got 'operation'"),
    ),
    Crafted(
        "no kind",
        {"values": VALUES},
        *leaf_error("kind", "must be one of ['constant', 'parameter'], got None"),
    ),
    Crafted(
        "a constant with a gradient",
        {"kind": "constant", "values": VALUES, "gradient": None},
        *leaf_error(
            "state", "must have the keys ['kind', 'values'], got ['gradient', 'kind', 'values']"
        ),
    ),
    Crafted(
        "a parameter without a gradient",
        {"kind": "parameter", "values": VALUES},
        *leaf_error(
            "state", "must have the keys ['gradient', 'kind', 'values'], got ['kind', 'values']"
        ),
    ),
    Crafted(
        "values as a list",
        parameter_state(dense(VALUES), [[1.0]]),
        *leaf_error("values", "must be a NumPy array, got list"),
    ),
    Crafted(
        "integer values",
        parameter_state(dense(VALUES), np.arange(8).reshape(4, 2)),
        *leaf_error("values", "must be float32 or float64, got int64"),
    ),
    Crafted(
        "float16 values",
        parameter_state(dense(VALUES), VALUES.astype(np.float16)),
        *leaf_error("values", "must be float32 or float64, got float16"),
    ),
    Crafted(
        "masked values",
        {"kind": "constant", "values": np.ma.array([1.0], mask=[True])},
        *leaf_error("values", "must not be a masked array"),
    ),
    Crafted(
        "a NaN value",
        parameter_state(dense(VALUES), np.array([[0.0, 1.0], [np.nan, 2.0], [3, 4], [5, 6]])),
        NonFiniteError,
        {"rule": "parameter.non-finite", "position": 2},
    ),
    Crafted(
        "an infinite value",
        parameter_state(dense(VALUES), np.array([[0.0, -np.inf], [1, 2], [3, 4], [5, 6]])),
        NonFiniteError,
        {"rule": "parameter.non-finite", "position": 1, "value": -np.inf},
    ),
    Crafted(
        "a gradient that is no dict",
        parameter_state(None),
        *leaf_error("gradient", "must be a dict, got NoneType"),
    ),
    Crafted(
        "an unknown gradient form",
        parameter_state({"form": "sparse", "values": VALUES}),
        *leaf_error("form", "must be one of ['dense', 'row_sparse'], got 'sparse'"),
    ),
    Crafted(
        "a dense gradient with extra keys",
        parameter_state({"form": "dense", "values": VALUES, "rows": None}),
        *leaf_error(
            "gradient", "must have the keys ['form', 'values'], got ['form', 'rows', 'values']"
        ),
    ),
    Crafted(
        "a dense gradient of another shape",
        parameter_state(dense(np.zeros((2, 4)))),
        *leaf_error("gradient values", "must have shape [4, 2], got [2, 4]"),
    ),
    Crafted(
        "a dense gradient of another dtype",
        parameter_state(dense(np.zeros((4, 2), dtype=np.float32))),
        *leaf_error("gradient values", "must have the values' dtype float64, got float32"),
    ),
    Crafted(
        "a dense gradient that is no array",
        parameter_state(dense(3.0)),
        *leaf_error("gradient values", "must be a NumPy array, got float"),
    ),
    Crafted(
        "a NaN in a dense gradient",
        parameter_state(dense(np.array([[0.0, 0], [0, 0], [0, np.nan], [0, 0]]))),
        NonFiniteError,
        {"rule": "gradient.non-finite", "operation": "restored", "index": 5},
    ),
    Crafted(
        "a row-sparse gradient on a rank-one leaf",
        parameter_state(sparse(np.array([0])), np.arange(3.0)),
        *leaf_error("gradient", "is row-sparse, which only a rank-two parameter has; got rank 1"),
    ),
    Crafted(
        "rows as a list",
        parameter_state(sparse([0, 1])),
        *leaf_error("gradient rows", "must be a NumPy array, got list"),
    ),
    Crafted(
        "float rows",
        parameter_state(sparse(np.array([0.0, 1.0]))),
        *leaf_error("gradient rows", "must be a 1-D integer array, got 1-D float64"),
    ),
    Crafted(
        "bool rows",
        parameter_state(sparse(np.array([False, True]))),
        *leaf_error("gradient rows", "must be a 1-D integer array, got 1-D bool"),
    ),
    Crafted(
        "two-dimensional rows",
        parameter_state(sparse(np.array([[0, 1]]))),
        *leaf_error("gradient rows", "must be a 1-D integer array, got 2-D int64"),
    ),
    Crafted(
        "unsorted rows",
        parameter_state(sparse(np.array([2, 1]))),
        *leaf_error("gradient rows", "must be sorted and unique"),
    ),
    Crafted(
        "a repeated row",
        parameter_state(sparse(np.array([1, 1]))),
        *leaf_error("gradient rows", "must be sorted and unique"),
    ),
    Crafted(
        "a negative row",
        parameter_state(sparse(np.array([-1, 2]))),
        *leaf_error("gradient rows", "must lie in [0, 4), got -1 to 2"),
    ),
    Crafted(
        "a row past the table",
        parameter_state(sparse(np.array([0, 4], dtype=np.uint8))),
        *leaf_error("gradient rows", "must lie in [0, 4), got 0 to 4"),
    ),
    Crafted(
        "row values of another count",
        parameter_state(sparse(np.array([0, 3]), np.ones((3, 2)))),
        *leaf_error("gradient values", "must have shape [2, 2], got [3, 2]"),
    ),
    Crafted(
        "row values of another width",
        parameter_state(sparse(np.array([0]), np.ones((1, 3)))),
        *leaf_error("gradient values", "must have shape [1, 2], got [1, 3]"),
    ),
    Crafted(
        "row values of another dtype",
        parameter_state(sparse(np.array([0]), np.ones((1, 2), dtype=np.float32))),
        *leaf_error("gradient values", "must have the values' dtype float64, got float32"),
    ),
    Crafted(
        "summed positions past the rows",
        parameter_state(sparse(np.array([0, 3]), summed=np.array([2]))),
        *leaf_error("gradient summed", "must lie in [0, 2), got 2 to 2"),
    ),
    Crafted(
        "unsorted summed positions",
        parameter_state(sparse(np.array([0, 3]), summed=np.array([1, 0]))),
        *leaf_error("gradient summed", "must be sorted and unique"),
    ),
    Crafted(
        "summed positions as a tuple",
        parameter_state(sparse(np.array([0, 3]), summed=(0,))),
        *leaf_error("gradient summed", "must be a NumPy array, got tuple"),
    ),
    Crafted(
        "an infinity in a row that is not listed as summed",
        parameter_state(sparse(np.array([1, 3]), np.array([[0.0, 1], [np.inf, 2]]), np.array([0]))),
        NonFiniteError,
        {"rule": "gradient.non-finite", "operation": "restored", "index": 6, "value": np.inf},
    ),
]


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("crafted", CRAFTED, ids=lambda crafted: crafted.name)
def test_a_crafted_leaf_gets_the_typed_error_of_its_first_bad_part(
    crafted: Crafted, protocol: int
) -> None:
    payload = PicklePayload(restore_value, PicklePayload(restore_node, crafted.state))
    with pytest.raises(crafted.error) as caught:
        unpickled(payload, protocol)
    assert type(caught.value) is crafted.error
    for name, value in crafted.attributes.items():
        assert getattr(caught.value, name) == value


def test_a_crafted_value_that_is_no_rebuilt_node_is_refused() -> None:
    for node in (None, known_parameter(), np.zeros(2)):
        with raises_rule(TapeError, "tape.leaf-state") as caught:
            unpickled(PicklePayload(restore_value, node))
        assert caught.value.part == "node"


def test_a_crafted_state_built_from_valid_parts_restores() -> None:
    rows, row_values = np.array([0, 3], dtype=np.uint16), np.array([[1.0, 2.0], [3.0, 4.0]])
    state = parameter_state(sparse(rows, row_values, np.array([1], dtype=np.int8)))
    restored = unpickled(PicklePayload(restore_value, PicklePayload(restore_node, state)))
    assert restored.kind == "parameter" and restored.numpy().tolist() == VALUES.tolist()
    assert restored.sparse_gradient.rows.dtype == np.intp
    assert restored.sparse_gradient.summed.tolist() == [1]
    assert restored.gradient.numpy().tolist() == [[1, 2], [0, 0], [0, 0], [3, 4]]


def test_crafted_arrays_are_read_as_their_memory_and_copied_into_native_order() -> None:
    big_endian = VALUES.astype(">f8")
    state = parameter_state(dense(np.ones((4, 2)).view(ShowsOtherValues)), big_endian)
    restored = restore_value(restore_node(state))
    assert restored.dtype == np.dtype("=f8") and restored.numpy().tolist() == VALUES.tolist()
    assert restored.gradient.numpy().tolist() == np.ones((4, 2)).tolist()  # type: ignore[union-attr]


def test_the_restored_leaf_owns_its_arrays() -> None:
    values, gradient = VALUES.copy(), np.ones((4, 2))
    restored = restore_value(restore_node(parameter_state(dense(gradient), values)))
    values[0, 0], gradient[0, 0] = 99.0, 99.0
    assert restored.numpy()[0, 0] == 0.0 and restored.gradient.numpy()[0, 0] == 1.0  # type: ignore[union-attr]


# Property ------------------------------------------------------------------------------------


@st.composite
def trained_leaves(draw: st.DrawFn) -> TensorValue:
    """A parameter of random shape and dtype after random lookups and dense passes, or a
    constant."""
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.sampled_from([2, 2, 2, 0, 1, 3]))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    count = int(np.prod(shape))
    values = draw(st.lists(st.floats(-1e6, 1e6, width=32), min_size=count, max_size=count))
    tensor = Tensor(shape, values, dtype=dtype)
    if draw(st.booleans()) and draw(st.booleans()):
        return TensorValue.constant(tensor)
    leaf = TensorValue.parameter(tensor)
    for step in draw(st.lists(st.sampled_from(["lookup", "dense"]), max_size=3)):
        if step == "lookup" and rank == 2 and shape[0]:
            ids = draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=6))
            seed = draw(st.floats(-4, 4, width=32))
            rows = leaf.gather_rows(ids, (len(ids),))
            rows.backward_with_seed(np.full(rows.shape, seed, dtype=dtype))
        elif step == "dense":
            leaf.mul(Tensor(shape, np.full(count, 0.25), dtype=dtype)).sum().backward()
    return leaf


@given(trained_leaves(), st.sampled_from(PROTOCOLS))
def test_any_leaf_round_trips_and_deep_copies_bit_for_bit(leaf: TensorValue, protocol: int) -> None:
    before = leaf_state(leaf) if leaf.kind == "parameter" else None
    assert_same_leaf_contents(pickle.loads(pickle.dumps(leaf, protocol)), leaf)
    assert_same_leaf_contents(copy.deepcopy(leaf), leaf)
    if before is not None:
        assert leaf_state(leaf) == before


def test_the_pickled_state_holds_rows_as_int64_on_every_platform() -> None:
    rebuild, (node,) = with_row_sparse_gradient().__reduce__()
    assert rebuild is restore_value
    _, (state,) = leaf_state_module.reduce_node(node)
    gradient: Any = state["gradient"]
    assert gradient["form"] == "row_sparse" and gradient["rows"].dtype == np.int64
    assert gradient["summed"].dtype == np.int64
