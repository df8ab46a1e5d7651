"""``TensorValue``: parameter, constant and operation values, their views and snapshots, the
read-only arrays they hand out, and the element-wise operations.

What a caller passes in is copied and what the library hands out is read-only; the supported
update is an optimizer step, which a value view shows and a snapshot does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import llm_from_scratch.autograd.ops as ops_module
import llm_from_scratch.autograd.tape as tape_module
from llm_from_scratch.autograd import (
    TensorValue,
    no_grad,
)
from llm_from_scratch.errors import AllocationError, ShapeError, TapeError
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import failing_numpy, raises_rule
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def parameter(*values: float) -> TensorValue:
    return TensorValue.parameter(Tensor((len(values),), values))


def test_a_new_parameter_has_a_zero_gradient_and_a_constant_has_none() -> None:
    w = parameter(1.0, 2.0)
    c = TensorValue.constant(Tensor((2,), [1.0, 2.0]))
    assert w.gradient is not None and w.gradient.flat_values() == [0.0, 0.0]
    assert c.gradient is None and c.gradient_snapshot() is None


def test_is_same_node_is_identity_not_equal_values() -> None:
    a, b = parameter(1.0), parameter(1.0)
    assert a.is_same_node(a)
    assert not a.is_same_node(b)


def test_value_snapshot_is_an_independent_copy() -> None:
    w = parameter(1.0, 2.0)
    snapshot = w.value_snapshot()
    assert snapshot.equals(w.value)
    assert not np.shares_memory(snapshot.numpy(), w.numpy())


def test_zero_grad_resets_a_parameter_and_rejects_other_values() -> None:
    w = parameter(1.0)
    w.sum().backward()
    w.zero_grad()
    assert w.gradient.flat_values() == [0.0]  # type: ignore[union-attr]
    with raises_rule(TapeError, "tape.result-not-parameter", action="zero_grad"):
        w.sum().zero_grad()


# Read-only arrays and value views ------------------------------------------------------------


def handed_out_arrays(layer: Embedding) -> dict[str, np.ndarray[Any, Any]]:
    leaf = layer.table.tensor
    output = layer([[2, 1, 2]])
    output.backward_with_seed(UPSTREAM)
    sparse = leaf.sparse_gradient
    assert sparse is not None
    return {
        "leaf.numpy()": leaf.numpy(),
        "leaf.value.numpy()": leaf.value.numpy(),
        "leaf.value_snapshot().numpy()": leaf.value_snapshot().numpy(),
        "leaf.gradient.numpy()": leaf.gradient.numpy(),  # type: ignore[union-attr]
        "leaf.gradient_snapshot().numpy()": leaf.gradient_snapshot().numpy(),  # type: ignore[union-attr]
        "sparse_gradient.rows": sparse.rows,
        "sparse_gradient.values": sparse.values,
        "output.numpy()": output.numpy(),
        "output.value.numpy()": output.value.numpy(),
    }


WRITES: dict[str, Callable[[np.ndarray[Any, Any]], object]] = {
    "item assignment": lambda array: array.__setitem__(..., 0),
    "augmented assignment": lambda array: array.__iadd__(1),
    "ufunc out=": lambda array: np.add(array, 1, out=array),
    "fill": lambda array: array.fill(0),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_no_array_the_library_hands_out_can_be_written_by_accident(
    known_layer: Embedding, write: Callable[[np.ndarray[Any, Any]], object]
) -> None:
    for name, array in handed_out_arrays(known_layer).items():
        with pytest.raises(ValueError, match="read-only"):
            write(array)
        assert not array.flags.writeable, name


def test_writes_cannot_be_switched_back_on_for_the_table_values() -> None:
    layers = (
        Embedding.new("w", 4, 2, SplitMix64.from_seed(1)),
        Embedding.from_parameter(NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))),
    )
    for layer in layers:
        for array in (layer.table.tensor.numpy(), layer.table.tensor.value.numpy()):
            with pytest.raises(ValueError):
                array.flags.writeable = True


def test_a_value_view_shows_an_optimizer_step_but_a_snapshot_does_not(
    known_layer: Embedding,
) -> None:
    leaf: TensorValue = known_layer.table.tensor
    view, snapshot = leaf.value, leaf.value_snapshot()
    known_layer([[0]]).backward_with_seed(np.ones((1, 1, 2)))
    SGD(known_layer.parameters(), learning_rate=1.0).step()
    assert view.flat_values()[:2] == [9.0, 10.0]
    assert snapshot.flat_values()[:2] == [10.0, 11.0]


# Operations ----------------------------------------------------------------------------------


def test_add_mul_sum_and_reshape_pass_the_finite_difference_probe() -> None:
    other = Tensor((2, 3), [0.5, -1.0, 2.0, 3.0, -0.25, 1.5])

    def loss(p: TensorValue) -> TensorValue:
        return p.mul(p).add(other).reshape((3, 2)).mul(p.reshape((3, 2))).sum()

    probe = check_gradient(loss, TensorValue.parameter(Tensor((2, 3), [1, 2, 3, 4, 5, 6])))
    assert probe.passed, probe


def test_no_grad_builds_untracked_values() -> None:
    w = parameter(1.0)
    with no_grad():
        y = w.mul(w)
    assert y.kind == "constant"
    assert w.mul(w).kind == "operation"


def test_elementwise_operands_need_one_shape_and_one_dtype() -> None:
    with raises_rule(ShapeError, "operand.shape", operation="add"):
        parameter(1.0).add(parameter(1.0, 2.0))
    with raises_rule(ShapeError, "operand.dtype"):
        parameter(1.0).add(TensorValue.parameter(Tensor((1,), [1.0], dtype=np.float32)))


def test_reshape_keeps_the_element_count() -> None:
    with raises_rule(ShapeError, "reshape.count") as caught:
        parameter(1.0, 2.0).reshape((3,))
    assert (caught.value.expected, caught.value.actual) == (2, 3)


# Allocation failures, injected ---------------------------------------------------------------


def test_a_parameter_whose_gradient_cannot_be_allocated_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = Tensor((3,), [1.0, 2.0, 3.0])
    with (
        failing_numpy(monkeypatch, tape_module, "zeros"),
        raises_rule(AllocationError, "output.allocation") as caught,
    ):
        TensorValue.parameter(values)
    assert (caught.value.operation, caught.value.elements) == ("parameter gradient", 3)


def test_an_operation_output_that_cannot_be_allocated_records_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weight = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
    with (
        failing_numpy(monkeypatch, ops_module, "add"),
        raises_rule(AllocationError, "output.allocation") as caught,
    ):
        weight.add(weight)
    assert (caught.value.operation, caught.value.elements) == ("add", 2)
