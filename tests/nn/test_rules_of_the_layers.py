"""Every rule the layers, their checkpoints and PyTorch's names raise has a public call that
raises exactly its family and rule, worded by the rule's template and rebuilt from its fields."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import RULES, LlmError
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    functional,
)
from llm_from_scratch.nn.init import validate_parameter_name, xavier_uniform_array
from llm_from_scratch.nn.layer_state import layer_of
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checkpoint_support import CHECKPOINT_TRIGGERS
from checks import MessageFormatter, PicklePayload, unpickled
from conftest import KNOWN_TABLE


def layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def bag_layer(mode: str = "mean") -> EmbeddingBag:
    return EmbeddingBag.from_parameter(layer().table, mode=mode)


def operation_table() -> TensorValue:
    parameter = TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))
    return parameter.mul(parameter)


TRIGGERS: dict[str, Callable[[], object]] = {
    "name.type": lambda: validate_parameter_name(5),
    "name.empty": lambda: validate_parameter_name(""),
    "name.segment": lambda: validate_parameter_name("token..weight"),
    "name.byte": lambda: validate_parameter_name("Token"),
    "fan.value": lambda: xavier_uniform_array(-1, 2, SplitMix64.from_seed(0)),
    "fan.zero-in": lambda: xavier_uniform_array(0, 2, SplitMix64.from_seed(0)),
    "fan.zero-out": lambda: xavier_uniform_array(2, 0, SplitMix64.from_seed(0)),
    "init.generator-type": lambda: xavier_uniform_array(2, 2, None),  # type: ignore[arg-type]
    "table.build": lambda: NamedParameter.xavier_uniform("w", 2**31, 2**31, 0),
    "seed.range": lambda: SplitMix64.from_seed(-1),
    "parameter.not-leaf": lambda: NamedParameter.from_value(
        "w", TensorValue.constant(Tensor((1,), [1.0]))
    ),
    "parameters.type": lambda: NamedParameters(None),  # type: ignore[arg-type]
    "parameters.item-type": lambda: NamedParameters([layer().table.tensor]),  # type: ignore[list-item]
    "parameters.duplicate-name": lambda: NamedParameters([layer().table, layer().table]),
    "parameters.unknown-name": lambda: layer().parameters()["w"],
    "table.initialization": lambda: Embedding.new("Token", 4, 2, SplitMix64.from_seed(0)),
    "table.empty-vocabulary": lambda: Embedding.new("w", 0, 2, SplitMix64.from_seed(0)),
    "table.zero-width": lambda: Embedding.new("w", 4, 0, SplitMix64.from_seed(0)),
    "table.rank": lambda: functional.embedding([0], TensorValue.parameter(Tensor((2,), [1, 2]))),
    "layer.pickle-state": lambda: unpickled(PicklePayload(layer_of, Embedding, "a", None)),
    "layer.state-dict": lambda: layer().load_state_dict({"weight": np.zeros((4, 2))}),
    "table.type": lambda: functional.embedding([0], np.zeros((2, 2))),  # type: ignore[arg-type]
    "table.pretrained-type": lambda: Embedding.from_pretrained([[1.0, 2.0]]),
    "parameter.non-finite": lambda: Embedding.from_pretrained(np.array([[1.0, np.nan]])),
    "output.allocation": lambda: Embedding.from_pretrained(
        np.broadcast_to(np.int8(0), (2**31, 2**31))
    ),
    "option.type": lambda: Embedding.from_pretrained(np.ones((2, 2)), freeze=1),  # type: ignore[arg-type]
    "option.value": lambda: functional.embedding([0], operation_table(), max_norm=1.0),
    "bag.layout": lambda: bag_layer()([0, 1]),
    "offsets.container": lambda: bag_layer()([0, 1], np.zeros((1, 1), dtype=int)),
    "offsets.empty": lambda: bag_layer()([0, 1], []),
    "offsets.type": lambda: bag_layer()([0, 1], [0, 1.5]),
    "offsets.range": lambda: bag_layer()([0, 1], [0, 3]),
    "offsets.first": lambda: bag_layer()([0, 1], [1]),
    "offsets.increasing": lambda: bag_layer()([0, 1, 2], [0, 2, 1]),
    "offsets.last": lambda: bag_layer()([0, 1], [0, 1], include_last_offset=True),
    "ids.allocation": lambda: bag_layer()(np.zeros(2, dtype=int), range(2**61)),
    "weights.mode": lambda: bag_layer()([[0, 1]], per_sample_weights=np.ones((1, 2))),
    "weights.type": lambda: bag_layer("sum")([[0, 1]], per_sample_weights=[1.0, 1.0]),  # type: ignore[arg-type]
    "weights.shape": lambda: bag_layer("sum")([[0, 1]], per_sample_weights=np.ones(2)),
    "pytorch.name": lambda: SGD(layer().parameters(), lr=0.1),  # type: ignore[call-arg]
    **CHECKPOINT_TRIGGERS,
}
"""A public call per rule, by its code."""

OWN_RULES = {
    *("bag.layout", "layer.pickle-state", "layer.state-dict", "option.type", "option.value"),
    *("name.byte", "name.empty", "name.segment", "name.type", "seed.range", "table.build"),
    *("fan.value", "fan.zero-in", "fan.zero-out", "init.generator-type", "parameter.not-leaf"),
    *("parameters.duplicate-name", "parameters.item-type", "parameters.type"),
    *("parameters.unknown-name", "pytorch.name", "table.empty-vocabulary"),
    *("table.initialization", "table.pretrained-type", "table.type", "table.zero-width"),
    *(f"offsets.{rule}" for rule in ("container", "empty", "first", "increasing", "last")),
    *(f"offsets.{rule}" for rule in ("range", "type")),
    *(f"weights.{rule}" for rule in ("mode", "shape", "type")),
    *(f"checkpoint.{rule}" for rule in ("allocation", "argument", "data-size", "into")),
    *(f"checkpoint.{rule}" for rule in ("invalid", "names", "non-finite", "read")),
    *(f"checkpoint.{rule}" for rule in ("reserved-name", "tensor-dtype", "tensor-size", "write")),
}
"""The rules of the errors the layers, their checkpoints and PyTorch's names raise."""


def test_every_rule_the_layers_own_has_a_public_call() -> None:
    assert sorted(OWN_RULES - set(TRIGGERS)) == []


@pytest.mark.parametrize("code", sorted(TRIGGERS))
def test_each_call_raises_exactly_its_family_and_rule_worded_by_its_template(code: str) -> None:
    with pytest.raises(LlmError) as caught:
        TRIGGERS[code]()
    error, rule = caught.value, RULES[code]
    assert (type(error), error.rule) == (rule.family, code)
    assert str(error) == MessageFormatter().format(rule.template, **error.fields)
    assert error.args == (str(error),) and "\n" not in str(error)
    if "cause" in error.fields:
        assert error.cause is error.__cause__
    rebuilt = type(error)(code, **error.fields)
    for twin in (rebuilt, pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert (type(twin), twin.rule, twin.args) == (type(error), code, error.args)
        assert repr(twin.fields) == repr(error.fields)
