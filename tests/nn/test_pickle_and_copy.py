"""Named parameters, their collections, generators and layers pickle and copy: a shallow copy
shares the leaf, a deep copy or a pickle gives an independent leaf with equal values and
gradient; a crafted pickle meets the checks of the public constructors."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import TensorValue, UnpicklableOperationError
from llm_from_scratch.errors import OptionError, TableError
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
    xavier_scale,
)
from llm_from_scratch.nn.layer_state import TableLayer, layer_of
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import LyingStr
from checks import PicklePayload, leaf_state, raises_rule, unpickled
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM
from strategies import layers

PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)


def trained_layer(dtype: type = np.float64) -> Embedding:
    """The chapter's layer after the lookup of [[2, 1, 2]] with the chapter's upstream."""
    table = NamedParameter.from_tensor(
        "token_embedding.weight", Tensor((4, 2), KNOWN_TABLE, dtype=dtype)
    )
    layer = Embedding.from_parameter(table)
    layer([[2, 1, 2]]).backward_with_seed(np.array(KNOWN_UPSTREAM, dtype=dtype).reshape(1, 3, 2))
    return layer


def assert_equal_leaves(copied: TensorValue, original: TensorValue) -> None:
    """An independent parameter leaf at revision 0 with the original's values and stored
    gradient, in the same form, bit for bit."""
    assert copied.kind == "parameter" and not copied.is_same_node(original)
    assert copied.value_revision == 0 and copied.dtype == original.dtype
    assert copied.numpy().tobytes() == original.numpy().tobytes()
    sparse, expected = copied.sparse_gradient, original.sparse_gradient
    assert (sparse is None) == (expected is None)
    if sparse is not None and expected is not None:
        assert sparse.rows.tolist() == expected.rows.tolist()
        assert sparse.values.tobytes() == expected.values.tobytes()
        summed, expected_summed = sparse.summed, expected.summed
        assert (None if summed is None else summed.tolist()) == (
            None if expected_summed is None else expected_summed.tolist()
        )
    assert copied.gradient_snapshot().numpy().tobytes() == (  # type: ignore[union-attr]
        original.gradient_snapshot().numpy().tobytes()  # type: ignore[union-attr]
    )


def assert_equal_layers(copied: Embedding, original: Embedding) -> None:
    assert type(copied) is Embedding and copied is not original
    for field in dataclasses.fields(Embedding):
        if field.name != "table":
            assert getattr(copied, field.name) == getattr(original, field.name)
    assert copied.table.name == original.table.name
    assert_equal_leaves(copied.table.tensor, original.table.tensor)


# NamedParameter ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_named_parameter_round_trips_with_its_name_values_and_gradient(protocol: int) -> None:
    table = trained_layer().table
    restored = pickle.loads(pickle.dumps(table, protocol))
    assert type(restored) is NamedParameter and restored.name == "token_embedding.weight"
    assert_equal_leaves(restored.tensor, table.tensor)


def test_copy_of_a_named_parameter_names_the_same_leaf_and_deepcopy_an_equal_one() -> None:
    table = trained_layer().table
    twin = copy.copy(table)
    assert twin is not table and twin.name == table.name and twin.tensor is table.tensor
    deep = copy.deepcopy(table)
    assert deep.name == table.name
    assert_equal_leaves(deep.tensor, table.tensor)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("Token", "name.byte"),
        ("token..weight", "name.segment"),
        (LyingStr("Bad"), "name.byte"),
        (b"token", "name.type"),
        (None, "name.type"),
    ],
    ids=repr,
)
def test_a_crafted_named_parameter_with_a_bad_name_is_refused(name: object, rule: str) -> None:
    leaf = trained_layer().table.tensor
    with raises_rule(TableError, rule):
        unpickled(PicklePayload(NamedParameter, name, leaf))


def test_a_crafted_named_parameter_of_no_parameter_leaf_is_refused() -> None:
    constant = TensorValue.constant(Tensor((1,), [1.0]))
    for leaf, kind in ((constant, "constant"), (Tensor((1,), [1.0]), "Tensor"), (None, "NoneType")):
        with raises_rule(TableError, "parameter.not-leaf") as caught:
            unpickled(PicklePayload(NamedParameter, "w", leaf))
        assert caught.value.kind == kind


# NamedParameters -----------------------------------------------------------------------------


def test_a_parameter_collection_round_trips_in_order_and_copies_shallow_or_deep() -> None:
    first = trained_layer().table
    second = NamedParameter.from_tensor("head.bias", Tensor((3,), [1.0, 2.0, 3.0]))
    parameters = NamedParameters([first, second])
    for restored in (unpickled(parameters), copy.deepcopy(parameters)):
        assert type(restored) is NamedParameters
        assert restored.names() == ("token_embedding.weight", "head.bias")
        assert_equal_leaves(restored["token_embedding.weight"].tensor, first.tensor)
        assert_equal_leaves(restored["head.bias"].tensor, second.tensor)
    shallow = copy.copy(parameters)
    assert shallow is not parameters and list(shallow) == [first, second]


def test_a_crafted_collection_is_checked_as_the_constructor_checks() -> None:
    table = trained_layer().table
    with raises_rule(TableError, "parameters.duplicate-name"):
        unpickled(PicklePayload(NamedParameters, (table, table)))
    with raises_rule(TableError, "parameters.item-type"):
        unpickled(PicklePayload(NamedParameters, (table.tensor,)))


# SplitMix64 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_generator_round_trips_its_state_and_continues_the_same_stream(protocol: int) -> None:
    rng = SplitMix64.from_seed(18)
    rng.next_u64()
    twins = [pickle.loads(pickle.dumps(rng, protocol)), copy.deepcopy(rng), copy.copy(rng)]
    stream = [rng.next_u64() for _ in range(3)]
    for twin in twins:
        assert type(twin) is SplitMix64 and twin is not rng
        assert [twin.next_u64() for _ in range(3)] == stream and twin == rng


@pytest.mark.parametrize("state", [-1, 2**64, True, 1.5, "7", None], ids=repr)
def test_a_crafted_generator_state_is_a_seed_range_error(state: object) -> None:
    with raises_rule(TableError, "seed.range") as caught:
        unpickled(PicklePayload(SplitMix64, state))
    assert type(caught.value.seed) is type(state) and caught.value.seed == state


# XavierScale ---------------------------------------------------------------------------------


def test_a_xavier_scale_round_trips_and_a_crafted_one_is_checked() -> None:
    scale = xavier_scale(4, 2)
    assert unpickled(scale) == scale and copy.deepcopy(scale) == scale
    with raises_rule(TableError, "fan.zero-in"):
        unpickled(PicklePayload(XavierScale, 0, 2))
    with raises_rule(TableError, "fan.value"):
        unpickled(PicklePayload(XavierScale, 4, -1))


# Embedding -----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_layer_round_trips_with_its_table_gradient_and_lookups(
    dtype: type, protocol: int
) -> None:
    layer = trained_layer(dtype)
    restored = pickle.loads(pickle.dumps(layer, protocol))
    assert_equal_layers(restored, layer)
    assert restored([[3, 0]]).numpy().tobytes() == layer([[3, 0]]).numpy().tobytes()


def test_deepcopy_of_a_layer_keeps_its_gradient_in_the_same_form() -> None:
    layer = trained_layer()
    twin = copy.deepcopy(layer)
    assert_equal_layers(twin, layer)
    assert twin.table.tensor.sparse_gradient.rows.tolist() == [1, 2]  # type: ignore[union-attr]
    assert twin.table.tensor.gradient.numpy().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]  # type: ignore[union-attr]


def test_copy_of_a_layer_is_a_clone_on_the_same_leaf() -> None:
    layer = trained_layer()
    twin = copy.copy(layer)
    assert twin is not layer and twin.table is layer.table


def test_a_deep_copy_trains_on_its_own() -> None:
    layer = trained_layer()
    before = leaf_state(layer.table.tensor)
    twin = copy.deepcopy(layer)
    SGD(twin.parameters(), learning_rate=1.0).step()
    twin([[0]]).sum().backward()
    assert twin.table.tensor.value_revision == 1
    assert leaf_state(layer.table.tensor) == before


def test_a_layer_and_its_parameters_pickled_together_share_one_new_table() -> None:
    layer = trained_layer()
    for restored, parameters in (
        unpickled((layer, layer.parameters())),
        copy.deepcopy((layer, layer.parameters())),
    ):
        assert parameters["token_embedding.weight"] is restored.table
        assert not restored.table.tensor.is_same_node(layer.table.tensor)


def test_two_layers_on_one_leaf_stay_on_one_leaf() -> None:
    layer = trained_layer()
    first, second = unpickled((layer, layer.clone()))
    assert first.table.tensor.is_same_node(second.table.tensor)


def test_a_layer_pickles_as_its_class_table_and_options_rebuilt_by_layer_of() -> None:
    layer = trained_layer()
    rebuild, (kind, table, options) = layer.__reduce__()
    assert rebuild is layer_of and kind is Embedding
    assert table is layer.table and options is layer.options
    assert options.__reduce__() == (LookupOptions, (4, None, None, 2.0, False))


def test_a_pickle_of_an_earlier_version_still_rebuilds_through_the_class() -> None:
    layer = trained_layer()
    earlier = unpickled(PicklePayload(Embedding, layer.table, layer.options))
    assert isinstance(earlier, Embedding) and earlier.options == layer.options
    assert earlier.table.tensor.value.equals(layer.table.tensor.value)


def test_a_crafted_pickle_of_a_class_that_is_no_layer_is_refused() -> None:
    for kind in (dict, TableLayer, "Embedding"):
        with raises_rule(TableError, "layer.pickle-state", field="class"):
            unpickled(PicklePayload(layer_of, kind, trained_layer().table, LookupOptions(4)))


def test_a_container_holding_a_layer_output_refuses_to_pickle() -> None:
    layer = trained_layer()
    with pytest.raises(UnpicklableOperationError):
        pickle.dumps({"layer": layer, "output": layer([1])})


def test_a_crafted_layer_whose_table_is_no_named_parameter_is_refused() -> None:
    for table in (trained_layer().table.tensor, None):
        with raises_rule(TableError, "layer.pickle-state", field="table", layer="Embedding"):
            unpickled(PicklePayload(layer_of, Embedding, table, LookupOptions(4)))


@pytest.mark.parametrize("options", [LookupOptions(5), None, BagOptions(4), (4,)])
def test_crafted_options_that_are_not_checked_for_the_table_are_refused(options: object) -> None:
    with raises_rule(TableError, "layer.pickle-state", field="options") as caught:
        unpickled(PicklePayload(layer_of, Embedding, trained_layer().table, options))
    assert caught.value.detail.startswith("must be LookupOptions checked for 4 rows, got ")


def test_crafted_options_meet_the_options_checks() -> None:
    with raises_rule(OptionError, "option.value") as caught:
        unpickled(PicklePayload(LookupOptions, 4, 9, None, 2.0, False))
    assert (caught.value.name, caught.value.value) == ("padding_idx", 9)


def test_a_crafted_table_no_layer_can_hold_gets_the_layer_errors() -> None:
    flat = NamedParameter.from_tensor("w", Tensor((2,), [1.0, 2.0]))
    with raises_rule(TableError, "table.rank"):
        unpickled(PicklePayload(Embedding, flat, LookupOptions(2)))
    empty = NamedParameter.from_tensor("w", Tensor.zeros((0, 2)))
    with raises_rule(TableError, "table.empty-vocabulary"):
        unpickled(PicklePayload(Embedding, empty, LookupOptions(0)))


@given(layers(), st.sampled_from(PROTOCOLS))
def test_any_trained_layer_round_trips_and_deep_copies_with_equal_lookups(
    layer: Embedding, protocol: int
) -> None:
    before = leaf_state(layer.table.tensor)
    ids = [[0, layer.vocabulary_size - 1]]
    for twin in (pickle.loads(pickle.dumps(layer, protocol)), copy.deepcopy(layer)):
        assert_equal_layers(twin, layer)
        assert twin(ids).numpy().tobytes() == layer(ids).numpy().tobytes()
    assert leaf_state(layer.table.tensor) == before


# Layers with options, frozen tables and bags --------------------------------------------------


def assert_same_options(copied: object, original: object) -> None:
    assert type(copied) is type(original) and copied is not original
    for field in dataclasses.fields(original):  # type: ignore[arg-type]
        if field.name != "table":
            assert getattr(copied, field.name) == getattr(original, field.name), field.name


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_layer_with_options_round_trips_with_them(protocol: int) -> None:
    table = trained_layer().table
    layer = Embedding.from_parameter(
        table, padding_idx=-1, max_norm=2.5, norm_type=3.0, scale_grad_by_freq=True
    )
    restored = pickle.loads(pickle.dumps(layer, protocol))
    assert_same_options(restored, layer)
    assert restored.padding_idx == 3 and restored.scale_grad_by_freq
    assert_equal_leaves(restored.table.tensor, layer.table.tensor)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_frozen_layer_round_trips_as_a_frozen_table_with_equal_values(protocol: int) -> None:
    layer = Embedding.from_pretrained(np.array(KNOWN_TABLE, dtype=np.float32).reshape(4, 2))
    restored = pickle.loads(pickle.dumps(layer, protocol))
    assert_same_options(restored, layer)
    assert isinstance(restored.table, FrozenTable) and restored.table is not layer.table
    assert restored.table.name == layer.table.name
    assert restored.table.tensor.kind == "constant"
    assert restored.table.tensor.numpy().tobytes() == layer.table.tensor.numpy().tobytes()
    assert restored([2]).kind == "constant"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_bag_layer_round_trips_and_deep_copies_with_its_mode_and_gradient(
    protocol: int,
) -> None:
    bag = EmbeddingBag.from_parameter(trained_layer().table, mode="max", padding_idx=1)
    for twin in (pickle.loads(pickle.dumps(bag, protocol)), copy.deepcopy(bag)):
        assert_same_options(twin, bag)
        assert_equal_leaves(twin.table.tensor, bag.table.tensor)
        ids = [[0, 2, 3]]
        assert twin(ids).numpy().tobytes() == bag(ids).numpy().tobytes()


def test_a_crafted_bag_state_meets_the_bag_checks() -> None:
    bag = EmbeddingBag.from_parameter(trained_layer().table, mode="sum")
    _, (_, table, _) = bag.__reduce__()
    state = {"field": "options", "layer": "EmbeddingBag"}
    with raises_rule(TableError, "layer.pickle-state", **state):
        unpickled(PicklePayload(layer_of, EmbeddingBag, table, BagOptions(5, "sum")))
    with raises_rule(TableError, "layer.pickle-state"):
        unpickled(PicklePayload(layer_of, EmbeddingBag, table, LookupOptions(4)))
    with raises_rule(OptionError, "option.value"):
        unpickled(PicklePayload(BagOptions, 4, "min", None, None, 2.0))
    frozen = EmbeddingBag.from_pretrained(np.ones((4, 2)))
    _, (_, frozen_table, _) = frozen.__reduce__()
    renormalizing = unpickled(
        PicklePayload(layer_of, EmbeddingBag, frozen_table, BagOptions(4, "mean", None, 1.0))
    )
    assert renormalizing.frozen and renormalizing.max_norm == 1.0


def test_a_crafted_frozen_table_is_checked_when_unpickled() -> None:
    parameter = trained_layer().table.tensor
    with pytest.raises(TypeError):
        unpickled(PicklePayload(FrozenTable, "token_embedding.weight", parameter))
