"""A ``Tensor`` pickles by its values and rebuilds only from a float32 or float64 array;
``copy.copy`` is the tensor itself, ``copy.deepcopy`` holds its own values."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from llm_from_scratch.errors import ShapeError
from llm_from_scratch.nn import NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.tensor.storage import restore_tensor

from adversarial_inputs import ShowsOtherValues
from checks import PicklePayload, raises_rule, unpickled
from conftest import KNOWN_TABLE

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def same_tensor(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_tensor_round_trips_bit_for_bit_through_every_protocol(
    protocol: int, dtype: type
) -> None:
    values = np.array([[0.1, -0.0], [np.nan, np.inf], [-np.inf, 1e-310]], dtype=dtype)
    tensor = Tensor.from_numpy(values)
    restored = pickle.loads(pickle.dumps(tensor, protocol))
    assert type(restored) is Tensor and same_tensor(restored, tensor)
    assert not np.shares_memory(restored.numpy(), tensor.numpy())
    with pytest.raises(ValueError, match="read-only"):
        restored.numpy()[0, 0] = 1.0


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 0, 2)])
def test_scalars_and_zero_size_tensors_round_trip(shape: tuple[int, ...]) -> None:
    tensor = Tensor.from_numpy(np.full(shape, 2.5, dtype=np.float32))
    assert same_tensor(unpickled(tensor), tensor)


def test_an_out_of_band_buffer_is_copied_so_changing_it_later_changes_nothing() -> None:
    tensor = Tensor.from_numpy(np.arange(4.0))
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(tensor, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1
    memory = bytearray(buffers[0].raw())
    restored = pickle.loads(data, buffers=[memory])
    memory[:8] = np.float64(99.0).tobytes()
    assert restored.flat_values() == [0.0, 1.0, 2.0, 3.0]


def test_copy_is_the_tensor_itself_and_deepcopy_holds_its_own_values() -> None:
    tensor = Tensor((4, 2), KNOWN_TABLE)
    assert copy.copy(tensor) is tensor
    twin = copy.deepcopy(tensor)
    assert twin is not tensor and same_tensor(twin, tensor)
    assert not np.shares_memory(twin.numpy(), tensor.numpy())


def test_a_deep_copy_of_a_live_parameter_value_does_not_follow_a_later_step() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    live = table.tensor.value
    frozen, pickled = copy.deepcopy(live), unpickled(live)
    table.tensor.gather_rows([0], (1,)).sum().backward()
    SGD([table.tensor], learning_rate=1.0).step()
    assert live.flat_values()[:2] == [9.0, 10.0]
    assert frozen.flat_values() == pickled.flat_values() == list(KNOWN_TABLE)


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ([1.0, 2.0], "a pickled Tensor needs a NumPy array, got list"),
        (np.arange(3), "a pickled Tensor holds float32 or float64, got int64"),
        (np.ones(2, dtype=np.float16), "a pickled Tensor holds float32 or float64, got float16"),
        (np.array([True]), "a pickled Tensor holds float32 or float64, got bool"),
        (
            np.array([1.0, "x"], dtype=object),
            "a pickled Tensor holds float32 or float64, got object",
        ),
        (np.ma.array([1.0, 2.0], mask=[0, 1]), "a masked array has missing values"),
        (None, "a pickled Tensor needs a NumPy array, got NoneType"),
    ],
    ids=["list", "int64", "float16", "bool", "object", "masked", "None"],
)
def test_a_crafted_pickle_of_anything_but_a_float_array_is_refused(
    payload: object, detail: str
) -> None:
    with raises_rule(ShapeError, "tensor.value-type") as caught:
        unpickled(PicklePayload(restore_tensor, payload))
    assert caught.value.detail == detail


def test_a_crafted_pickle_of_an_array_subclass_gives_the_memory_it_holds() -> None:
    base = np.array([1.5, 2.5], dtype=np.float32)
    restored = restore_tensor(base.view(ShowsOtherValues))
    assert restored.dtype == np.float32 and restored.flat_values() == [1.5, 2.5]


def test_a_crafted_big_endian_array_is_kept_in_native_byte_order() -> None:
    restored = unpickled(PicklePayload(restore_tensor, np.array([1.5, -2.0], dtype=">f8")))
    assert restored.dtype == np.dtype("=f8") and restored.flat_values() == [1.5, -2.0]


@given(
    arrays(
        st.sampled_from([np.float32, np.float64]), array_shapes(min_dims=0, max_dims=3, min_side=0)
    ),
    st.sampled_from(PROTOCOLS),
)
def test_any_float_tensor_round_trips_and_deep_copies_bit_for_bit(
    values: np.ndarray,
    protocol: int,  # type: ignore[type-arg]
) -> None:
    tensor = Tensor.from_numpy(values)
    assert same_tensor(pickle.loads(pickle.dumps(tensor, protocol)), tensor)
    assert same_tensor(copy.deepcopy(tensor), tensor)
    assert tensor.numpy().tobytes() == values.tobytes()
