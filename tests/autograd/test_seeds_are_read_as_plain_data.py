"""A backward seed given as an ndarray subclass is read as the memory it holds; a masked or
structured one is refused before any stored gradient changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.errors import ShapeError
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ShowsOtherValues, masks
from checks import leaf_state, raises_rule
from conftest import KNOWN_TABLE
from reference import plain_scatter

IDS = [2, 1, 2]


def known_layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


@given(st.lists(st.floats(-4, 4), min_size=6, max_size=6), st.booleans())
def test_a_seed_subclass_adds_the_gradient_of_the_values_its_memory_holds(
    values: list[float], transposed: bool
) -> None:
    base = np.array(values).reshape(3, 2)
    seed = (np.array(base.T).T if transposed else base).view(ShowsOtherValues)
    layer = known_layer()
    layer.forward(IDS, (3,)).backward_with_seed(seed)
    gradient = layer.table.tensor.gradient
    assert gradient is not None
    assert gradient.numpy().tobytes() == plain_scatter(IDS, base, 4, 2).tobytes()


@given(st.data())
def test_a_masked_seed_is_refused_and_nothing_changes(data: st.DataObject) -> None:
    layer = known_layer()
    output = layer.forward(IDS, (3,))
    output.backward_with_seed(np.ones((3, 2)))
    before = leaf_state(layer.table.tensor)
    mask = data.draw(masks(6))
    seed = np.ma.array(np.ones(6), mask=mask).reshape(3, 2)
    with raises_rule(ShapeError, "seed.type") as caught:
        output.backward_with_seed(seed)
    assert caught.value.seed_type == "MaskedArray"
    assert leaf_state(layer.table.tensor) == before


@pytest.mark.parametrize(
    "seed",
    [np.zeros((3, 2), dtype=[("a", float)]), np.zeros((3, 2), dtype=complex)],
    ids=["structured", "complex"],
)
def test_a_seed_of_a_non_real_dtype_is_refused(seed: Any) -> None:
    layer = known_layer()
    output = layer.forward(IDS, (3,))
    before = leaf_state(layer.table.tensor)
    with raises_rule(ShapeError, "seed.type"):
        output.backward_with_seed(seed)
    assert leaf_state(layer.table.tensor) == before
