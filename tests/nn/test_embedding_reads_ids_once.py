"""The lookup reads each token ID once, from the memory the caller's array holds, into its own
index buffer, and gathers exactly the IDs it checked there.

The reference model is the 4x2 known table and the IDs as the test built them (the memory of
an array, the first answer of a changing integer); every rejection leaves the table, its
stored gradient and its revision as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llm_from_scratch.autograd.gather as gather_module
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES
from llm_from_scratch.errors import IdError
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import (
    ChangingInteger,
    CountedSequence,
    FailingInteger,
    LiesAboutItsLayout,
    ShowsOtherValues,
    array_layouts,
    masks,
)
from checks import check_lookup, leaf_state, raises_rule
from conftest import KNOWN_TABLE
from reference import Outcome, Raises, expected_lookup
from strategies import INTEGER_DTYPES, numpy_integers

TABLE = np.array(KNOWN_TABLE).reshape(4, 2)
UPSTREAM = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])


def trained_layer() -> Embedding:
    """The known table, with a row-sparse stored gradient already (so a change would show)."""
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    layer.forward([2, 1, 2], (3,)).backward_with_seed(UPSTREAM)
    return layer


def check_lookup_leaving_the_table(layer: Embedding, call: Any, expected: Outcome) -> None:
    """The lookup raised the expected error or gave the expected rows; the table, its stored
    gradient and its revision are as they were."""
    before = leaf_state(layer.table.tensor)
    check_lookup(call, TABLE, expected)
    assert leaf_state(layer.table.tensor) == before


@st.composite
def integer_arrays(draw: st.DrawFn) -> np.ndarray[Any, Any]:
    """A 1-D array of any integer dtype whose values are mostly rows of the known table."""
    dtype = draw(st.sampled_from(INTEGER_DTYPES))
    values = draw(st.lists(numpy_integers(dtype, -2, 6), max_size=10))
    return np.array(values, dtype=dtype)


@given(integer_arrays(), st.data(), st.booleans())
def test_an_array_subclass_is_read_as_the_memory_it_holds_not_as_its_methods_show(
    base: np.ndarray[Any, Any], data: st.DataObject, shaped_call: bool
) -> None:
    layer = trained_layer()
    array = data.draw(array_layouts(base), label="layout").view(ShowsOtherValues)
    if shaped_call:
        column = np.ndarray.reshape(array, (-1, 1))  # still a ShowsOtherValues, two axes
        expected = expected_lookup(TABLE, base, (base.size, 1), "forward")
        check_lookup_leaving_the_table(layer, lambda: layer(column), expected)
    else:
        expected = expected_lookup(TABLE, base, (base.size,), "forward")
        check_lookup_leaving_the_table(layer, lambda: layer.forward(array, (base.size,)), expected)


@given(integer_arrays(), st.data(), st.sampled_from(["forward", "call", "gather"]))
def test_a_masked_array_is_refused_as_a_container_whatever_its_mask(
    base: np.ndarray[Any, Any], data: st.DataObject, boundary: str
) -> None:
    layer = trained_layer()
    masked = np.ma.array(base, mask=data.draw(masks(base.size), label="mask"))
    before = leaf_state(layer.table.tensor)
    if boundary == "gather":
        with raises_rule(IdError, "gather.container"):
            layer.table.tensor.gather_rows(masked, (base.size,))
    else:
        with raises_rule(IdError, "ids.container"):
            layer(masked) if boundary == "call" else layer.forward(masked, (base.size,))
    assert leaf_state(layer.table.tensor) == before


def test_the_masked_example_is_refused_instead_of_gathering_a_clipped_row() -> None:
    layer = trained_layer()
    before = leaf_state(layer.table.tensor)
    with raises_rule(IdError, "ids.container") as caught:
        layer.forward(np.ma.array([0, 10**6], mask=[0, 1]), (2,))
    assert "masked" in caught.value.detail
    assert caught.value.__cause__ is None
    assert leaf_state(layer.table.tensor) == before


@pytest.mark.parametrize("boundary", ["forward", "call"])
def test_a_large_masked_array_is_refused_before_any_kernel_runs(boundary: str) -> None:
    layer = trained_layer()
    count = COMPILED_KERNEL_MIN_VALUES + 7
    masked = np.ma.array(np.zeros(count, dtype=np.int64), mask=np.zeros(count, dtype=bool))
    with raises_rule(IdError, "ids.container"):
        layer(masked) if boundary == "call" else layer.forward(masked, (count,))


def test_a_large_subclass_is_gathered_from_its_memory_by_the_compiled_kernel() -> None:
    layer = trained_layer()
    count = COMPILED_KERNEL_MIN_VALUES + 7
    base = np.arange(count, dtype=np.int32) % 4
    output = layer.forward(base.view(ShowsOtherValues), (count,))
    assert output.numpy().tobytes() == TABLE[base].tobytes()
    with raises_rule(IdError, "ids.out-of-range") as caught:
        spoiled = base.copy()
        spoiled[count - 1] = 4
        layer(spoiled.view(ShowsOtherValues))
    assert (caught.value.position, caught.value.id) == (count - 1, 4)


class RecordingKernel:
    """Stands in for a gather kernel: records the index buffer it is given, then runs."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.indices: list[np.ndarray[Any, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.indices.append(args[2] if len(args) > 2 else args[1])
        return self.kernel(*args, **kwargs)


@pytest.mark.parametrize("count", [5, COMPILED_KERNEL_MIN_VALUES + 1])
def test_the_kernel_receives_the_plans_own_read_only_copy_of_the_checked_ids(
    count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = trained_layer()
    base = np.arange(count, dtype=np.int64) % 4
    caller = base.view(ShowsOtherValues)
    compiled = RecordingKernel(gather_module.gather_rows_into)
    taken = RecordingKernel(gather_module.take_rows)
    monkeypatch.setattr(gather_module, "gather_rows_into", compiled)
    monkeypatch.setattr(gather_module, "take_rows", taken)
    layer.forward(caller, (count,))
    (indices,) = compiled.indices + taken.indices
    assert type(indices) is np.ndarray and indices.dtype == np.intp
    assert not indices.flags.writeable
    assert not np.shares_memory(indices, base)
    assert indices.tolist() == base.tolist()


@st.composite
def ids_with_changing_integers(draw: st.DrawFn) -> tuple[list[object], list[int]]:
    """IDs where some are integers whose answer changes on every read; and the first answers."""
    plain = draw(st.lists(st.integers(-1, 5), min_size=1, max_size=8))
    ids: list[object] = []
    for value in plain:
        if draw(st.booleans()):
            later = draw(st.lists(st.integers(-(2**70), 2**70), min_size=1, max_size=3))
            ids.append(ChangingInteger([value, *later]))
        else:
            ids.append(value)
    return ids, plain


@given(ids_with_changing_integers(), st.sampled_from(["forward", "call", "gather"]))
def test_an_integer_whose_answer_changes_is_read_once_and_that_answer_is_gathered(
    case: tuple[list[object], list[int]], boundary: str
) -> None:
    ids, first_answers = case
    layer = trained_layer()
    shape = (1, len(ids)) if boundary == "call" else (len(ids),)
    reference_boundary = "gather" if boundary == "gather" else "forward"
    expected = expected_lookup(TABLE, first_answers, shape, reference_boundary)
    calls = {
        "forward": lambda: layer.forward(ids, (len(ids),)),
        "call": lambda: layer([ids]),
        "gather": lambda: layer.table.tensor.gather_rows(ids, (len(ids),)),
    }
    check_lookup_leaving_the_table(layer, calls[boundary], expected)
    stop = expected.attributes["position"] if isinstance(expected, Raises) else len(ids)
    for position, item in enumerate(ids):
        if isinstance(item, ChangingInteger):
            assert item.reads == (1 if position <= stop else 0), (position, item)


def test_an_integer_that_cannot_be_read_is_a_non_integer_id_at_its_position() -> None:
    layer = trained_layer()
    before = leaf_state(layer.table.tensor)
    failing = FailingInteger()
    with raises_rule(IdError, "ids.type") as caught:
        layer.forward([1, failing, 9], (3,))
    assert (caught.value.position, caught.value.value) == (1, failing)
    assert leaf_state(layer.table.tensor) == before


@given(
    st.lists(st.integers(0, 3), max_size=6),
    st.integers(0, 8),
    st.integers(0, 8),
)
def test_a_sequence_whose_length_disagrees_with_its_items_is_a_count_error(
    items: list[int], length: int, expected: int
) -> None:
    layer = trained_layer()
    sequence = CountedSequence(items, length)
    before = leaf_state(layer.table.tensor)
    if length == expected == len(items):
        assert layer.forward(sequence, (expected,)).numpy().tolist() == TABLE[items].tolist()
        assert sequence.length_reads == 1
        return
    with raises_rule(IdError, "ids.count") as caught:
        layer.forward(sequence, (expected,))
    # The length is compared before any item is read; the items, at most one past it.
    actual = length if length != expected else min(len(items), expected + 1)
    assert (caught.value.expected, caught.value.actual) == (expected, actual)
    assert sequence.length_reads == 1
    assert leaf_state(layer.table.tensor) == before


class LyingList(list):  # type: ignore[type-arg]
    """A list whose length, indexing and iteration show other items than it holds."""

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: Any) -> Any:
        return 3

    def __iter__(self) -> Any:
        return iter([3])


def test_nested_list_subclasses_are_read_as_the_items_they_hold() -> None:
    layer = trained_layer()
    nest = LyingList([LyingList([2, 1]), LyingList([0, 2])])
    output = layer(nest)
    assert output.shape == (2, 2, 2)
    assert output.numpy().reshape(4, 2).tolist() == TABLE[[2, 1, 0, 2]].tolist()


def test_other_array_subclasses_are_read_as_the_data_they_hold(tmp_path: Any) -> None:
    layer = trained_layer()
    matrix = np.array([[2, 1, 2]]).view(np.matrix)
    assert layer(matrix).numpy().tolist() == [TABLE[[2, 1, 2]].tolist()]
    with raises_rule(IdError, "ids.container"):
        layer.forward(matrix, (3,))  # a matrix always has two axes
    mapped = np.memmap(tmp_path / "ids", dtype=np.int16, mode="w+", shape=(3,))
    mapped[:] = [3, 0, 3]
    assert layer.forward(mapped, (3,)).numpy().tolist() == TABLE[[3, 0, 3]].tolist()
    records = np.rec.array([(1, 2)], dtype=[("a", np.int64), ("b", np.int64)])
    with raises_rule(IdError, "ids.type") as caught:
        layer.forward(records, (1,))
    assert caught.value.position == 0


def test_an_array_subclass_that_lies_about_its_dtype_and_shape_is_read_as_it_is() -> None:
    layer = trained_layer()
    grid = np.array([[2, 1], [0, 3]], dtype=np.int16).view(LiesAboutItsLayout)
    assert layer(grid).numpy().tolist() == TABLE[[[2, 1], [0, 3]]].tolist()
    flat = np.array([3, 2, 1], dtype=np.int64).view(LiesAboutItsLayout)
    assert layer.forward(flat, (3,)).numpy().tolist() == TABLE[[3, 2, 1]].tolist()
    with raises_rule(IdError, "ids.count") as caught:
        layer.forward(flat, (0,))
    assert caught.value.actual == 3
