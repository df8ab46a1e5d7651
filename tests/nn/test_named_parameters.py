"""``NamedParameters``: an ordered collection of named parameters with unique names."""

from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.errors import MismatchError, PyTorchNameError, TableError
from llm_from_scratch.nn import Embedding, NamedParameter, NamedParameters
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM


def named(name: str, *values: float) -> NamedParameter:
    return NamedParameter.from_tensor(name, Tensor((len(values),), list(values)))


def test_the_collection_keeps_order_length_and_the_parameters_themselves() -> None:
    b, a, c = named("b.weight", 1.0), named("a.weight", 2.0), named("c.bias", 3.0)
    parameters = NamedParameters([b, a, c])
    assert len(parameters) == 3
    assert parameters.names() == ("b.weight", "a.weight", "c.bias")
    assert [p is q for p, q in zip(parameters, [b, a, c], strict=True)] == [True] * 3


def test_get_finds_a_parameter_by_name_and_returns_none_for_an_unknown_one() -> None:
    a = named("a.weight", 1.0)
    parameters = NamedParameters([a])
    assert parameters.get("a.weight") is a
    assert parameters.get("b.weight") is None
    assert parameters.get(7) is None  # type: ignore[arg-type]


def test_indexing_by_an_unknown_name_is_a_lookup_error_that_names_it() -> None:
    parameters = NamedParameters([named("a.weight", 1.0)])
    assert parameters["a.weight"].name == "a.weight"
    with raises_rule(MismatchError, "parameters.unknown-name", name="b.weight") as caught:
        parameters["b.weight"]
    assert isinstance(caught.value, LookupError)
    assert str(caught.value) == "no parameter named 'b.weight'"


def test_membership_tests_names_only() -> None:
    a = named("a.weight", 1.0)
    parameters = NamedParameters([a])
    assert "a.weight" in parameters
    assert "b.weight" not in parameters
    assert a not in parameters  # type: ignore[operator]


def test_the_first_duplicate_pair_is_reported_with_both_positions() -> None:
    a, b, c = named("a", 1.0), named("b", 2.0), named("c", 3.0)
    with raises_rule(TableError, "parameters.duplicate-name") as caught:
        NamedParameters([a, b, c, named("b", 4.0), a])
    error = caught.value
    assert (error.name, error.first, error.repeated) == ("b", 1, 3)
    assert isinstance(error, ValueError)
    assert str(error) == "parameter name 'b' appears at positions 1 and 3"


def test_the_same_parameter_twice_is_a_duplicate_name() -> None:
    a = named("a", 1.0)
    with raises_rule(TableError, "parameters.duplicate-name") as caught:
        NamedParameters((a, a))
    assert (caught.value.first, caught.value.repeated) == (0, 1)


def test_an_item_that_is_not_a_named_parameter_is_reported_by_position_and_type() -> None:
    a = named("a", 1.0)
    with raises_rule(TableError, "parameters.item-type") as caught:
        NamedParameters([a, a.tensor])  # type: ignore[list-item]
    assert (caught.value.position, caught.value.item_type) == (1, "TensorValue")
    assert isinstance(caught.value, TypeError)


def test_the_first_fault_in_order_wins_between_a_wrong_item_and_a_duplicate() -> None:
    a = named("a", 1.0)
    with raises_rule(TableError, "parameters.item-type") as caught:
        NamedParameters([a, None, a])  # type: ignore[list-item]
    assert caught.value.position == 1


@pytest.mark.parametrize(
    ("container", "type_name"),
    [(None, "NoneType"), (5, "int"), ("a.weight", "str"), (b"a", "bytes")],
)
def test_a_container_that_is_not_an_iterable_of_parameters_is_a_type_error(
    container: object, type_name: str
) -> None:
    with raises_rule(TableError, "parameters.type", container_type=type_name) as caught:
        NamedParameters(container)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)


def test_a_single_named_parameter_is_not_a_collection() -> None:
    with raises_rule(TableError, "parameters.type", container_type="NamedParameter"):
        NamedParameters(named("a", 1.0))  # type: ignore[arg-type]


def test_a_generator_and_another_collection_are_accepted() -> None:
    a, b = named("a", 1.0), named("b", 2.0)
    from_generator = NamedParameters(p for p in (a, b))
    again = NamedParameters(from_generator)
    assert again.names() == ("a", "b") and again["b"] is b
    assert NamedParameters([]).names() == () and len(NamedParameters(())) == 0


def test_the_collection_is_immutable() -> None:
    parameters = NamedParameters([named("a", 1.0)])
    with pytest.raises(AttributeError):
        parameters._parameters = ()  # type: ignore[misc]


def test_the_repr_lists_the_names() -> None:
    parameters = NamedParameters([named("a.weight", 1.0), named("b", 2.0)])
    assert repr(parameters) == "NamedParameters(['a.weight', 'b'])"


# The embedding layer's parameters ---------------------------------------------------------------


def known_layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def test_an_embedding_returns_its_table_as_a_one_element_collection_without_a_new_leaf() -> None:
    layer = known_layer()
    parameters = layer.parameters()
    assert isinstance(parameters, NamedParameters) and len(parameters) == 1
    (only,) = parameters
    assert only is layer.table
    assert parameters["token_embedding.weight"].tensor.is_same_node(layer.table.tensor)


def test_sgd_accepts_the_layer_parameters_and_updates_the_table_in_place() -> None:
    layer = known_layer()
    layer([[2, 1, 2]]).sum().backward()
    SGD(layer.parameters(), learning_rate=0.5).step()
    assert layer.table.tensor.numpy().tolist() == [[10, 11], [19.5, 20.5], [29, 30], [40, 41]]


def test_a_named_parameters_gradient_is_its_own_the_same_as_its_tensors() -> None:
    layer = Embedding.from_pretrained(np.reshape(KNOWN_TABLE, (4, 2)), freeze=False)
    (parameter,) = layer.parameters()
    assert parameter.gradient is not None
    assert parameter.gradient.numpy().tolist() == [[0.0, 0.0]] * 4
    layer([[2, 1, 2]]).backward_with_seed(np.reshape(KNOWN_UPSTREAM, (1, 3, 2)))
    assert parameter.gradient.numpy().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]
    assert parameter.gradient.numpy().tolist() == parameter.tensor.gradient.numpy().tolist()


def test_pytorchs_grad_on_a_named_parameter_is_answered_in_one_line_naming_gradient() -> None:
    (parameter,) = Embedding.from_pretrained(
        np.reshape(KNOWN_TABLE, (4, 2)), freeze=False
    ).parameters()
    with raises_rule(
        PyTorchNameError,
        "pytorch.name",
        owner="NamedParameter",
        kind="attribute",
        pytorch_name="grad",
    ) as caught:
        parameter.grad  # noqa: B018
    assert caught.value.ours.startswith("gradient") and "\n" not in str(caught.value)
    assert isinstance(caught.value, AttributeError) and not hasattr(parameter, "grad")
