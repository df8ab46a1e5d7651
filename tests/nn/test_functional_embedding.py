"""``functional.embedding`` and the lookup options of ``Embedding``: the layer is a thin wrapper
over the function, the options are checked once and in order (the property compares every
option value with the reference model), the padding row gets no gradient and is not listed, and
``scale_grad_by_freq`` divides each row's flat-order sum by its count. The 4x2 known table
throughout."""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import TensorValue, TokenIdOutOfBoundsError, no_grad
from llm_from_scratch.errors import OptionError, TableError
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64, functional
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ChangingInteger, ChangingReal
from checks import check_outcome, leaf_state, raises_rule
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM
from reference import (
    Raises,
    expected_lookup_options,
    plain_option_gradient,
    xavier_table,
)

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def known_table() -> TensorValue:
    return TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))


def test_the_function_looks_up_like_the_layer_call_and_sums_repeated_ids(
    known_layer: Embedding,
) -> None:
    table = known_table()
    out = functional.embedding([[2, 1, 2]], table)
    assert out.numpy().tobytes() == known_layer([[2, 1, 2]]).numpy().tobytes()
    out.backward_with_seed(UPSTREAM)
    assert table.gradient_snapshot().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]  # type: ignore[union-attr]


def test_the_padding_row_is_looked_up_but_receives_no_gradient_and_is_not_listed() -> None:
    table = known_table()
    out = functional.embedding([[2, 1, 2]], table, padding_idx=2)
    assert out.numpy().tolist() == [[[30, 31], [20, 21], [30, 31]]]
    out.backward_with_seed(UPSTREAM)
    sparse = table.sparse_gradient
    assert sparse is not None and sparse.rows.tolist() == [1]
    assert table.gradient_snapshot().tolist() == [[0, 0], [0, 2], [0, 0], [0, 0]]  # type: ignore[union-attr]


def test_a_negative_padding_idx_counts_from_the_end_and_is_stored_as_a_row(
    known_layer: Embedding,
) -> None:
    layer = Embedding.from_parameter(known_layer.table, padding_idx=-2)
    assert layer.padding_idx == 2
    layer([[2, 1, 2]]).backward_with_seed(UPSTREAM)
    assert layer.table.tensor.sparse_gradient.rows.tolist() == [1]  # type: ignore[union-attr]


def test_scale_grad_by_freq_divides_each_row_sum_by_the_times_its_id_occurs() -> None:
    table = known_table()
    functional.embedding([[2, 1, 2]], table, scale_grad_by_freq=True).backward_with_seed(UPSTREAM)
    # row 2: ([1, 0] + [3, 4]) / 2; row 1 occurs once
    assert table.gradient_snapshot().tolist() == [[0, 0], [0, 2], [2, 2], [0, 0]]  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("padding_idx", [None, 0, -1])
@pytest.mark.parametrize("scale", [False, True])
def test_the_gradient_with_options_equals_the_plain_loop_bit_for_bit(
    dtype: str, padding_idx: int | None, scale: bool
) -> None:
    rng = np.random.default_rng(11)
    values = rng.normal(size=(9, 3)).astype(dtype)
    ids = rng.integers(0, 9, size=(5, 7))
    ids[0, :3] = 8  # the last row, three times
    table = TensorValue.parameter(Tensor(values.shape, values, dtype=dtype))
    out = functional.embedding(ids, table, padding_idx=padding_idx, scale_grad_by_freq=scale)
    upstream = rng.normal(size=out.shape).astype(dtype)
    upstream[1, 2] = -0.0
    out.backward_with_seed(upstream)
    padding_row = None if padding_idx is None else padding_idx % 9
    expected = plain_option_gradient(
        ids.reshape(-1).tolist(), upstream.reshape(-1, 3), 9, 3, padding_row, scale
    )
    assert table.gradient_snapshot().numpy().tobytes() == expected.tobytes()  # type: ignore[union-attr]
    listed = table.sparse_gradient.rows.tolist()  # type: ignore[union-attr]
    assert listed == sorted(set(ids.reshape(-1).tolist()) - {padding_row})


def test_the_function_checks_the_table_the_options_an_operation_table_then_the_ids() -> None:
    constant = TensorValue.constant(Tensor((4, 2), KNOWN_TABLE))
    vector = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
    with raises_rule(TableError, "table.type") as not_a_value:
        functional.embedding([9], np.zeros((4, 2)), padding_idx=9)  # type: ignore[arg-type]
    assert not_a_value.value.table_type == "numpy.ndarray"
    with raises_rule(TableError, "table.rank"):
        functional.embedding([9], vector, padding_idx=9)
    with raises_rule(OptionError, "option.value"):
        functional.embedding([9], known_table(), padding_idx=9, max_norm=-1.0)
    with raises_rule(OptionError, "option.value"):
        functional.embedding([9], constant, max_norm=-1.0)
    result = constant.add(known_table())
    with raises_rule(OptionError, "option.value") as operation:
        functional.embedding([9], result, max_norm=1.0)
    assert operation.value.name == "max_norm"
    with pytest.raises(TokenIdOutOfBoundsError):
        functional.embedding([9], constant, max_norm=1.0)


def test_max_norm_is_refused_for_an_operation_result_which_never_changes() -> None:
    result = known_table().add(Tensor((4, 2), [0.0] * 8))
    with raises_rule(OptionError, "option.value") as caught:
        functional.embedding([0], result, max_norm=1.0)
    assert caught.value.requirement == (
        "None when the table is an operation result (renormalize a parameter or a constant table)"
    )


def test_a_constant_table_gives_a_constant_lookup_that_carries_no_gradient() -> None:
    constant = TensorValue.constant(Tensor((4, 2), KNOWN_TABLE))
    out = functional.embedding([[2, 1]], constant, padding_idx=1, scale_grad_by_freq=True)
    assert out.kind == "constant"
    assert out.numpy().tolist() == [[[30, 31], [20, 21]]]


def test_the_function_takes_any_rank_two_table_even_one_without_rows() -> None:
    empty = TensorValue.parameter(Tensor((0, 3), []))
    out = functional.embedding(np.zeros((2, 0), dtype=np.int64), empty)
    assert out.shape == (2, 0, 3)
    with pytest.raises(TokenIdOutOfBoundsError):
        functional.embedding([0], empty)


def test_new_zeroes_the_padding_row_after_drawing_the_whole_table() -> None:
    plain = Embedding.new("w", 5, 3, SplitMix64.from_seed(7))
    padded = Embedding.new("w", 5, 3, SplitMix64.from_seed(7), padding_idx=-2)
    expected, _ = xavier_table(7, 5, 3, np.float64)
    expected[3] = 0.0
    assert padded.table.tensor.numpy().tobytes() == expected.tobytes()
    same = [0, 1, 2, 4]
    assert np.array_equal(plain.table.tensor.numpy()[same], padded.table.tensor.numpy()[same])


def test_from_parameter_keeps_the_padding_rows_values() -> None:
    layer = Embedding.from_parameter(
        NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE)), padding_idx=1
    )
    assert layer([1]).numpy().tolist() == [[20.0, 21.0]]


def test_the_options_are_fields_shown_in_the_repr_and_kept_by_clones_and_copies() -> None:
    layer = Embedding.new(
        "token_embedding.weight",
        4,
        2,
        SplitMix64.from_seed(1),
        padding_idx=-1,
        max_norm=2,
        norm_type=1,
        scale_grad_by_freq=True,
    )
    assert (layer.padding_idx, layer.max_norm, layer.norm_type, layer.scale_grad_by_freq) == (
        3,
        2.0,
        1.0,
        True,
    )
    assert type(layer.max_norm) is float and type(layer.norm_type) is float
    text = repr(layer)
    for shown in ("padding_idx=3", "max_norm=2.0", "norm_type=1.0", "scale_grad_by_freq=True"):
        assert shown in text
    for twin in (layer.clone(), copy.copy(layer), copy.deepcopy(layer)):
        assert (twin.padding_idx, twin.max_norm, twin.norm_type, twin.scale_grad_by_freq) == (
            3,
            2.0,
            1.0,
            True,
        )
    plain = repr(Embedding.new("w", 4, 2, SplitMix64.from_seed(1)))
    assert "padding_idx=None" in plain and "scale_grad_by_freq=False" in plain


def test_the_option_fields_cannot_be_replaced(known_layer: Embedding) -> None:
    with pytest.raises(AttributeError):
        known_layer.padding_idx = 1  # type: ignore[misc]


def test_a_bad_option_in_new_leaves_the_generator_where_it_was() -> None:
    rng = SplitMix64.from_seed(3)
    with raises_rule(OptionError, "option.value"):
        Embedding.new("w", 4, 2, rng, padding_idx=4)
    with raises_rule(OptionError, "option.type"):
        Embedding.new("w", 4, 2, rng, scale_grad_by_freq="yes")  # type: ignore[arg-type]
    assert rng.state == 3


def test_new_checks_the_sizes_before_the_options_and_the_options_before_the_generator() -> None:
    with raises_rule(TableError, "table.empty-vocabulary"):
        Embedding.new("w", 0, 2, SplitMix64.from_seed(1), padding_idx=5)
    with raises_rule(OptionError, "option.value"):
        Embedding.new("w", 4, 2, None, padding_idx=5)  # type: ignore[arg-type]
    with raises_rule(TableError, "table.initialization"):
        Embedding.new("w", 4, 2, None, padding_idx=3)  # type: ignore[arg-type]


def test_each_option_is_read_once_and_that_one_value_is_checked_and_stored() -> None:
    padding_idx, max_norm, norm_type = (
        ChangingInteger([-1, 999]),
        ChangingReal([2.0, -1.0]),
        ChangingReal([3.0, float("nan")]),
    )
    layer = Embedding.from_parameter(
        NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE)),
        padding_idx=padding_idx,  # type: ignore[arg-type]
        max_norm=max_norm,  # type: ignore[arg-type]
        norm_type=norm_type,  # type: ignore[arg-type]
    )
    assert (layer.padding_idx, layer.max_norm, layer.norm_type) == (3, 2.0, 3.0)
    assert padding_idx.reads == max_norm.reads == norm_type.reads == 1
    with raises_rule(OptionError, "option.value") as caught:
        Embedding.from_parameter(layer.table, padding_idx=ChangingInteger([7, 0]))  # type: ignore[arg-type]
    assert (caught.value.name, caught.value.value) == ("padding_idx", 7)


def test_the_options_under_no_grad_still_give_constants() -> None:
    table = known_table()
    with no_grad():
        out = functional.embedding([0, 0], table, padding_idx=1, scale_grad_by_freq=True)
    assert out.kind == "constant"


OPTION_VALUES = st.one_of(
    st.none(),
    st.integers(-6, 6),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(np.int64(-4)),
    st.just(np.float32(0.5)),
    st.just(Fraction(1, 3)),
    st.just(10**400),
    st.text(max_size=1),
)


@given(
    st.one_of(st.none(), st.integers(-4, 3), OPTION_VALUES),
    st.one_of(st.none(), st.floats(0.01, 100.0), OPTION_VALUES),
    st.one_of(st.floats(0.01, 10.0), st.sampled_from([1, 2, 0.5]), OPTION_VALUES),
    st.one_of(st.booleans(), st.just(np.bool_(True)), OPTION_VALUES),
)
def test_the_options_raise_the_documented_error_in_order_or_are_stored_checked(
    padding_idx: object, max_norm: object, norm_type: object, scale: object
) -> None:
    expected = expected_lookup_options(4, padding_idx, max_norm, norm_type, scale)
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    before = leaf_state(table.tensor)

    def build() -> Embedding:
        return Embedding.from_parameter(
            table,
            padding_idx=padding_idx,  # type: ignore[arg-type]
            max_norm=max_norm,  # type: ignore[arg-type]
            norm_type=norm_type,  # type: ignore[arg-type]
            scale_grad_by_freq=scale,  # type: ignore[arg-type]
        )

    layer = check_outcome(build, expected)
    assert leaf_state(table.tensor) == before
    if isinstance(expected, Raises):
        return
    fields = (layer.padding_idx, layer.max_norm, layer.norm_type, layer.scale_grad_by_freq)
    assert fields == expected.value  # type: ignore[attr-defined]


def test_nan_and_infinite_norms_are_refused_with_their_own_classes() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    for value in (math.nan, math.inf, 0.0, -1.0, True, None):
        with raises_rule(OptionError, "option.value"):
            Embedding.from_parameter(table, norm_type=value)  # type: ignore[arg-type]
