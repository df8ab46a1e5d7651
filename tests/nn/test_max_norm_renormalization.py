"""``max_norm``: looked-up rows whose norm exceeds it are scaled in place, by PyTorch's rule, before
the lookup reads them; the write bumps the table's revision only when a row changes, so a graph
recorded before it is refused (``StaleValueError``) instead of running on changed values; a
table that never changes refuses ``max_norm``; and the renormalization and the lookup are one
step for other threads. The reference is ``embedding_renorm_`` restated as a loop."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from llm_from_scratch.autograd import StaleValueError, TensorValue, no_grad
from llm_from_scratch.errors import OptionError
from llm_from_scratch.nn import Embedding, EmbeddingBag, NamedParameter, functional
from llm_from_scratch.nn.renorm import row_norms
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from checks import leaf_state, raises_rule
from conftest import KNOWN_TABLE, KNOWN_UPSTREAM
from reference import pytorch_renorm, row_norm

UPSTREAM = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)


def known_layer_with(max_norm: float, norm_type: float = 2.0) -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table, max_norm=max_norm, norm_type=norm_type)


def test_a_forward_scales_each_looked_up_row_above_max_norm_before_reading_it() -> None:
    layer = known_layer_with(max_norm=30.0)
    before = layer.table.tensor.value_snapshot().numpy()
    out = layer([[2, 1, 2]])
    expected = pytorch_renorm(before, [2, 1, 2], 30.0, 2.0)
    assert layer.table.tensor.numpy().tobytes() == expected.tobytes()
    assert out.numpy().tobytes() == expected[[2, 1, 2]].reshape(1, 3, 2).tobytes()
    # row 2 (norm 43.1) and row 1 (norm 29.0 < 30) : only row 2 changed; rows 0 and 3 untouched
    assert expected[1].tolist() == [20.0, 21.0] and expected[3].tolist() == [40.0, 41.0]
    assert 29.9999 < float(np.hypot(*expected[2])) < 30.0


@pytest.mark.parametrize("norm_type", [0.5, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_renormalized_table_follows_pytorchs_rule_row_by_row(
    norm_type: float, dtype: str
) -> None:
    rng = np.random.default_rng(5)
    values = (rng.normal(size=(30, 16)) * 3).astype(dtype)
    ids = rng.integers(0, 30, size=(4, 9))
    table = TensorValue.parameter(Tensor(values.shape, values, dtype=dtype))
    functional.embedding(ids, table, max_norm=2.5, norm_type=norm_type)
    expected = pytorch_renorm(values, ids.reshape(-1).tolist(), 2.5, norm_type)
    if norm_type in (1.0, 2.0):  # sums and square roots: the same operations in the same order
        assert table.numpy().tobytes() == expected.tobytes()
    else:  # a power may differ in its last bit between NumPy's and C's pow
        np.testing.assert_allclose(table.numpy(), expected, rtol=4 * np.finfo(dtype).eps)
    untouched = sorted(set(range(30)) - set(ids.reshape(-1).tolist()))
    assert table.numpy()[untouched].tobytes() == values[untouched].tobytes()


def test_the_norm_is_computed_in_the_tables_dtype_left_to_right() -> None:
    row = np.array([[1e8, 1.0, -1e8, 1.0]], dtype=np.float32)
    assert row_norms(row, 1.0).tolist() == [row_norm(row[0], 1.0)]
    assert row_norms(row.astype(np.float64), 1.0).tolist() == [200000002.0]
    assert row_norms(row, 1.0).dtype == np.float32


def test_a_graph_recorded_before_a_renormalizing_forward_is_refused_as_stale() -> None:
    layer = known_layer_with(max_norm=30.0)
    earlier = layer([[1]])  # row 1 is within max_norm: nothing changes
    assert layer.table.tensor.value_revision == 0
    layer([[2]])  # row 2 is scaled: the table changes
    assert layer.table.tensor.value_revision == 1
    before = leaf_state(layer.table.tensor)
    with pytest.raises(StaleValueError) as caught:
        earlier.backward_with_seed(np.ones((1, 1, 2)))
    error = caught.value
    assert (error.operation, error.operand, error.recorded_revision, error.current_revision) == (
        "gather_rows",
        "table",
        0,
        1,
    )
    assert leaf_state(layer.table.tensor) == before


def test_a_forward_that_changes_no_row_keeps_the_revision_and_earlier_graphs_valid() -> None:
    layer = known_layer_with(max_norm=100.0)
    first = layer([[2, 1, 2]])
    second = layer([[3, 0]])
    assert layer.table.tensor.value_revision == 0
    first.backward_with_seed(UPSTREAM)
    second.backward_with_seed(np.ones((1, 2, 2)))
    assert layer.table.tensor.gradient_snapshot().tolist() == [[1, 1], [0, 2], [4, 4], [1, 1]]  # type: ignore[union-attr]


def test_the_output_of_a_renormalizing_forward_runs_backward_with_the_new_values() -> None:
    layer = known_layer_with(max_norm=1.0)
    out = layer([[2, 1, 2]])
    out.backward_with_seed(UPSTREAM)  # recorded after the write: not stale
    assert layer.table.tensor.gradient_snapshot().tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]  # type: ignore[union-attr]
    norms = np.hypot(out.numpy()[..., 0], out.numpy()[..., 1])
    assert (norms <= 1.0).all()


def test_a_frozen_table_returns_renormalized_rows_and_never_changes() -> None:
    values = np.array(KNOWN_TABLE).reshape(4, 2)
    frozen = Embedding.from_pretrained(values, max_norm=30.0)
    expected = pytorch_renorm(values, [2, 1, 2], 30.0, 2.0)
    for _ in range(2):  # the same rows every time: nothing was written
        out = frozen([[2, 1, 2]])
        assert out.kind == "constant"
        assert out.numpy().tobytes() == expected[[2, 1, 2]].reshape(1, 3, 2).tobytes()
    function = functional.embedding([2], frozen.table.tensor, max_norm=1.0)
    assert float(np.hypot(*function.numpy()[0])) <= 1.0
    assert frozen.table.tensor.numpy().tobytes() == values.tobytes()
    assert frozen.table.tensor.value_revision == 0


def test_an_operation_result_refuses_max_norm_as_an_option_value() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE)).tensor
    result = table.mul(Tensor((4, 2), [1.0] * 8))
    for call in (
        lambda: functional.embedding([2], result, max_norm=1.0),
        lambda: functional.embedding_bag([[2]], result, max_norm=1.0),
    ):
        with raises_rule(OptionError, "option.value") as caught:
            call()
        assert (caught.value.name, caught.value.value) == ("max_norm", 1.0)
        assert caught.value.requirement.startswith("None when the table is an operation result")
    assert table.numpy().reshape(-1).tolist() == list(KNOWN_TABLE)


def test_under_no_grad_the_table_is_still_renormalized_and_its_revision_bumped() -> None:
    layer = known_layer_with(max_norm=1.0)
    with no_grad():
        out = layer([0])
    assert out.kind == "constant"
    assert layer.table.tensor.value_revision == 1
    assert float(np.hypot(*layer.table.tensor.numpy()[0])) <= 1.0


def test_a_bag_with_max_norm_renormalizes_every_id_padding_included_and_goes_stale_too() -> None:
    table = NamedParameter.from_tensor("w", Tensor((4, 2), KNOWN_TABLE))
    bags = EmbeddingBag.from_parameter(table, mode="sum", padding_idx=3, max_norm=50.0)
    earlier = bags([[0, 1]])  # rows 0 and 1 are within 50
    bags([[3, 3]])  # the padding row 3 (norm 57.3) is renormalized, as PyTorch does
    assert table.tensor.value_revision == 1
    assert float(np.hypot(*table.tensor.numpy()[3])) < 50.0
    with pytest.raises(StaleValueError):
        earlier.backward_with_seed(np.ones((1, 2)))


def test_an_sgd_step_on_another_thread_never_slips_between_renormalization_and_lookup() -> None:
    values = np.tile(np.array([[3.0, 4.0]]), (8, 1))
    table = NamedParameter.from_tensor("w", Tensor(values.shape, values))
    layer = Embedding.from_parameter(table, max_norm=5.0)
    grow = Embedding.from_parameter(table)  # its gradient points inwards: steps grow the rows
    grow(list(range(8))).backward_with_seed(-np.tile(np.array([[3.0, 4.0]]), (8, 1)))
    optimizer = SGD([table], learning_rate=0.01)
    stop = threading.Event()
    largest: list[float] = []

    def step_until_stopped() -> None:
        while not stop.is_set():
            optimizer.step()

    stepper = threading.Thread(target=step_until_stopped)
    stepper.start()
    try:
        for _ in range(300):
            out = layer(list(range(8))).numpy()
            largest.append(float(np.hypot(out[:, 0], out[:, 1]).max()))
    finally:
        stop.set()
        stepper.join()
    assert max(largest) <= 5.0


@pytest.mark.parametrize("norm_type", [0.5, 1.0, 2.0, 3.5])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_frozen_lookup_returns_the_rows_a_trainable_lookup_writes(
    norm_type: float, dtype: str
) -> None:
    rng = np.random.default_rng(8)
    values = (rng.normal(size=(20, 9)) * 2).astype(dtype)
    ids = rng.integers(0, 20, size=(3, 11))
    frozen = Embedding.from_pretrained(values, max_norm=1.5, norm_type=norm_type)
    trainable = Embedding.from_pretrained(values, freeze=False, max_norm=1.5, norm_type=norm_type)
    assert frozen(ids).numpy().tobytes() == trainable(ids).numpy().tobytes()
    bags = EmbeddingBag.from_pretrained(values, mode="max", max_norm=1.5, norm_type=norm_type)
    trainable_bags = EmbeddingBag.from_pretrained(
        values, freeze=False, mode="max", max_norm=1.5, norm_type=norm_type
    )
    assert bags(ids).numpy().tobytes() == trainable_bags(ids).numpy().tobytes()
    assert frozen.table.tensor.numpy().tobytes() == values.tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm_type", [1e-50, 1e-300, 5e-324, 1e300])
def test_a_norm_type_at_the_dtypes_limits_warns_nothing_and_renormalizes_as_pytorch(
    dtype: str, norm_type: float
) -> None:
    # In float32, 1e-50 rounds to 0: 1/p is infinite, which NumPy would report as a division by
    # zero; the norm is then 0, 1 or inf, as in PyTorch's kernel. (Warnings are errors here.)
    values = np.array([[3.0, -4.0], [0.0, 0.0], [1e-20, 1e20], [0.5, 0.25]], dtype=dtype)
    ids = [0, 1, 2, 3]
    with np.errstate(all="ignore"):  # the reference's own scalar arithmetic, not the package's
        expected = pytorch_renorm(values, ids, 1.0, norm_type)
    for freeze in (True, False):
        layer = Embedding.from_pretrained(values, freeze=freeze, max_norm=1.0, norm_type=norm_type)
        assert layer(ids).numpy().tobytes() == expected.tobytes()
