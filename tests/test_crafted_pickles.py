"""Unpickling checks what construction checks, for every class that pickles.

Each class rebuilds through one function (its constructor, or a ``restore_*`` function that runs
the constructor's checks), so a crafted pickle that hands that function bad data gets the error
the public construction gives for the same data, and nothing half-built comes back. One test per
class: a pickle made with :class:`checks.PicklePayload`, which pickles as a call of the rebuild
function with any arguments, as a crafted or damaged pickle can.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue, TokenIdOutOfBoundsError
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.autograd.value import restore_value
from llm_from_scratch.errors import NonFiniteError, OptionError, TableError
from llm_from_scratch.labels import label_error
from llm_from_scratch.nn import (
    BagOptions,
    Embedding,
    EmbeddingBag,
    FrozenTable,
    LookupOptions,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    XavierScale,
)
from llm_from_scratch.optim import SGD, Adam
from llm_from_scratch.tensor import Tensor, TensorValueTypeError
from llm_from_scratch.tensor.storage import restore_tensor
from llm_from_scratch.traces.token_embeddings_v1 import trace_error

from checks import PicklePayload, raises_rule, unpickled
from conftest import KNOWN_TABLE

TABLE = np.array(KNOWN_TABLE).reshape(4, 2)


def same_error(crafted: Callable[[], object], public: Callable[[], object]) -> BaseException:
    """Both calls raise the same class with the same message; return the crafted one's error."""
    with pytest.raises(Exception) as from_pickle:
        crafted()
    with pytest.raises(Exception) as from_public:
        public()
    assert type(from_pickle.value) is type(from_public.value)
    assert str(from_pickle.value) == str(from_public.value)
    return from_pickle.value


def constant_node(values: np.ndarray[Any, Any]) -> PicklePayload:
    """A pickled constant leaf holding ``values`` (constants may hold NaN)."""
    return PicklePayload(
        restore_value, PicklePayload(restore_node, {"kind": "constant", "values": values})
    )


def test_tensor() -> None:
    half = np.ones((2, 2), dtype=np.float16)
    for call in (
        lambda: unpickled(PicklePayload(restore_tensor, half)),
        lambda: Tensor.from_numpy(half),
    ):
        with pytest.raises(TensorValueTypeError):  # worded for each: the pickle names itself
            call()
    view = np.broadcast_to(np.float32(0), (2**60,))
    same_error(
        lambda: unpickled(
            PicklePayload(restore_tensor, PicklePayload(np.broadcast_to, np.float32(0), (2**60,)))
        ),
        lambda: Tensor((2**60,), view),
    )


def test_parameter_leaf() -> None:
    values = np.array([[1.0, np.nan]])
    state = {
        "kind": "parameter",
        "values": values,
        "gradient": {"form": "dense", "values": values * 0},
    }
    same_error(
        lambda: unpickled(PicklePayload(restore_value, PicklePayload(restore_node, state))),
        lambda: TensorValue.parameter(Tensor.from_numpy(values)),
    )


def test_constant_leaf() -> None:
    restored = unpickled(constant_node(np.array([np.nan, 1.0])))  # a constant may hold NaN
    assert restored.kind == "constant" and np.isnan(restored.numpy()[0])
    with pytest.raises(Exception) as caught:
        unpickled(constant_node(np.array(["a"])))
    assert type(caught.value).__name__ == "LeafStateError"


def test_named_parameter() -> None:
    leaf = TensorValue.parameter(Tensor((1,), [1.0]))
    same_error(
        lambda: unpickled(PicklePayload(NamedParameter, "Bad.name", leaf)),
        lambda: NamedParameter.from_value("Bad.name", leaf),
    )


def test_named_parameters() -> None:
    parameter = NamedParameter.from_tensor("w", Tensor((1,), [1.0]))
    error = same_error(
        lambda: unpickled(PicklePayload(NamedParameters, (parameter, parameter))),
        lambda: NamedParameters((parameter, parameter)),
    )
    assert isinstance(error, TableError) and error.rule == "parameters.duplicate-name"


def test_split_mix_64() -> None:
    error = same_error(
        lambda: unpickled(PicklePayload(SplitMix64, 2**64)), lambda: SplitMix64(2**64)
    )
    assert isinstance(error, TableError) and error.rule == "seed.range"


def test_xavier_scale() -> None:
    error = same_error(
        lambda: unpickled(PicklePayload(XavierScale, 0, 2)), lambda: XavierScale(0, 2)
    )
    assert isinstance(error, TableError) and error.rule == "fan.zero-in"


def test_frozen_table() -> None:
    poisoned = TABLE.copy()
    poisoned[1, 0] = np.nan
    error = same_error(
        lambda: unpickled(
            PicklePayload(FrozenTable, "token_embedding.weight", constant_node(poisoned))
        ),
        lambda: Embedding.from_pretrained(poisoned),
    )
    assert isinstance(error, NonFiniteError) and error.rule == "parameter.non-finite"
    assert error.position == 2
    with raises_rule(TableError, "name.byte"):
        unpickled(PicklePayload(FrozenTable, "W", constant_node(TABLE)))


def test_an_embedding_whose_frozen_table_holds_a_nan() -> None:
    # The layer that unpickled into a working layer whose lookups returned NaN.
    layer = Embedding.from_pretrained(TABLE)
    payload = pickle.dumps(layer)
    poisoned = payload.replace(np.float64(20.0).tobytes(), np.float64(np.nan).tobytes())
    assert poisoned != payload
    with raises_rule(NonFiniteError, "parameter.non-finite"):
        pickle.loads(poisoned)
    assert pickle.loads(payload)([1]).numpy().tolist() == [[20.0, 21.0]]


def test_lookup_options() -> None:
    for rows, padding in ((-1, None), (True, None), (4.0, None), (4, 4)):
        same_error(
            lambda rows=rows, padding=padding: unpickled(
                PicklePayload(LookupOptions, rows, padding, None, 2.0, False)
            ),
            lambda rows=rows, padding=padding: LookupOptions(rows, padding),
        )
    with raises_rule(OptionError, "option.value", name="vocabulary_size"):
        unpickled(PicklePayload(LookupOptions, -1))


def test_bag_options() -> None:
    for rows, mode in ((-3, "sum"), (4, "min"), (np.int64(-1), "max")):
        same_error(
            lambda rows=rows, mode=mode: unpickled(
                PicklePayload(BagOptions, rows, mode, None, None, 2.0)
            ),
            lambda rows=rows, mode=mode: BagOptions(rows, mode),  # type: ignore[arg-type]
        )


def test_embedding() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    error = same_error(
        lambda: unpickled(PicklePayload(Embedding, table, LookupOptions(5))),
        lambda: Embedding(table, LookupOptions(5)),
    )
    assert isinstance(error, TableError) and error.rule == "layer.pickle-state"
    assert error.field == "options"
    vector = NamedParameter.from_tensor("w", Tensor((4,), [1.0] * 4))
    same_error(
        lambda: unpickled(PicklePayload(Embedding, vector, LookupOptions(4))),
        lambda: Embedding.from_parameter(vector),
    )
    with raises_rule(TableError, "table.rank"):
        unpickled(PicklePayload(Embedding, vector, LookupOptions(4)))


def test_embedding_bag() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    error = same_error(
        lambda: unpickled(PicklePayload(EmbeddingBag, table, LookupOptions(4))),
        lambda: EmbeddingBag(table, LookupOptions(4)),  # type: ignore[arg-type]
    )
    assert isinstance(error, TableError) and error.rule == "layer.pickle-state"
    assert error.layer == "EmbeddingBag"
    frozen = unpickled(
        PicklePayload(
            EmbeddingBag,
            PicklePayload(FrozenTable, "w", constant_node(TABLE)),
            BagOptions(4, "sum", 1, 1.0),
        )
    )
    assert frozen.frozen and frozen([[0, 1]]).numpy().shape == (1, 2)


def test_optimizers_refuse_to_pickle_and_a_crafted_call_meets_the_constructor() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    for optimizer in (SGD([table], 0.1), Adam([table], 0.1)):
        for action in (pickle.dumps, copy.copy, copy.deepcopy):
            with pytest.raises(TypeError, match="cannot pickle or copy an optimizer"):
                action(optimizer)
    error = same_error(
        lambda: unpickled(PicklePayload(SGD, [table], float("nan"))),
        lambda: SGD([table], float("nan")),
    )
    assert (type(error), error.rule) == (OptionError, "optimizer.setting-value")


class ErrorPayload:
    """Pickles as ``cls(*fields)`` followed by ``__setstate__(state)``."""

    def __init__(self, cls: type, fields: tuple[object, ...], state: object) -> None:
        self.reduced = (cls, fields, state)

    def __reduce__(self) -> tuple[Any, ...]:
        return self.reduced


def test_structured_errors() -> None:
    error = TokenIdOutOfBoundsError(1, 4, 4)
    error.add_note("kept")
    rebuilt = unpickled(error)
    assert rebuilt.args == error.args and rebuilt.__notes__ == ["kept"]
    with pytest.raises(TypeError):  # the fields must bind, as for the constructor
        unpickled(PicklePayload(TokenIdOutOfBoundsError, 1, 4))
    with pytest.raises(TypeError, match="may not replace its field 'id'"):
        unpickled(ErrorPayload(TokenIdOutOfBoundsError, (1, 4, 4), {"id": 999}))
    with pytest.raises(TypeError):
        unpickled(ErrorPayload(TokenIdOutOfBoundsError, (1, 4, 4), ["id"]))
    # A pickle written before this check holds the fields in its state too, with their values.
    old = unpickled(
        ErrorPayload(
            TokenIdOutOfBoundsError, (1, 4, 4), dict(vars(TokenIdOutOfBoundsError(1, 4, 4)))
        )
    )
    assert old.id == 4 and str(old) == str(error)


def test_the_label_and_trace_errors_pickle_and_copy() -> None:
    for error in (
        label_error("ru", "reverse.title", "missing", "neighbours"),
        trace_error("IDS", "values", "bad"),
    ):
        for rebuilt in (unpickled(error), copy.copy(error), copy.deepcopy(error)):
            assert type(rebuilt) is type(error) and rebuilt.args == error.args
            assert vars(rebuilt) == vars(error)
