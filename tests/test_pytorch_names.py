"""Every PyTorch name the package declares (``layer.weight``, ``SGD(..., lr=0.1)``, ...) is
refused in one line that names ours: as an attribute read or write (an ``AttributeError``, so
``hasattr`` is False) and as a keyword argument (a ``TypeError``), before anything is built."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import llm_from_scratch.nn
import llm_from_scratch.optim
from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import PyTorchNameError
from llm_from_scratch.nn import Embedding, EmbeddingBag, SplitMix64, functional
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW, SparseAdam
from llm_from_scratch.pytorch_names import DECLARED

from checks import raises_rule

assert llm_from_scratch.nn and llm_from_scratch.optim  # every declaration is imported

TABLE = np.arange(8, dtype=np.float32).reshape(4, 2)


def layer() -> Embedding:
    return Embedding.from_pretrained(TABLE, freeze=False)


INSTANCES: dict[str, Callable[[], list[object]]] = {
    "TableLayer": lambda: [layer(), EmbeddingBag.from_pretrained(TABLE)],
    "TensorValue": lambda: [layer()([1, 2]), layer().table.tensor],
    "NamedParameter": lambda: [next(iter(layer().parameters()))],
    "Optimizer": lambda: [
        SGD(layer().parameters(), 0.1),
        Adagrad(layer().parameters(), 0.1),
        Adam(layer().parameters(), 0.1),
        AdamW(layer().parameters(), 0.1),
    ],
}
"""Instances of each class that declares PyTorch attribute names."""

CALLS: dict[str, Callable[..., object]] = {
    "Embedding": lambda **keyword: Embedding(4, 2, **keyword),
    "Embedding.new": lambda **keyword: Embedding.new("w", 4, 2, 0, **keyword),
    "Embedding.from_pretrained": lambda **keyword: Embedding.from_pretrained(TABLE, **keyword),
    "EmbeddingBag": lambda **keyword: EmbeddingBag(4, 2, **keyword),
    "EmbeddingBag.new": lambda **keyword: EmbeddingBag.new("w", 4, 2, 0, **keyword),
    "EmbeddingBag.from_pretrained": lambda **keyword: EmbeddingBag.from_pretrained(
        TABLE, **keyword
    ),
    "functional.embedding": lambda **keyword: functional.embedding([1], TABLE, **keyword),
    "functional.embedding_bag": lambda **keyword: functional.embedding_bag([[1]], TABLE, **keyword),
    "SGD": lambda **keyword: SGD(**keyword),
    "Adagrad": lambda **keyword: Adagrad(**keyword),
    "Adam": lambda **keyword: Adam(**keyword),
    "AdamW": lambda **keyword: AdamW(**keyword),
}
"""A call of each function that declares PyTorch keywords, given one keyword (and none of its
own required arguments: the keyword is refused first)."""

ATTRIBUTES = [pointer for pointer in DECLARED if pointer.kind == "attribute"]
ARGUMENTS = [pointer for pointer in DECLARED if pointer.kind == "argument"]


def test_the_names_the_issue_of_habits_lists_are_all_declared() -> None:
    names = {pointer.pytorch_name for pointer in DECLARED}
    assert {"lr", "weight", "num_embeddings", "embedding_dim", "params", "grad"} <= names


@pytest.mark.parametrize("pointer", ATTRIBUTES, ids=lambda p: f"{p.owner}.{p.pytorch_name}")
def test_an_attribute_under_a_pytorch_name_is_refused_naming_ours(pointer: Any) -> None:
    for instance in INSTANCES[pointer.owner]():
        with raises_rule(PyTorchNameError, "pytorch.name") as caught:
            getattr(instance, pointer.pytorch_name)
        error = caught.value
        assert (error.owner, error.kind) == (type(instance).__name__, "attribute")
        assert (error.pytorch_name, error.ours) == (pointer.pytorch_name, pointer.ours)
        assert "\n" not in str(error) and str(error).endswith(f"here: {pointer.ours}")
        assert not hasattr(instance, pointer.pytorch_name)
        assert getattr(instance, pointer.pytorch_name, "default") == "default"
        with pytest.raises(AttributeError):  # frozen classes refuse any write first
            setattr(instance, pointer.pytorch_name, 0.1)


def test_setting_an_optimizers_lr_is_refused_and_changes_nothing() -> None:
    optimizer = SGD(layer().parameters(), 0.1)
    with raises_rule(PyTorchNameError, "pytorch.name") as caught:
        optimizer.lr = 0.5  # type: ignore[misc]
    assert caught.value.ours.startswith("learning_rate") and optimizer.learning_rate == 0.1


@pytest.mark.parametrize("pointer", ARGUMENTS, ids=lambda p: f"{p.owner}({p.pytorch_name}=)")
def test_a_keyword_under_a_pytorch_name_is_refused_naming_ours(pointer: Any) -> None:
    with raises_rule(PyTorchNameError, "pytorch.name") as caught:
        CALLS[pointer.owner](**{pointer.pytorch_name: 0.1})
    error = caught.value
    assert isinstance(error, TypeError)
    assert (error.owner, error.kind) == (pointer.owner, "argument")
    assert (error.pytorch_name, error.ours) == (pointer.pytorch_name, pointer.ours)
    assert "\n" not in str(error)


def test_the_refusing_functions_keep_their_signatures_and_docstrings() -> None:
    assert list(inspect.signature(SGD).parameters) == ["parameters", "learning_rate"]
    assert "vocabulary_size" in inspect.signature(Embedding).parameters
    assert Embedding.new.__doc__ is not None and Embedding.new.__name__ == "new"
    assert "learning_rate" in (Adam.__init__.__doc__ or Adam.__doc__ or "")


def test_the_pytorch_spelling_of_a_loop_is_pointed_to_our_spelling_at_each_step() -> None:
    messages = []
    for call in (
        lambda: Embedding(num_embeddings=1000, embedding_dim=64),
        lambda: layer().weight,
        lambda: SGD(layer().parameters(), lr=0.1),
        lambda: SGD(params=layer().parameters(), learning_rate=0.1),
        lambda: layer()([1]).grad,
        lambda: SGD(layer().parameters(), 0.1).param_groups,
    ):
        with raises_rule(PyTorchNameError, "pytorch.name") as caught:
            call()
        messages.append(caught.value.ours.split()[0])
    assert messages == [
        "vocabulary_size",
        "table.tensor,",
        "learning_rate",
        "parameters",
        "gradient",
        "learning_rate",
    ]


def test_sparse_adam_is_adam_whose_row_sparse_step_is_sparse_adams() -> None:
    assert SparseAdam is Adam
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(1))
    optimizer = SparseAdam(layer.parameters(), learning_rate=0.01)
    assert optimizer.kind == "Adam"


def test_every_declared_owner_has_a_test_call_or_instance() -> None:
    assert {pointer.owner for pointer in ATTRIBUTES} <= set(INSTANCES)
    assert {pointer.owner for pointer in ARGUMENTS} <= set(CALLS)


def test_a_value_is_still_a_value_after_a_refused_read() -> None:
    value = layer()([1, 2])
    with raises_rule(PyTorchNameError, "pytorch.name"):
        value.grad  # noqa: B018
    assert isinstance(value, TensorValue) and value.shape == (2, 2)
