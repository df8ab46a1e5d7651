"""The row gather's gradient rule: the one VJP leaves the padding row out of the row-sparse
gradient and divides each row's flat-order sum by its use count, from the rule in the plan (the
operation's saved record), and a non-finite sum is still reported at its dense index."""

from __future__ import annotations

import numpy as np

from llm_from_scratch.autograd import RowSparseGradient, TensorValue
from llm_from_scratch.autograd.gather import (
    RowGatherPlan,
    RowGradientRule,
    gather_rows_vjp,
    plan_from_validated_indices,
)
from llm_from_scratch.errors import NonFiniteError
from llm_from_scratch.nn import functional
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import KNOWN_TABLE


def plan_of(ids: list[int], rule: RowGradientRule) -> RowGatherPlan:
    indices = np.array(ids, dtype=np.intp)
    return plan_from_validated_indices(indices, (len(ids),), (4, 2), rule)


def test_a_plan_is_plain_unless_its_rule_says_otherwise() -> None:
    plain = plan_from_validated_indices(np.array([2, 1], dtype=np.intp), (2,), (4, 2))
    assert plain.has_plain_gradient and plain.gradient_rule == RowGradientRule()
    assert not plan_of([2, 1], RowGradientRule(padding_row=1)).has_plain_gradient
    assert not plan_of([2, 1], RowGradientRule(scale_by_frequency=True)).has_plain_gradient


def test_the_vjp_applies_the_rule_to_the_upstream_rows() -> None:
    upstream = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0], [5.0, 5.0]])
    ids = [2, 1, 2, 2]
    (both,) = gather_rows_vjp(plan_of(ids, RowGradientRule(1, True)), upstream)
    assert both.rows.tolist() == [2] and both.values.tolist() == [[3.0, 3.0]]
    (scaled,) = gather_rows_vjp(plan_of(ids, RowGradientRule(None, True)), upstream)
    assert scaled.rows.tolist() == [1, 2] and scaled.values.tolist() == [[0, 2], [3, 3]]


def test_leaving_out_a_row_keeps_the_summed_positions_pointing_at_their_rows() -> None:
    gradient = RowSparseGradient.from_scatter(
        np.array([0, 0, 1, 3, 3], dtype=np.intp), np.ones((5, 2)), (4, 2)
    )
    assert gradient.summed.tolist() == [0, 2]  # type: ignore[union-attr]
    without = gradient.without_row(0)
    assert without.rows.tolist() == [1, 3] and without.summed.tolist() == [1]  # type: ignore[union-attr]
    assert gradient.without_row(2) is gradient


def test_a_non_finite_sum_beside_the_padding_row_is_reported_at_its_dense_index() -> None:
    table = TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))
    out = functional.embedding([0, 0, 3, 3], table, padding_idx=0)
    seed = np.full((4, 2), 1.5e308)
    with raises_rule(NonFiniteError, "gradient.non-finite") as caught:
        out.backward_with_seed(seed)
    assert caught.value.index == 6  # row 3, feature 0; the padding row 0 overflows too
    assert table.sparse_gradient.rows.size == 0  # type: ignore[union-attr]
