"""A layer's state as a module's: ``state_dict()`` copies the table under its name, and
``load_state_dict`` writes it back in place, all checked before anything changes; a frozen
layer, whose table is a constant, is refused with a pointer to ``freeze=False``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import StaleValueError
from llm_from_scratch.errors import NonFiniteError, TableError
from llm_from_scratch.nn import Embedding, EmbeddingBag

from checks import raises_rule
from conftest import import_optional

VALUES = np.arange(8, dtype=np.float32).reshape(4, 2)
NAME = "token_embedding.weight"


def trainable(kind: Any = Embedding) -> Any:
    return kind.from_pretrained(VALUES, freeze=False)


@pytest.mark.parametrize("kind", [Embedding, EmbeddingBag])
def test_the_state_dict_is_a_writeable_copy_of_the_table_under_its_name(kind: Any) -> None:
    layer = trainable(kind)
    state = layer.state_dict()
    assert list(state) == [NAME]
    assert state[NAME].dtype == np.float32 and state[NAME].tolist() == VALUES.tolist()
    state[NAME][0, 0] = 100.0  # a copy: the layer does not change
    assert layer.table.tensor.numpy()[0, 0] == 0.0
    frozen = kind.from_pretrained(VALUES)
    assert frozen.state_dict()[NAME].tolist() == VALUES.tolist()  # as PyTorch keeps a frozen one


@pytest.mark.parametrize("kind", [Embedding, EmbeddingBag])
def test_a_loaded_state_is_written_in_place_and_stales_earlier_graphs(kind: Any) -> None:
    source, target = kind(4, 2, rng=1), kind(4, 2, rng=2)
    before = target([[0, 1]])
    before.sum().backward()
    gradient = target.table.tensor.gradient.numpy().copy()
    leaf = target.table.tensor
    target.load_state_dict(source.state_dict())
    assert target.table.tensor is leaf and leaf.value.equals(source.table.tensor.value)
    assert leaf.value_revision == 1
    np.testing.assert_array_equal(leaf.gradient.numpy(), gradient)  # kept, as a checkpoint load
    with pytest.raises(StaleValueError):
        before.sum().backward()


def test_the_state_can_come_from_pytorchs_weight_under_the_tables_name() -> None:
    torch = import_optional("torch")
    theirs = torch.nn.Embedding(4, 2)
    layer = Embedding(4, 2)
    layer.load_state_dict({NAME: theirs.weight.detach().numpy()})
    np.testing.assert_array_equal(layer.table.tensor.numpy(), theirs.weight.detach().numpy())


@pytest.mark.parametrize(
    ("state", "field", "detail"),
    [
        ([("token_embedding.weight", VALUES)], "state", "got list"),
        ({"weight": VALUES}, "key", "'weight' is not the table's name 'token_embedding.weight'"),
        ({}, "key", "'token_embedding.weight', the table's name, is missing"),
        ({NAME: VALUES, "bias": VALUES}, "key", "'bias' is not the table's name"),
        ({NAME: VALUES.tolist()}, "value", "must be a NumPy array, got list"),
        ({NAME: np.ma.masked_array(VALUES)}, "value", "got MaskedArray"),
        ({NAME: VALUES[:3]}, "value", "got [3, 2] float32"),
        ({NAME: VALUES.astype(np.float64)}, "value", "dtype float32, got [4, 2] float64"),
    ],
)
def test_a_state_that_does_not_fit_is_refused_before_anything_changes(
    state: object, field: str, detail: str
) -> None:
    layer = trainable()
    with raises_rule(TableError, "layer.state-dict", field=field, layer="Embedding") as caught:
        layer.load_state_dict(state)  # type: ignore[arg-type]
    error = caught.value
    assert detail in error.detail and str(error).startswith("Embedding.load_state_dict: ")
    assert layer.table.tensor.value_revision == 0
    assert layer.table.tensor.numpy().tolist() == VALUES.tolist()


def test_a_non_finite_state_is_refused_as_a_parameter_would_be() -> None:
    layer = trainable()
    bad = VALUES.copy()
    bad[2, 1] = np.inf
    with raises_rule(NonFiniteError, "parameter.non-finite", position=5, value=np.inf):
        layer.load_state_dict({NAME: bad})
    assert layer.table.tensor.value_revision == 0


@pytest.mark.parametrize("kind", [Embedding, EmbeddingBag])
def test_a_frozen_layer_refuses_a_state_and_says_freeze_false(kind: Any) -> None:
    frozen = kind.from_pretrained(VALUES)
    with raises_rule(TableError, "layer.state-dict", field="table", layer=kind.__name__) as caught:
        frozen.load_state_dict(frozen.state_dict())
    assert "freeze=False" in str(caught.value)


def test_zero_grad_of_a_layer_resets_its_table_gradient_as_a_modules() -> None:
    layer = trainable()
    layer([[1, 2]]).sum().backward()
    layer.zero_grad()
    assert not layer.table.tensor.gradient.numpy().any()
    Embedding.from_pretrained(VALUES).zero_grad()  # a frozen table stores no gradient
