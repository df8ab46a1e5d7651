"""Arrays that are views: a stride-0 view (``np.broadcast_to``, ``as_strided``) can claim far more
elements than its memory holds, and a view whose logical size no array can hold gets the typed
allocation or shape error of any other oversize request, at once, at every entry point that
reads an array; views that can be copied (stride 0, negative or non-contiguous strides) read as
their plain copy does.

NumPy itself refuses to build a view whose byte count does not fit a signed 64-bit size
(``np.broadcast_to(np.int64(1), (2**31, 2**31))`` raises its ``ValueError`` in the caller's own
expression), so the largest views here are of one-byte dtypes (``2**62`` elements) or of fewer
elements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from llm_from_scratch.autograd import (
    IndexAllocationError,
    LeafStateError,
    OutputAllocationError,
    TensorValue,
)
from llm_from_scratch.autograd.errors import TokenShapeError
from llm_from_scratch.autograd.leaf_state import restore_node
from llm_from_scratch.autograd.value import restore_value
from llm_from_scratch.errors import AllocationError, FormatError, IdError
from llm_from_scratch.nn import Embedding, EmbeddingBag, NamedParameter, functional
from llm_from_scratch.optim import Adam
from llm_from_scratch.tensor import Tensor, TensorAllocationError, TooManyAxesError
from llm_from_scratch.tensor.storage import restore_tensor

from checks import PicklePayload, leaf_state, unpickled, within_seconds
from conftest import KNOWN_TABLE

HUGE = (2**31, 2**31)  # 2**62 elements: as a view of int8, 2**62 bytes; as indices, 2**65


def huge(shape: tuple[int, ...] = HUGE, dtype: type = np.int8, value: int = 0) -> Any:
    return np.broadcast_to(np.array(value, dtype=dtype), shape)


def table(width: int = 1) -> NamedParameter:
    values = [float(n) for n in range(4 * width)]
    return NamedParameter.from_tensor("token_embedding.weight", Tensor((4, width), values))


CASES: dict[str, tuple[Callable[[], object], type[BaseException]]] = {
    "the layer call, a width-1 table": (
        lambda: Embedding.from_parameter(table())(huge()),
        IndexAllocationError,
    ),
    "the layer call, a width-2 table (the output shape overflows)": (
        lambda: Embedding.from_parameter(table(2))(huge()),
        TokenShapeError,
    ),
    "the layer call, an object view": (
        lambda: Embedding.from_parameter(table())(huge((2**59,), object, 1)),
        IndexAllocationError,
    ),
    "forward": (
        lambda: Embedding.from_parameter(table()).forward(huge((2**62,)), (2**62,)),
        IndexAllocationError,
    ),
    "gather_rows": (
        lambda: table().tensor.gather_rows(huge((2**62,)), (2**62,)),
        IndexAllocationError,
    ),
    "functional.embedding": (
        lambda: functional.embedding(huge(), table().tensor),
        IndexAllocationError,
    ),
    "functional.embedding_bag, 2-D IDs": (
        lambda: functional.embedding_bag(huge(), table().tensor),
        IndexAllocationError,
    ),
    "a bag's offsets": (
        lambda: EmbeddingBag.from_parameter(table())([0, 1], huge((2**62,))),
        AllocationError,
    ),
    "a bag's per-sample weights (their shape comes first)": (
        lambda: EmbeddingBag.from_parameter(table(), mode="sum")(
            [[0, 1]], per_sample_weights=huge((2**62,))
        ),
        IdError,
    ),
    "Tensor": (lambda: Tensor(HUGE, huge()), TensorAllocationError),
    "Tensor, as_strided": (
        lambda: Tensor((2**62,), as_strided(np.zeros(1, np.uint8), (2**62,), (0,))),
        TensorAllocationError,
    ),
    "Tensor.from_numpy": (lambda: Tensor.from_numpy(huge()), TensorAllocationError),
    "a shape given as an array": (lambda: Tensor(huge((2**62,), np.int8, 1), []), TooManyAxesError),
    "from_pretrained, frozen": (lambda: Embedding.from_pretrained(huge()), AllocationError),
    "from_pretrained, trainable": (
        lambda: EmbeddingBag.from_pretrained(huge(), freeze=False),
        AllocationError,
    ),
    "from_pretrained, float32": (
        lambda: Embedding.from_pretrained(huge((2**30, 2**30), np.float32)),
        AllocationError,
    ),
    "an optimizer state array (its shape comes first)": (
        lambda: Adam(Embedding.from_parameter(table()).parameters(), 0.1).load_state_dict(
            {
                "step": np.array(0),
                "token_embedding.weight.exp_avg": huge(),
                "token_embedding.weight.exp_avg_sq": huge(),
            }
        ),
        FormatError,
    ),
    "a pickled Tensor": (
        lambda: unpickled(
            PicklePayload(restore_tensor, PicklePayload(np.broadcast_to, np.float32(0), (2**60,)))
        ),
        TensorAllocationError,
    ),
    "a pickled leaf's values": (
        lambda: unpickled(
            PicklePayload(
                restore_value,
                PicklePayload(
                    restore_node,
                    {
                        "kind": "constant",
                        "values": PicklePayload(np.broadcast_to, np.float32(0), (2**60,)),
                    },
                ),
            )
        ),
        OutputAllocationError,
    ),
    "a pickled leaf's gradient rows": (
        lambda: unpickled(
            PicklePayload(
                restore_node,
                {
                    "kind": "parameter",
                    "values": np.zeros((4, 1)),
                    "gradient": {
                        "form": "row_sparse",
                        "rows": PicklePayload(np.broadcast_to, np.int8(0), (2**62,)),
                        "values": np.zeros((0, 1)),
                        "summed": None,
                    },
                },
            )
        ),
        LeafStateError,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_view_no_array_can_hold_gets_its_typed_error_at_once(case: str) -> None:
    call, error = CASES[case]
    with within_seconds(1.0), pytest.raises(error) as caught:
        call()
    assert type(caught.value) is error


def test_a_huge_view_as_a_backward_seed_of_the_outputs_shape_is_read_where_it_lies() -> None:
    layer = Embedding.from_parameter(table(2))
    output = layer(np.zeros(2**20, dtype=np.int64))
    output.backward_with_seed(huge(output.shape, np.float64, 1))  # one value, 2**21 positions
    gradient = layer.table.tensor.sparse_gradient
    assert gradient is not None and gradient.rows.tolist() == [0]
    assert gradient.values.tolist() == [[2.0**20, 2.0**20]]


VIEWS: dict[str, Callable[[], Any]] = {
    "stride 0": lambda: np.broadcast_to(np.array([3, 1], dtype=np.int16), (5, 2)),
    "negative strides": lambda: np.arange(12).reshape(3, 4)[::-1, ::-2] % 4,
    "Fortran order": lambda: np.asfortranarray(np.arange(12).reshape(3, 4) % 4),
    "every other item": lambda: (np.arange(20) % 4)[::3],
    "overlapping windows": lambda: as_strided(np.arange(6) % 4, (4, 3), (8, 8)),
    "a 0-d view": lambda: np.broadcast_to(np.uint8(2), ()),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_view_reads_as_its_plain_copy(view: str) -> None:
    ids = VIEWS[view]()
    plain = np.array(ids, order="C", copy=True)
    layer = Embedding.from_parameter(table(2))
    assert layer(ids).numpy().tobytes() == layer(plain).numpy().tobytes()
    flat = plain.reshape(-1)
    flat_view = np.ravel(ids) if ids.ndim else ids.reshape(1)
    assert layer.forward(flat_view, plain.shape).numpy().tobytes() == layer(plain).numpy().tobytes()
    assert Tensor(plain.shape, ids).numpy().tobytes() == Tensor(plain.shape, flat).numpy().tobytes()
    assert Tensor.from_numpy(ids).numpy().tobytes() == Tensor.from_numpy(plain).numpy().tobytes()
    output = layer(plain)
    seed = np.broadcast_to(np.float64(1.5), output.shape)
    before = leaf_state(layer.table.tensor)
    output.backward_with_seed(seed)
    assert leaf_state(layer.table.tensor) != before
    twin = Embedding.from_parameter(table(2))
    twin(plain).backward_with_seed(np.full(output.shape, 1.5))
    ours, theirs = layer.table.tensor.gradient_snapshot(), twin.table.tensor.gradient_snapshot()
    assert ours is not None and theirs is not None and ours.equals(theirs)


def test_view_offsets_and_weights_read_as_their_plain_copies() -> None:
    layer = EmbeddingBag.from_parameter(
        NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE)), mode="sum"
    )
    ids = np.arange(8)[::-1] % 4
    offsets = np.broadcast_to(np.int64(0), (3,))
    weights = np.broadcast_to(np.float32(0.5), (8,))
    ours = layer(ids, offsets, per_sample_weights=weights)
    theirs = layer(ids.copy(), offsets.copy(), per_sample_weights=weights.copy())
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()


def test_a_frozen_table_from_a_view_holds_its_plain_copy() -> None:
    view = np.broadcast_to(np.array([1.0, 2.0]), (3, 2))
    layer = Embedding.from_pretrained(view)
    assert layer.table.tensor.numpy().tolist() == [[1.0, 2.0]] * 3
    assert layer.table.tensor.numpy().flags.c_contiguous
    assert TensorValue.constant(Tensor.from_numpy(view)).numpy().strides == (16, 8)
