"""``EmbeddingBag`` and ``functional.embedding_bag``: each bag's rows reduced by ``sum``, ``mean``
or ``max``, empty bags as zero rows, padding entries skipped, the first maximum winning a tie, a
row-sparse table gradient bit-identical to the plain flat-order loop (the padding row not even
listed), per-sample weights with their own gradient, and offsets checked in a documented order.
Every expectation comes from the plain loops of ``tests/reference.py``; the NumPy path and the
compiled path of the bag operation are both compared with them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llm_from_scratch.autograd.bag as bag_module
from llm_from_scratch.autograd import TensorValue, TokenIdOutOfBoundsError
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.errors import IdError, OptionError
from llm_from_scratch.nn import (
    EmbeddingBag,
    NamedParameter,
    SplitMix64,
    functional,
)
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ChangingInteger, CountedSequence, ShowsOtherValues
from checks import check_outcome, leaf_state, raises_rule
from conftest import KNOWN_TABLE
from reference import Raises, Returns, expected_bag_starts, plain_bag, plain_bag_gradients

VALUES = np.array(KNOWN_TABLE).reshape(4, 2)


def known_bag(mode: str = "mean", **options: Any) -> EmbeddingBag:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return EmbeddingBag.from_parameter(table, mode=mode, **options)


@pytest.fixture(params=["numpy", "compiled"])
def bag_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the bag operation on the NumPy path or on the compiled kernels, whatever the size."""
    compiled = request.param == "compiled"
    monkeypatch.setattr(bag_module, "runs_compiled", lambda values: compiled)
    yield request.param


# What the reductions compute ----------------------------------------------------------------


def test_each_mode_reduces_the_known_tables_bags_and_an_empty_bag_is_zero(bag_path: str) -> None:
    ids, offsets = [2, 1, 2, 3], [0, 3, 3]
    assert known_bag("sum")(ids, offsets).numpy().tolist() == [[80, 83], [0, 0], [40, 41]]
    assert known_bag("mean")(ids, offsets).numpy().tolist() == [
        [80 / 3, 83 / 3],
        [0, 0],
        [40, 41],
    ]
    assert known_bag("max")(ids, offsets).numpy().tolist() == [[30, 31], [0, 0], [40, 41]]


def test_two_dimensional_ids_are_one_bag_per_row(bag_path: str) -> None:
    two_d = known_bag("sum")([[2, 1], [0, 3]])
    one_d = known_bag("sum")([2, 1, 0, 3], [0, 2])
    assert two_d.shape == (2, 2) and two_d.numpy().tobytes() == one_d.numpy().tobytes()
    assert known_bag("max")(np.zeros((3, 0), dtype=np.int64)).numpy().tolist() == [[0, 0]] * 3


def test_padding_entries_add_nothing_and_count_for_nothing_in_a_mean(bag_path: str) -> None:
    layer = known_bag("mean", padding_idx=1)
    out = layer([2, 1, 0, 1, 1], [0, 3, 4])
    assert out.numpy().tolist() == [[20, 21], [0, 0], [0, 0]]  # (30 + 10) / 2; all-padding bags
    out.backward_with_seed(np.ones((3, 2)))
    sparse = layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.rows.tolist() == [0, 2]  # row 1 is not listed
    assert sparse.values.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_max_routes_each_coordinate_to_the_first_row_holding_the_largest_value(
    bag_path: str,
) -> None:
    values = np.array([[1.0, 5.0], [3.0, 5.0], [3.0, 0.0], [-1.0, -1.0]])
    table = TensorValue.parameter(Tensor((4, 2), values.reshape(-1)))
    out = functional.embedding_bag([0, 1, 2, 1, 0], table, [0, 3], mode="max")
    assert out.numpy().tolist() == [[3, 5], [3, 5]]
    out.backward_with_seed(np.array([[1.0, 2.0], [3.0, 4.0]]))
    # bag 0: coordinate 0 ties between rows 1 and 2 (row 1 first), coordinate 1 between 0 and 1
    # bag 1 holds rows 1 then 0: coordinate 0 from row 1, the tie in coordinate 1 to row 1
    assert table.gradient_snapshot().tolist() == [[0, 2], [4, 4], [0, 0], [0, 0]]  # type: ignore[union-attr]


def test_per_sample_weights_scale_rows_and_receive_their_own_gradient(bag_path: str) -> None:
    table = TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))
    weights = TensorValue.parameter(Tensor((3,), [0.5, 2.0, -1.0]))
    out = functional.embedding_bag(
        [2, 1, 3], table, [0, 2], mode="sum", per_sample_weights=weights, padding_idx=3
    )
    assert out.numpy().tolist() == [[55, 57.5], [0, 0]]
    out.backward_with_seed(np.array([[1.0, 10.0], [7.0, 7.0]]))
    assert weights.gradient_snapshot().tolist() == [340.0, 230.0, 0.0]  # type: ignore[union-attr]
    assert table.gradient_snapshot().tolist() == [[0, 0], [2, 20], [0.5, 5], [0, 0]]  # type: ignore[union-attr]


def test_constant_weights_give_no_gradient_and_a_frozen_table_a_constant() -> None:
    table = TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))
    out = functional.embedding_bag([[0, 1]], table, mode="sum", per_sample_weights=np.ones((1, 2)))
    out.backward_with_seed(np.ones((1, 2)))
    assert table.sparse_gradient.rows.tolist() == [0, 1]  # type: ignore[union-attr]
    frozen = TensorValue.constant(Tensor((4, 2), KNOWN_TABLE))
    weights = TensorValue.parameter(Tensor((1, 2), [1.0, 2.0]))
    out = functional.embedding_bag([[0, 1]], frozen, mode="sum", per_sample_weights=weights)
    assert out.kind == "operation"
    out.backward_with_seed(np.ones((1, 2)))
    assert weights.gradient_snapshot().tolist() == [[21.0, 41.0]]  # type: ignore[union-attr]


# Against the plain loops, on both paths -------------------------------------------------------


@st.composite
def bag_cases(draw: st.DrawFn) -> dict[str, Any]:
    rows = draw(st.integers(1, 7))
    width = draw(st.integers(1, 4))
    ids = draw(st.lists(st.integers(0, rows - 1), max_size=24))
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=6)))
    return {
        "rows": rows,
        "width": width,
        "ids": ids,
        "starts": [0, *cuts, len(ids)],
        "mode": draw(st.sampled_from(["sum", "mean", "max"])),
        "padding": draw(st.one_of(st.none(), st.integers(0, rows - 1))),
        "weighted": draw(st.booleans()),
        "dtype": draw(st.sampled_from(["float64", "float32"])),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@given(case=bag_cases())
def test_the_bag_and_its_gradients_equal_the_plain_loops_bit_for_bit(
    compiled: bool, case: dict[str, Any]
) -> None:
    rng = np.random.default_rng(case["seed"])
    dtype, mode = case["dtype"], case["mode"]
    values = rng.normal(size=(case["rows"], case["width"])).astype(dtype)
    values[rng.integers(0, case["rows"])] = values[0]  # ties for max
    ids, starts = case["ids"], case["starts"]
    weighted = case["weighted"] and mode == "sum"
    weights = rng.normal(size=len(ids)).astype(dtype) if weighted else None
    table = TensorValue.parameter(Tensor(values.shape, values, dtype=dtype))
    weight_leaf = (
        TensorValue.parameter(Tensor((len(ids),), weights, dtype=dtype)) if weighted else None
    )
    original = bag_module.runs_compiled
    bag_module.runs_compiled = lambda count: compiled  # type: ignore[assignment]
    try:
        out = functional.embedding_bag(
            np.array(ids, dtype=np.int64),
            table,
            starts[:-1],
            mode=mode,
            per_sample_weights=weight_leaf,
            padding_idx=case["padding"],
        )
        upstream = rng.normal(size=out.shape).astype(dtype)
        upstream[::3] = -0.0
        out.backward_with_seed(upstream)
    finally:
        bag_module.runs_compiled = original  # type: ignore[assignment]
    expected = plain_bag(values, ids, starts, mode, case["padding"], weights)
    assert out.numpy().tobytes() == expected.output.tobytes()
    gradient, weight_gradient = plain_bag_gradients(
        values, ids, starts, mode, case["padding"], upstream, weights
    )
    assert table.gradient_snapshot().numpy().tobytes() == gradient.tobytes()  # type: ignore[union-attr]
    listed = table.sparse_gradient.rows.tolist()  # type: ignore[union-attr]
    assert case["padding"] is None or case["padding"] not in listed
    if weight_leaf is not None:
        assert weight_leaf.gradient_snapshot().numpy().tobytes() == weight_gradient.tobytes()  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_a_large_bag_runs_the_compiled_kernels_and_matches_the_loops(dtype: str, mode: str) -> None:
    rng = np.random.default_rng(8)
    layer = EmbeddingBag.new("w", 300, 64, SplitMix64.from_seed(4), dtype, mode=mode, padding_idx=7)
    ids = rng.integers(0, 300, size=(64, 20))
    ids[:, 0] = 7
    out = layer(ids)
    assert ids.size * 64 >= COMPILED_KERNEL_MIN_VALUES
    values = layer.table.tensor.numpy()
    starts = list(range(0, ids.size + 1, 20))
    flat = ids.reshape(-1).tolist()
    assert out.numpy().tobytes() == plain_bag(values, flat, starts, mode, 7).output.tobytes()
    upstream = rng.normal(size=out.shape).astype(dtype)
    out.backward_with_seed(upstream)
    gradient, _ = plain_bag_gradients(values, flat, starts, mode, 7, upstream)
    assert layer.table.tensor.gradient_snapshot().numpy().tobytes() == gradient.tobytes()  # type: ignore[union-attr]
    assert 7 not in layer.table.tensor.sparse_gradient.rows.tolist()  # type: ignore[union-attr]


# The checks -----------------------------------------------------------------------------------


OFFSET_ITEMS = st.one_of(
    st.integers(-2, 8),
    st.integers(0, 6),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1, max_value=8),
    st.none(),
    st.just(np.int32(2)),
    st.just(2**70),
)


@st.composite
def offset_containers(draw: st.DrawFn) -> object:
    """Offsets for six IDs: mostly well formed, each with at most one fault of one kind."""
    kind = draw(st.sampled_from(["list", "list", "list", "array", "tuple", "other"]))
    if kind == "other":
        return draw(st.sampled_from([None, "01", 0, np.zeros((1, 2), dtype=np.int64)]))
    offsets: list[object] = [0, *sorted(draw(st.lists(st.integers(0, 6), max_size=4)))]
    fault = draw(st.sampled_from(["none", "none", "value", "first", "swap", "empty", "last"]))
    position = draw(st.integers(0, len(offsets) - 1))
    if fault == "value":
        offsets[position] = draw(OFFSET_ITEMS)
    elif fault == "first":
        offsets[0] = draw(st.integers(1, 6))
    elif fault == "swap" and len(offsets) > 2:
        offsets[1], offsets[2] = offsets[2], offsets[1]
    elif fault == "empty":
        offsets = []
    elif fault == "last":
        offsets.append(draw(st.integers(0, 8)))
    if kind == "array" and all(type(item) is int and abs(item) < 2**62 for item in offsets):
        return np.array(offsets, dtype=np.int64)
    return tuple(offsets) if kind == "tuple" else offsets


@given(
    st.sampled_from([(6,), (6,), (6,), (6,), (2, 3), (), (1, 1, 6)]),
    offset_containers(),
    st.booleans(),
)
def test_the_bags_and_offsets_raise_the_documented_error_in_order(
    id_shape: tuple[int, ...], offsets: object, include_last_offset: bool
) -> None:
    ids = np.zeros(id_shape, dtype=np.int64)
    expected = expected_bag_starts(id_shape, offsets, include_last_offset)
    layer = known_bag("sum")
    before = leaf_state(layer.table.tensor)
    result = check_outcome(
        lambda: layer(ids, offsets, include_last_offset=include_last_offset), expected
    )
    assert leaf_state(layer.table.tensor) == before
    if isinstance(expected, Returns):
        starts = expected.value
        assert result.shape == (len(starts) - 1, 2)  # type: ignore[arg-type]
        sizes = np.diff(starts)  # type: ignore[arg-type]
        assert result.numpy()[:, 0].tolist() == [10.0 * size for size in sizes]


def test_each_offset_error_names_its_offending_offset() -> None:
    layer = known_bag("sum")

    def refused(rule: str, **fields: object) -> Raises:
        return Raises(IdError, {"rule": f"offsets.{rule}", **fields})

    cases: list[tuple[object, bool, Raises]] = [
        (np.zeros((1, 2), dtype=np.int64), False, refused("container")),
        ([], False, refused("empty")),
        ([0, 1.5], False, refused("type", position=1, offset=1.5)),
        ([0, -1], False, refused("range", position=1, offset=-1, bound=3)),
        ([0, 4], False, refused("range", position=1, offset=4, bound=3)),
        ([2, 3], False, refused("first", offset=2)),
        ([0, 2, 1], False, refused("increasing", position=2, offset=1, bound=2)),
        ([0, 2], True, refused("last", offset=2, bound=3)),
    ]
    for offsets, last, expected in cases:
        check_outcome(
            lambda offsets=offsets, last=last: layer([0, 1, 2], offsets, include_last_offset=last),
            expected,
        )


def test_offsets_are_read_once_like_ids() -> None:
    layer = known_bag("sum")
    changing = ChangingInteger([2, 0])
    out = layer([0, 1, 2, 3], [0, changing])
    assert changing.reads == 1 and out.numpy()[:, 0].tolist() == [30.0, 70.0]
    with raises_rule(IdError, "offsets.container"):
        layer([0, 1], CountedSequence([0, 1, 1], 2))
    subclass = np.array([0, 1]).view(ShowsOtherValues)
    assert layer([0, 1, 2], subclass).numpy()[:, 0].tolist() == [10.0, 50.0]
    with raises_rule(IdError, "offsets.container"):
        layer([0, 1], np.ma.array([0, 1]))


def test_include_last_offset_takes_boundaries_and_zero_bags_are_fine() -> None:
    layer = known_bag("sum")
    assert layer([0, 1, 2], [0, 1, 3], include_last_offset=True).numpy()[:, 0].tolist() == [10, 50]
    assert layer([], [0], include_last_offset=True).shape == (0, 2)
    assert layer(np.zeros((0, 5), dtype=np.int64)).shape == (0, 2)


def test_the_call_checks_the_flag_the_weights_mode_then_ids_layout_offsets_and_weights() -> None:
    mean = known_bag("mean")
    with raises_rule(OptionError, "option.type"):
        mean([9], "bad", per_sample_weights=[1.0], include_last_offset=1)  # type: ignore[arg-type]
    with raises_rule(IdError, "weights.mode", value="mean"):
        mean([9], "bad", per_sample_weights=[1.0])  # type: ignore[arg-type]
    summed = known_bag("sum")
    with pytest.raises(TokenIdOutOfBoundsError):
        summed([9], "bad", per_sample_weights=[1.0])  # type: ignore[arg-type]
    with raises_rule(IdError, "bag.layout", rank=2, offsets_given=True):
        summed([[0]], [0], per_sample_weights=[1.0])  # type: ignore[arg-type]
    with raises_rule(IdError, "offsets.container"):
        summed([0], "bad", per_sample_weights=[1.0])  # type: ignore[arg-type]
    with raises_rule(IdError, "weights.type", value="list"):
        summed([0], [0], per_sample_weights=[1.0])  # type: ignore[arg-type]
    with raises_rule(IdError, "weights.type"):
        summed([0], [0], per_sample_weights=Tensor((1,), [1.0], dtype=np.float32))
    with raises_rule(IdError, "weights.shape", expected=(1, 2), value=(2,)):
        summed([[0, 1]], per_sample_weights=np.ones(2))


def test_the_options_are_checked_mode_first_and_shown_in_the_repr() -> None:
    with raises_rule(OptionError, "option.value", name="mode"):
        known_bag("min", padding_idx=9)
    with raises_rule(OptionError, "option.value", name="padding_idx"):
        known_bag("max", padding_idx=9)
    layer = EmbeddingBag.new("w", 4, 2, SplitMix64.from_seed(1), mode="max", padding_idx=-1)
    assert (layer.mode, layer.padding_idx) == ("max", 3)
    assert "mode='max'" in repr(layer) and "padding_idx=3" in repr(layer)
    assert layer.table.tensor.numpy()[3].tolist() == [0.0, 0.0]
    with raises_rule(OptionError, "option.value"):
        functional.embedding_bag([[0]], layer.table.tensor, mode="SUM")


def test_a_clone_shares_the_table_and_a_deep_copy_owns_an_equal_one() -> None:
    import copy

    layer = known_bag("max", padding_idx=2)
    for twin in (layer.clone(), copy.copy(layer)):
        assert twin.table.tensor.is_same_node(layer.table.tensor)
        assert (twin.mode, twin.padding_idx) == ("max", 2)
    deep = copy.deepcopy(layer)
    assert not deep.table.tensor.is_same_node(layer.table.tensor)
    assert deep.table.tensor.numpy().tobytes() == layer.table.tensor.numpy().tobytes()
    assert (deep.mode, deep.padding_idx) == ("max", 2)
