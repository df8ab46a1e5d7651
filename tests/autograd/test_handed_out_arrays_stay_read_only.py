"""Every array the package hands out is read-only for good: neither it nor any array in its
``base`` chain can be made writeable, and changing its shape or dtype changes nothing stored."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from llm_from_scratch.autograd import RowSparseGradient, TensorValue
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.tensor.storage import read_only_view

from conftest import KNOWN_TABLE

Array = np.ndarray[Any, Any]
DTYPES = (np.float64, np.float32)


def base_chain(array: Array) -> Iterator[Array]:
    """The array, then every ndarray in its ``base`` chain."""
    current: object = array
    while isinstance(current, np.ndarray):
        yield current
        current = current.base


def assert_writes_stay_off(array: Array) -> None:
    for link in base_chain(array):
        assert not link.flags.writeable
        with pytest.raises(ValueError, match="WRITEABLE"):
            link.flags.writeable = True
        assert not link.flags.writeable


@dataclass(frozen=True)
class State:
    """Everything stored for one leaf, as bytes, to compare before and after."""

    values: bytes
    shape: tuple[int, ...]
    gradient: bytes | None
    sparse: tuple[bytes, bytes, tuple[int, ...], str] | None
    revision: int


def state_of(leaf: TensorValue) -> State:
    gradient = leaf.gradient_snapshot()
    sparse = leaf.sparse_gradient
    return State(
        values=leaf.value_snapshot().numpy().tobytes(),
        shape=leaf.shape,
        gradient=None if gradient is None else gradient.numpy().tobytes(),
        sparse=None
        if sparse is None
        else (
            sparse.rows.tobytes(),
            sparse.values.tobytes(),
            sparse.values.shape,
            str(sparse.values.dtype),
        ),
        revision=leaf.value_revision,
    )


@dataclass(frozen=True)
class Scene:
    """A parameter after one forward and backward, the forward's output and a constant."""

    leaf: TensorValue
    output: TensorValue
    constant: TensorValue


def table_scene(dtype: type[np.floating[Any]], rows: int = 4) -> Scene:
    """A ``[rows, 2]`` table fed by a row gather (its gradient stays row-sparse)."""
    values = np.arange(rows * 2, dtype=dtype) + 10
    leaf = TensorValue.parameter(Tensor((rows, 2), values, dtype=dtype))
    ids = [2, 1, 2] if rows else []
    output = leaf.gather_rows(ids, (len(ids),))
    output.backward_with_seed(np.arange(len(ids) * 2, dtype=dtype).reshape(len(ids), 2))
    return Scene(leaf, output, TensorValue.constant(Tensor((rows, 2), values, dtype=dtype)))


def dense_scene(dtype: type[np.floating[Any]], shape: tuple[int, ...]) -> Scene:
    """A parameter of any other shape (its gradient is dense), through ``mul`` and ``sum``."""
    count = int(np.prod(shape))
    values = np.arange(count, dtype=dtype) + 1
    leaf = TensorValue.parameter(Tensor(shape, values, dtype=dtype))
    output = leaf.mul(leaf)
    output.sum().backward()
    return Scene(leaf, output, TensorValue.constant(Tensor(shape, values, dtype=dtype)))


SCENES: dict[str, Callable[[type[np.floating[Any]]], Scene]] = {
    "table 4x2": table_scene,
    "empty table 0x2": lambda dtype: table_scene(dtype, rows=0),
    "vector [4]": lambda dtype: dense_scene(dtype, (4,)),
    "rank three [2,3,1]": lambda dtype: dense_scene(dtype, (2, 3, 1)),
    "scalar []": lambda dtype: dense_scene(dtype, ()),
    "empty [0]": lambda dtype: dense_scene(dtype, (0,)),
    "empty [3,0]": lambda dtype: dense_scene(dtype, (3, 0)),
}


def hand_outs(scene: Scene) -> dict[str, Array]:
    """Every array the package hands out for this scene."""
    leaf, output, constant = scene.leaf, scene.output, scene.constant
    gradient, snapshot = leaf.gradient, leaf.gradient_snapshot()
    assert gradient is not None and snapshot is not None
    arrays = {
        "leaf.numpy()": leaf.numpy(),
        "leaf.value.numpy()": leaf.value.numpy(),
        "leaf.value_snapshot().numpy()": leaf.value_snapshot().numpy(),
        "leaf.gradient.numpy()": gradient.numpy(),
        "leaf.gradient_snapshot().numpy()": snapshot.numpy(),
        "output.numpy()": output.numpy(),
        "output.value.numpy()": output.value.numpy(),
        "output.value_snapshot().numpy()": output.value_snapshot().numpy(),
        "output.sum().numpy()": output.sum().numpy(),
        "constant.numpy()": constant.numpy(),
        "constant.value.numpy()": constant.value.numpy(),
        "Tensor(...).numpy()": Tensor(leaf.shape, leaf.numpy(), dtype=leaf.dtype).numpy(),
        "Tensor.zeros(...).numpy()": Tensor.zeros(leaf.shape, dtype=leaf.dtype).numpy(),
    }
    sparse = leaf.sparse_gradient
    if sparse is not None:
        arrays["sparse_gradient.rows"] = sparse.rows
        arrays["sparse_gradient.values"] = sparse.values
        if sparse.summed is not None:
            arrays["sparse_gradient.summed"] = sparse.summed
    return arrays


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("scene", SCENES.values(), ids=SCENES.keys())
def test_no_handed_out_array_or_array_in_its_base_chain_can_be_made_writeable(
    scene: Callable[[type[np.floating[Any]]], Scene], dtype: type[np.floating[Any]]
) -> None:
    built = scene(dtype)
    before = state_of(built.leaf)
    for name, array in hand_outs(built).items():
        try:
            assert_writes_stay_off(array)
        except AssertionError as failure:
            raise AssertionError(f"{name}: {failure}") from failure
    assert state_of(built.leaf) == before


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("scene", SCENES.values(), ids=SCENES.keys())
def test_reshaping_or_retyping_a_handed_out_array_changes_nothing_stored(
    scene: Callable[[type[np.floating[Any]]], Scene], dtype: type[np.floating[Any]]
) -> None:
    built = scene(dtype)
    before = state_of(built.leaf)
    output_before = built.output.value_snapshot().numpy().tobytes()
    for array in hand_outs(built).values():
        array.shape = (array.size,)
        array.dtype = np.dtype(np.uint8)
    assert state_of(built.leaf) == before
    assert built.output.shape == tuple(built.output.numpy().shape)
    assert built.output.value_snapshot().numpy().tobytes() == output_before


def test_switching_writes_on_for_the_sparse_gradient_values_fails_and_the_gradient_stays(
    known_layer: Embedding,
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.arange(6.0).reshape(1, 3, 2))
    before = state_of(leaf)
    sparse = leaf.sparse_gradient
    assert sparse is not None
    for array in (sparse.values, sparse.values.base):
        with pytest.raises(ValueError):
            array.flags.writeable = True
    with pytest.raises(ValueError, match="read-only"):
        sparse.values[...] = 99.0
    assert state_of(leaf) == before
    assert leaf.gradient.flat_values() == [0, 0, 2, 3, 4, 6, 0, 0]  # type: ignore[union-attr]


def test_switching_writes_on_for_the_sparse_gradient_rows_fails_and_the_gradient_stays_readable(
    known_layer: Embedding,
) -> None:
    leaf = known_layer.table.tensor
    known_layer([[2, 1, 2]]).backward_with_seed(np.ones((1, 3, 2)))
    sparse = leaf.sparse_gradient
    assert sparse is not None
    for array in base_chain(sparse.rows):
        with pytest.raises(ValueError):
            array.flags.writeable = True
    with pytest.raises(ValueError, match="read-only"):
        sparse.rows[0] = 10**6
    assert leaf.gradient.flat_values() == [0, 0, 1, 1, 2, 2, 0, 0]  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_the_dense_gradient_of_a_non_table_parameter_cannot_be_made_writeable(
    dtype: type[np.floating[Any]],
) -> None:
    w = TensorValue.parameter(Tensor((3,), [1.0, 2.0, 3.0], dtype=dtype))
    w.mul(w).sum().backward()
    before = state_of(w)
    gradient = w.gradient
    assert gradient is not None
    array = gradient.numpy()
    assert array.base is not None
    for link in (array, array.base):
        with pytest.raises(ValueError):
            link.flags.writeable = True
    assert state_of(w) == before
    assert w.gradient.flat_values() == [2.0, 4.0, 6.0]  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_the_base_of_a_table_view_cannot_be_made_writeable_so_the_table_keeps_its_revision(
    dtype: type[np.floating[Any]],
) -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE, dtype=dtype))
    leaf = table.tensor
    before = state_of(leaf)
    view = leaf.numpy()
    assert view.base is not None
    with pytest.raises(ValueError):
        view.base.flags.writeable = True
    with pytest.raises(ValueError, match="read-only"):
        view.base[...] = 0.0
    assert state_of(leaf) == before
    assert leaf.value.flat_values() == list(KNOWN_TABLE)


def test_a_live_view_shows_an_optimizer_step_without_a_copy(known_layer: Embedding) -> None:
    leaf = known_layer.table.tensor
    view, value = leaf.numpy(), leaf.value.numpy()
    assert np.shares_memory(view, value)
    known_layer([[0]]).backward_with_seed(np.ones((1, 1, 2)))
    SGD(known_layer.parameters(), learning_rate=1.0).step()
    assert view[0].tolist() == [9.0, 10.0] and value[0].tolist() == [9.0, 10.0]
    assert_writes_stay_off(view)


def test_a_row_sparse_gradient_built_by_a_scatter_hands_out_read_only_views() -> None:
    gradient = RowSparseGradient.from_scatter(
        np.array([2, 1, 2]), np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]), (4, 2)
    )
    assert gradient.summed is not None
    for array in (gradient.rows, gradient.values, gradient.summed):
        assert_writes_stay_off(array)
    assert gradient.rows is not gradient.rows  # a new view each time
    assert gradient.to_dense().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]


def test_a_gradient_check_hands_out_copies_that_change_nothing_when_written() -> None:
    w = TensorValue.parameter(Tensor((2,), [3.0, -1.0]))
    before = state_of(w)
    probe = check_gradient(lambda p: p.mul(p).sum(), w)
    probe.analytic[...] = 0.0
    probe.numeric[...] = 0.0
    assert state_of(w) == before


ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.intp]),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
    elements=st.integers(-100, 100),
)


@given(array=ARRAYS, transpose=st.booleans(), step=st.integers(1, 2))
def test_a_read_only_view_holds_the_values_and_never_turns_writeable_again(
    array: Array, transpose: bool, step: int
) -> None:
    laid_out = array.T if transpose else array
    if laid_out.ndim:
        laid_out = laid_out[(slice(None, None, step),) * laid_out.ndim]
    view = read_only_view(laid_out)
    assert view.shape == laid_out.shape and view.dtype == laid_out.dtype
    assert np.array_equal(view, laid_out)
    assert_writes_stay_off(view)
    if laid_out.flags.c_contiguous and laid_out.size:
        assert np.shares_memory(view, laid_out)  # no copy: later writes by the owner show
    assert read_only_view(laid_out) is not view
