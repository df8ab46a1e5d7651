"""``TensorValue.gather_rows``: the row lookup on any rank-two table, its checks in documented
order, and the scatter-add of its VJP.

The properties generate tables in every stored-gradient state, index shapes with bad, zero and
huge extents, and IDs of every kind; the call raises the reference model's first error or
equals its plain loop, and in both outcomes the table's state stays as it was.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    TensorValue,
)
from llm_from_scratch.autograd import gather as gather_module
from llm_from_scratch.errors import (
    RULES,
    AllocationError,
    IdError,
    LlmError,
    ShapeError,
    TableError,
)
from llm_from_scratch.nn import Embedding
from llm_from_scratch.tensor import Tensor

from checks import check_lookup, check_outcome, leaf_state, raises_rule, within_seconds
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM
from reference import Raises, element_count, expected_lookup
from strategies import flat_id_containers, layers, shapes

HUGE_SHAPE = (2**31, 2**31)
FITTING_HUGE_SHAPE = (2**30, 2**31)  # with the known table's d = 2 the output still fits
UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(3, 2)


def known_table() -> TensorValue:
    return TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))


def test_gather_selects_rows_and_scatter_adds_repeated_ids() -> None:
    table = known_table()
    out = table.gather_rows([2, 1, 2], (1, 3))
    assert out.numpy().tolist() == [[[30, 31], [20, 21], [30, 31]]]
    out.backward_with_seed(np.array([1, 0, 0, 2, 3, 4], dtype=float).reshape(1, 3, 2))
    assert table.gradient.numpy().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]  # type: ignore[union-attr]


def test_gather_checks_the_table_rank_first() -> None:
    vector = TensorValue.parameter(Tensor((3,), [1, 2, 3]))
    with raises_rule(TableError, "gather.table-rank") as caught:
        vector.gather_rows([9, 9], (-1,))
    assert caught.value.rank == 1
    assert str(caught.value) == "row gather needs a rank-two table, got rank 1"


def test_gather_checks_the_index_shape_layout_before_the_count() -> None:
    with raises_rule(ShapeError, "shape.invalid") as caught:
        known_table().gather_rows([9], (-2,))
    assert caught.value.__cause__.rule == "shape.negative-extent"


def test_gather_checks_the_count_before_the_ids() -> None:
    with raises_rule(IdError, "gather.count") as caught:
        known_table().gather_rows([9, 9, 9], (2,))
    assert (caught.value.expected, caught.value.actual) == (2, 3)
    assert str(caught.value) == "gather index shape needs 2 IDs, but received 3"


def test_gather_reports_the_first_out_of_bounds_index_in_flat_order() -> None:
    with raises_rule(IdError, "gather.out-of-range") as caught:
        known_table().gather_rows([1, 4, 9], (3,))
    assert (caught.value.id, caught.value.position, caught.value.vocabulary_size) == (4, 1, 4)
    assert str(caught.value) == "gather ID 4 at flat position 1 is out of bounds for 4 rows"


def test_gather_reports_a_non_integer_index_at_its_position() -> None:
    with raises_rule(IdError, "gather.type") as caught:
        known_table().gather_rows([1, True], (2,))
    assert caught.value.position == 1


def test_gather_rejects_indices_that_are_not_flat() -> None:
    with raises_rule(IdError, "gather.container"):
        known_table().gather_rows(np.zeros((1, 2), dtype=np.int64), (2,))


def test_gather_errors_belong_to_the_autodiff_family() -> None:
    for rule in ("gather.table-rank", "gather.count", "gather.out-of-range"):
        assert issubclass(RULES[rule].family, LlmError)


def test_the_plan_cannot_be_built_outside_its_constructors() -> None:
    facts = (np.zeros(1, dtype=np.intp), (1,), (4, 2), gather_module.RowGradientRule())
    with pytest.raises(TypeError):
        gather_module.RowGatherPlan(*facts, key=object())
    with pytest.raises(TypeError):
        gather_module.RowGatherPlan(*facts)


def test_the_trusted_constructor_does_not_repeat_the_checks() -> None:
    plan = gather_module.plan_from_validated_indices(np.array([1, 3], dtype=np.intp), (2,), (4, 2))
    assert (plan.output_shape, plan.output_elements) == ((2, 2), 4)
    assert not plan.indices.flags.writeable


def test_mutating_flat_ids_after_a_gather_changes_nothing_recorded(known_layer: Embedding) -> None:
    ids = np.array([2, 1, 2], dtype=np.int32)
    output = known_layer.table.tensor.gather_rows(ids, (3,))
    ids[:] = 3
    output.backward_with_seed(UPSTREAM)
    sparse = known_layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.rows.tolist() == [1, 2]


def test_gather_rows_of_a_huge_lazy_sequence_is_a_typed_allocation_error(
    known_layer: Embedding,
) -> None:
    with within_seconds(1.0), raises_rule(AllocationError, "output.allocation"):
        known_layer.table.tensor.gather_rows(range(2**61), FITTING_HUGE_SHAPE)


def test_gather_rows_with_a_huge_index_shape_fails_on_the_count(known_layer: Embedding) -> None:
    with within_seconds(1.0), raises_rule(IdError, "gather.count") as caught:
        known_layer.table.tensor.gather_rows([0], HUGE_SHAPE)
    assert (caught.value.expected, caught.value.actual) == (2**62, 1)


# Properties ----------------------------------------------------------------------------------


@given(layers(), st.data())
def test_gather_rows_raises_the_first_documented_error_or_equals_the_plain_loop(
    layer: Embedding, data: st.DataObject
) -> None:
    shape = data.draw(shapes(), label="index_shape")
    ids = data.draw(flat_id_containers(layer.vocabulary_size, shape), label="indices")
    leaf = layer.table.tensor
    before, table = leaf_state(leaf), leaf.value_snapshot().numpy()
    expected = expected_lookup(table, ids, shape, "gather")
    check_lookup(lambda: leaf.gather_rows(ids, shape), table, expected)  # type: ignore[arg-type]
    assert leaf_state(leaf) == before


@given(
    st.lists(st.integers(0, 2), max_size=3).map(tuple).filter(lambda shape: len(shape) != 2),
    st.data(),
)
def test_gather_rows_on_a_table_of_another_rank_reports_the_rank_before_anything_else(
    table_shape: tuple[int, ...], data: st.DataObject
) -> None:
    count = element_count(table_shape) or 0
    leaf = TensorValue.parameter(Tensor(table_shape, np.arange(count, dtype=float)))
    shape = data.draw(shapes(), label="index_shape")
    ids = data.draw(flat_id_containers(3, shape), label="indices")
    before = leaf_state(leaf)
    check_outcome(
        lambda: leaf.gather_rows(ids, shape),  # type: ignore[arg-type]
        Raises(TableError, {"rule": "gather.table-rank", "rank": len(table_shape)}),
    )
    assert leaf_state(leaf) == before
