"""A parameter leaf is built only from finite values: the first NaN or infinity is named.

Otherwise every later step that touches the value would blame itself for it (the course's
crate calls the error ``NonFiniteLeaf``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import NonFiniteParameterError, OperandTypeError, TensorValue
from llm_from_scratch.errors import NonFiniteError, TableError
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import leaf_state, raises_rule

FINITE = st.floats(-1e30, 1e30)
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[float], tuple[int, int], type]:
    rows, width = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    count = rows * width
    values = draw(st.lists(st.one_of(FINITE, FINITE, NON_FINITE), min_size=count, max_size=count))
    return values, (rows, width), draw(st.sampled_from([np.float64, np.float32]))


@given(tables())
def test_a_parameter_names_the_first_non_finite_value_in_flat_order(
    case: tuple[list[float], tuple[int, int], type],
) -> None:
    values, shape, dtype = case
    tensor = Tensor(shape, values, dtype=dtype)
    first = next((p for p, v in enumerate(values) if not math.isfinite(v)), None)
    for build in (
        lambda: TensorValue.parameter(tensor),
        lambda: NamedParameter.from_tensor("token_embedding.weight", tensor).tensor,
    ):
        if first is None:
            leaf = build()
            assert leaf.numpy().tobytes() == tensor.numpy().tobytes()
            continue
        with pytest.raises(NonFiniteParameterError) as caught:
            build()
        assert caught.value.position == first
        assert str(caught.value.value) == str(float(tensor.numpy().reshape(-1)[first]))
    assert TensorValue.constant(tensor).shape == shape  # a constant may hold anything


def test_the_nan_table_example_is_refused_with_its_position_and_value() -> None:
    table = Tensor((4, 2), [10.0, 11.0, 20.0, 21.0, 30.0, math.nan, 40.0, 41.0])
    with pytest.raises(NonFiniteParameterError) as caught:
        NamedParameter.from_tensor("token_embedding.weight", table)
    assert caught.value.position == 5 and math.isnan(caught.value.value)
    assert str(caught.value) == "parameter value nan at flat position 5 is not finite"
    assert isinstance(caught.value, ValueError)


def test_the_name_is_checked_before_the_values_and_the_tensor_type_before_them_too() -> None:
    nan_table = Tensor((1,), [math.nan])
    with raises_rule(TableError, "name.byte"):
        NamedParameter.from_tensor("Token", nan_table)
    with raises_rule(TableError, "name.type"):
        NamedParameter.from_tensor(None, nan_table)  # type: ignore[arg-type]
    with pytest.raises(OperandTypeError):
        TensorValue.parameter([math.nan])  # type: ignore[arg-type]


def test_every_way_to_a_parameter_leaf_keeps_it_finite() -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(18))
    assert np.isfinite(layer.table.tensor.numpy()).all()
    leaf = layer.table.tensor
    layer([0, 1]).backward_with_seed(np.full((2, 2), 10.0))
    before = leaf_state(leaf)
    with pytest.raises(NonFiniteError):  # the step would reach an infinity: nothing changes
        SGD(layer.parameters(), learning_rate=1e308).step()
    assert leaf_state(leaf) == before
    copied = NamedParameter.from_value("w", leaf)
    assert copied.tensor.is_same_node(leaf)
