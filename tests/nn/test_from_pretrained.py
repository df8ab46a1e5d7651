"""``Embedding.from_pretrained`` and ``EmbeddingBag.from_pretrained``: a NumPy array, a ``Tensor``
or a named parameter becomes the layer's table as it is (the dtype of a float array kept,
integers as float64); with ``freeze=True`` (PyTorch's default) it is a constant copy whose
lookups carry no gradient, with ``freeze=False`` a trainable leaf (a parameter's own leaf). The
checks come in a documented order and a failure changes nothing; docs/library.md's round trip
(load a checkpoint, build the layer, look up, train, save) runs for real."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.autograd import NotRecordedError
from llm_from_scratch.errors import NonFiniteError, OptionError, TableError
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    FrozenTable,
    NamedParameter,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ShowsOtherValues
from checks import leaf_state, raises_rule
from conftest import KNOWN_TABLE

VALUES = np.array(KNOWN_TABLE).reshape(4, 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_frozen_table_keeps_the_arrays_dtype_and_its_lookups_are_constants(
    dtype: type,
) -> None:
    layer = Embedding.from_pretrained(VALUES.astype(dtype))
    assert isinstance(layer.table, FrozenTable) and layer.frozen
    assert layer.table.name == "token_embedding.weight"
    assert layer.table.tensor.kind == "constant" and layer.table.tensor.dtype == dtype
    out = layer([[2, 1, 2]])
    assert out.kind == "constant" and out.dtype == dtype
    assert out.numpy().tolist() == [[[30, 31], [20, 21], [30, 31]]]
    with pytest.raises(NotRecordedError):
        out.sum().backward()
    assert len(layer.parameters()) == 0


def test_an_unfrozen_table_is_a_trainable_copy_of_the_array() -> None:
    values = VALUES.copy()
    layer = Embedding.from_pretrained(values, freeze=False, name="wte.weight")
    assert layer.table.name == "wte.weight" and layer.table.tensor.kind == "parameter"
    assert layer.parameters().names() == ("wte.weight",)
    values[0, 0] = -1.0  # the caller's array is not the table
    out = layer([[2, 1, 2]])
    assert out.kind == "operation" and layer.table.tensor.numpy()[0, 0] == 10.0
    out.sum().backward()
    assert layer.table.tensor.sparse_gradient.rows.tolist() == [1, 2]  # type: ignore[union-attr]


def test_integer_arrays_become_float64_and_a_tensor_keeps_its_dtype() -> None:
    assert Embedding.from_pretrained(np.arange(6).reshape(3, 2)).table.tensor.dtype == np.float64
    tensor = Tensor((2, 2), [1, 2, 3, 4], dtype=np.float32)
    layer = Embedding.from_pretrained(tensor, freeze=False)
    assert layer.table.tensor.dtype == np.float32
    assert layer([1]).numpy().tolist() == [[3.0, 4.0]]


def test_an_array_subclass_is_read_as_the_memory_it_holds() -> None:
    table = VALUES.view(ShowsOtherValues)
    assert Embedding.from_pretrained(table)([3]).numpy().tolist() == [[40.0, 41.0]]


def test_a_named_parameter_lends_its_leaf_unfrozen_and_its_values_frozen() -> None:
    parameter = NamedParameter.from_tensor(
        "embeddings.word_embeddings.weight", Tensor((4, 2), KNOWN_TABLE)
    )
    trainable = Embedding.from_pretrained(parameter, freeze=False)
    assert trainable.table.tensor.is_same_node(parameter.tensor)
    assert trainable.table.name == "token_embedding.weight"  # the layer's table is `name`
    frozen = Embedding.from_pretrained(parameter, name="embeddings.word_embeddings.weight")
    assert not frozen.table.tensor.is_same_node(parameter.tensor)
    SGD([parameter], 1.0).step()  # changes the parameter, not the frozen copy
    assert frozen.table.tensor.numpy().tobytes() == VALUES.tobytes()


def test_the_padding_row_keeps_its_pretrained_values_and_gets_no_gradient() -> None:
    layer = Embedding.from_pretrained(VALUES, freeze=False, padding_idx=1)
    out = layer([1, 2])
    assert out.numpy().tolist() == [[20, 21], [30, 31]]
    out.sum().backward()
    assert layer.table.tensor.sparse_gradient.rows.tolist() == [2]  # type: ignore[union-attr]


def test_the_checks_come_in_order_table_shape_name_options_freeze_then_values() -> None:
    with raises_rule(TableError, "table.pretrained-type", table_type="list"):
        Embedding.from_pretrained([[1.0]], name="Bad", padding_idx=9)
    float16 = "ndarray of dtype float16"
    with raises_rule(TableError, "table.pretrained-type", table_type=float16):
        Embedding.from_pretrained(VALUES.astype(np.float16))
    with raises_rule(TableError, "table.pretrained-type"):
        Embedding.from_pretrained(np.ma.array(VALUES))
    with raises_rule(TableError, "table.rank"):
        Embedding.from_pretrained(np.zeros(3), name="Bad")
    with raises_rule(TableError, "table.empty-vocabulary"):
        Embedding.from_pretrained(np.zeros((0, 2)), name="Bad")
    with raises_rule(TableError, "table.zero-width"):
        Embedding.from_pretrained(np.zeros((3, 0)), name="Bad")
    with raises_rule(TableError, "table.initialization") as name:
        Embedding.from_pretrained(VALUES, name="Bad", padding_idx=9)
    assert name.value.cause.rule == "name.byte"
    with raises_rule(OptionError, "option.value"):
        Embedding.from_pretrained(VALUES, padding_idx=9, freeze="no")  # type: ignore[arg-type]
    with raises_rule(OptionError, "option.type", name="freeze"):
        Embedding.from_pretrained(VALUES, freeze=1, max_norm=1.0)  # type: ignore[arg-type]
    for freeze_it in (True, False):
        with raises_rule(NonFiniteError, "parameter.non-finite", position=2, value=np.inf):
            Embedding.from_pretrained(np.array([[1.0, 2.0], [np.inf, 0.0]]), freeze=freeze_it)


def test_a_failed_call_leaves_a_given_parameter_as_it_was() -> None:
    parameter = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    before = leaf_state(parameter.tensor)
    with raises_rule(OptionError, "option.value"):
        Embedding.from_pretrained(parameter, freeze=False, padding_idx=4)
    assert leaf_state(parameter.tensor) == before


def test_an_optimizer_refuses_a_frozen_table_which_never_changes_and_says_freeze_false() -> None:
    layer = Embedding.from_pretrained(VALUES)
    for parameters in ([layer.table.tensor], [layer.table], layer.parameters()):
        with pytest.raises(OptionError) as caught:
            SGD(parameters, 0.1)  # type: ignore[arg-type]
        assert "freeze=False" in str(caught.value)


def test_a_frozen_table_checks_itself_and_a_deep_copy_shares_it() -> None:
    import copy

    layer = Embedding.from_pretrained(VALUES, padding_idx=0)
    twin = copy.deepcopy(layer)
    assert twin.table is layer.table and twin.padding_idx == 0
    with pytest.raises(TypeError):
        FrozenTable("w", Embedding.from_pretrained(VALUES, freeze=False).table.tensor)
    with raises_rule(TableError, "name.byte"):
        FrozenTable("W", layer.table.tensor)
    assert repr(layer.table) == "FrozenTable(name='token_embedding.weight', shape=(4, 2))"
    assert "frozen=True" in repr(layer)


def test_a_bag_layer_from_pretrained_reduces_frozen_rows_to_constants() -> None:
    bags = EmbeddingBag.from_pretrained(VALUES, mode="sum")
    out = bags([[0, 1], [2, 3]])
    assert out.kind == "constant" and out.numpy().tolist() == [[30, 32], [70, 72]]
    trainable = EmbeddingBag.from_pretrained(VALUES, freeze=False, mode="max", padding_idx=-1)
    assert trainable.padding_idx == 3 and trainable([[3, 0]]).numpy().tolist() == [[10, 11]]
    renormalizing = EmbeddingBag.from_pretrained(VALUES, max_norm=2.0, mode="sum")
    assert renormalizing.frozen and renormalizing.max_norm == 2.0


def test_a_checkpoint_loads_into_a_pretrained_layer_trains_and_saves(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    rng = np.random.default_rng(0)
    source = tmp_path / "model.safetensors"
    table = rng.standard_normal((50, 8)).astype(np.float32)
    save_file({"wte.weight": table}, str(source))
    loaded = load_parameters(source)
    layer = Embedding.from_pretrained(loaded["wte.weight"], freeze=False, name="wte.weight")
    assert layer([[5, 17, 5]]).numpy().tobytes() == table[[5, 17, 5]].reshape(1, 3, 8).tobytes()
    layer([[5, 17, 5]]).sum().backward()
    SGD(layer.parameters(), learning_rate=0.5).step()
    trained = tmp_path / "trained.safetensors"
    save_parameters(trained, layer.parameters())
    saved = load_file(str(trained))["wte.weight"]
    expected = table.copy()
    expected[5] -= np.float32(0.5) * np.float32(2.0)
    expected[17] -= np.float32(0.5)
    assert saved.tobytes() == expected.tobytes()
    frozen = Embedding.from_pretrained(load_parameters(trained)["wte.weight"])
    assert frozen([17]).kind == "constant"
    assert frozen([17]).numpy().tobytes() == expected[[17]].tobytes()
