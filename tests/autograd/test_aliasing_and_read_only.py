"""What a caller passes in is copied, what the library hands out is read-only, and changing a
parameter's values after a forward recorded them is caught at backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import StaleValueError, TensorValue
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from conftest import KNOWN_TABLE

UPSTREAM = np.array([1, 0, 0, 2, 3, 4], dtype=np.float64).reshape(1, 3, 2)


def test_mutating_the_ids_after_a_forward_changes_neither_the_output_nor_its_gradient(
    known_layer: Embedding,
) -> None:
    for ids in (np.array([[2, 1, 2]]), [[2, 1, 2]]):
        output = known_layer(ids)
        if isinstance(ids, np.ndarray):
            ids[...] = 0
        else:
            ids[0][:] = [0, 0, 0]
        assert output.value.flat_values() == [30.0, 31.0, 20.0, 21.0, 30.0, 31.0]
        known_layer.table.tensor.zero_grad()
        output.backward_with_seed(UPSTREAM)
        gradient = known_layer.table.tensor.gradient
        assert gradient is not None
        assert gradient.flat_values() == [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 0.0, 0.0]


def test_mutating_flat_ids_after_a_gather_changes_nothing_recorded(known_layer: Embedding) -> None:
    ids = np.array([2, 1, 2], dtype=np.int32)
    output = known_layer.table.tensor.gather_rows(ids, (3,))
    ids[:] = 3
    output.backward_with_seed(UPSTREAM.reshape(3, 2))
    sparse = known_layer.table.tensor.sparse_gradient
    assert sparse is not None and sparse.rows.tolist() == [1, 2]


def test_mutating_the_seed_after_backward_changes_no_stored_gradient(
    known_layer: Embedding,
) -> None:
    seed = UPSTREAM.copy()
    known_layer([[2, 1, 2]]).backward_with_seed(seed)
    stored = known_layer.table.tensor.gradient_snapshot()
    seed[...] = 99.0
    assert known_layer.table.tensor.gradient.equals(stored)  # type: ignore[union-attr, arg-type]


def test_mutating_the_initial_values_changes_neither_the_tensor_nor_the_parameter() -> None:
    source = np.array(KNOWN_TABLE)
    tensor = Tensor((4, 2), source)
    parameter = NamedParameter.from_tensor("w", tensor)
    source[:] = -1.0
    assert tensor.flat_values() == list(KNOWN_TABLE)
    assert parameter.tensor.value.flat_values() == list(KNOWN_TABLE)


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


def test_an_optimizer_step_is_the_supported_update_and_marks_recorded_graphs_stale(
    known_layer: Embedding,
) -> None:
    leaf = known_layer.table.tensor
    weight = Tensor((4, 2), [1.0] * 8)
    dense = leaf.mul(weight).sum()  # records the table through a dense operation
    lookup = known_layer([[2, 1, 2]])
    lookup.backward_with_seed(UPSTREAM)
    SGD(known_layer.parameters(), learning_rate=0.5).step()
    assert leaf.value_revision == 1
    stored = leaf.gradient_snapshot()
    for graph, operation, operand in ((dense, "mul", "left"), (lookup, "gather_rows", "table")):
        with pytest.raises(StaleValueError) as caught:
            graph.backward_with_seed(np.ones(graph.shape))
        assert (caught.value.operation, caught.value.operand) == (operation, operand)
        assert (caught.value.recorded_revision, caught.value.current_revision) == (0, 1)
        assert str(caught.value).endswith("run the forward again")
    assert leaf.gradient.equals(stored)  # type: ignore[union-attr, arg-type]
    known_layer([[2, 1, 2]]).backward_with_seed(UPSTREAM)  # a new forward is fine


def test_a_value_view_shows_an_optimizer_step_but_a_snapshot_does_not(
    known_layer: Embedding,
) -> None:
    leaf: TensorValue = known_layer.table.tensor
    view, snapshot = leaf.value, leaf.value_snapshot()
    known_layer([[0]]).backward_with_seed(np.ones((1, 1, 2)))
    SGD(known_layer.parameters(), learning_rate=1.0).step()
    assert view.flat_values()[:2] == [9.0, 10.0]
    assert snapshot.flat_values()[:2] == [10.0, 11.0]
