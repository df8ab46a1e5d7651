"""A frozen layer (``from_pretrained``'s default, as PyTorch's) is a constant: every error it
causes where a trainable table was meant says so and names ``freeze=False``."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.autograd import NotAParameterError, NotRecordedError
from llm_from_scratch.errors import MismatchError, OptionError
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    NamedParameters,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.optim import SGD, Adam

from checks import raises_rule

VALUES = np.arange(8, dtype=np.float32).reshape(4, 2)
NAME = "token_embedding.weight"


def frozen() -> Embedding:
    return Embedding.from_pretrained(VALUES)


def test_backward_from_a_frozen_lookup_says_freeze_false() -> None:
    for loss in (frozen()([[1, 2]]).sum(), EmbeddingBag.from_pretrained(VALUES)([[1, 2]]).sum()):
        with pytest.raises(NotRecordedError, match="freeze=False"):
            loss.backward()
    with pytest.raises(NotRecordedError, match="freeze=False"):
        Adam(Embedding(4, 2).parameters(), 0.1).backward_step(frozen()([1]).sum())


def test_zero_grad_of_a_frozen_table_says_freeze_false() -> None:
    with pytest.raises(NotAParameterError) as caught:
        frozen().table.tensor.zero_grad()
    assert (caught.value.action, caught.value.kind) == ("zero_grad", "constant")
    assert "freeze=False" in str(caught.value)


@pytest.mark.parametrize("optimizer", [SGD, Adam])
def test_an_optimizer_refuses_the_empty_parameters_of_a_frozen_layer_naming_the_table(
    optimizer: type,
) -> None:
    with pytest.raises(OptionError) as caught:
        optimizer(frozen().parameters(), 0.1)
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, TypeError)
    assert (error.rule, error.value_type) == ("optimizer.no-parameters", "NamedParameters")
    assert f"the table {NAME!r} is frozen" in error.detail and "freeze=False" in error.detail


def test_an_optimizer_refuses_any_empty_parameter_list() -> None:
    for empty in ([], (), iter([]), NamedParameters([])):
        with pytest.raises(OptionError) as caught:
            SGD(empty, 0.1)
        assert (caught.value.rule, caught.value.detail) == ("optimizer.no-parameters", "")
    with pytest.raises(OptionError, match="freeze=False") as entry:
        SGD([frozen().table], 0.1)  # type: ignore[list-item]
    assert entry.value.rule == "optimizer.parameter-type"


def test_a_checkpoint_load_into_a_frozen_layer_says_its_table_is_frozen(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_parameters(path, Embedding(4, 2).parameters())
    with raises_rule(MismatchError, "checkpoint.into") as caught:
        load_parameters(path, into=frozen().parameters())
    assert f"the table {NAME!r} is frozen" in str(caught.value)
    assert "freeze=False" in str(caught.value)
    trainable = Embedding.from_pretrained(VALUES, freeze=False)
    load_parameters(path, into=trainable.parameters())  # what the pointer says works


def test_the_frozen_names_survive_copies_pickles_and_rewrapping() -> None:
    parameters = frozen().parameters()
    assert len(parameters) == 0 and parameters.frozen == (NAME,)
    for twin in (
        NamedParameters(parameters),
        copy.copy(parameters),
        copy.deepcopy(parameters),
        pickle.loads(pickle.dumps(parameters)),
    ):
        assert twin.frozen == (NAME,)
        assert twin.absence(NAME).startswith(f"the table {NAME!r} is frozen")
    assert NamedParameters([]).absence(NAME) == "none has that name"
