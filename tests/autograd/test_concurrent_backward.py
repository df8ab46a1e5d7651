"""Backward passes from several threads into shared parameters sum exactly: each pass computes
without a lock and stores its gradients under the parameters' update locks.

The data are small integers, so every order of the additions gives the same exact sum and the
stored gradient can be compared bit for bit with the plain-loop reference.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.autograd import (
    GraphRetention,
    TensorValue,
    gather,
    no_grad,
)
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.errors import TapeError
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import KNOWN_TABLE
from reference import plain_scatter

JOIN_SECONDS = 60.0  # a guard against a hang, not a measurement


def run_threads(*targets: Callable[[], object]) -> None:
    """Start every target at once (behind a barrier), join them, and re-raise the first
    exception a thread raised."""
    start = threading.Barrier(len(targets))
    failures: list[BaseException] = []

    def wrapped(target: Callable[[], object]) -> None:
        try:
            start.wait()
            target()
        except BaseException as failure:  # re-raised in the calling thread below
            failures.append(failure)

    threads = [threading.Thread(target=wrapped, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_SECONDS)
        assert not thread.is_alive(), "a thread did not finish"
    if failures:
        raise failures[0]


def stored_gradient(leaf: TensorValue) -> list[float]:
    gradient = leaf.gradient
    assert gradient is not None
    return gradient.flat_values()


def integer_table(rows: int, width: int, dtype: Any = np.float64) -> Embedding:
    values = (np.arange(rows * width) % 7).astype(dtype)
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((rows, width), values))
    return Embedding.from_parameter(table)


def passes_of(
    layer: Embedding, ids: list[int], upstream: np.ndarray[Any, Any], count: int
) -> Callable[[], None]:
    def run() -> None:
        for _ in range(count):
            layer.forward(ids, (len(ids),)).backward_with_seed(upstream)

    return run


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_four_threads_of_forward_and_backward_on_one_layer_keep_every_pass(dtype: Any) -> None:
    table = NamedParameter.from_tensor(
        "token_embedding.weight", Tensor((4, 2), KNOWN_TABLE, dtype=dtype)
    )
    layer = Embedding.from_parameter(table)
    work = [
        ([2, 1, 2], np.array([[1, 0], [0, 2], [3, 4]], dtype=dtype)),
        ([0, 3], np.array([[1, 1], [-2, 5]], dtype=dtype)),
        ([3, 3, 3, 1], np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=dtype)),
        ([1], np.array([[-1, -1]], dtype=dtype)),
    ]
    passes = 300
    run_threads(*(passes_of(layer, ids, upstream, passes) for ids, upstream in work))
    expected = sum(passes * plain_scatter(ids, upstream, 4, 2) for ids, upstream in work)
    assert stored_gradient(table.tensor) == expected.reshape(-1).tolist()


def test_threads_running_compiled_kernels_without_the_interpreter_lock_keep_every_pass() -> None:
    rows, width = 512, 128  # 65,536 values: the gather and the scatter run compiled, nogil
    layer = integer_table(rows, width)
    generator = np.random.default_rng(7)
    work = [
        (
            generator.integers(0, rows, size=rows).tolist(),
            generator.integers(-3, 4, size=(rows, width)).astype(np.float64),
        )
        for _ in range(4)
    ]
    passes = 15
    run_threads(*(passes_of(layer, ids, upstream, passes) for ids, upstream in work))
    expected = sum(passes * plain_scatter(ids, upstream, rows, width) for ids, upstream in work)
    stored = layer.table.tensor.gradient
    assert stored is not None and np.array_equal(stored.numpy(), expected)


def test_threads_adding_into_a_dense_gradient_keep_every_pass() -> None:
    w = TensorValue.parameter(Tensor((3,), [1.0, 2.0, 3.0]))
    weights = [Tensor((3,), [1.0, 0.0, 2.0]), Tensor((3,), [-1.0, 4.0, 1.0])]

    def passes(weight: Tensor) -> Callable[[], None]:
        def run() -> None:
            for _ in range(400):
                w.mul(weight).sum().backward()

        return run

    run_threads(*(passes(weights[index % 2]) for index in range(4)))
    assert stored_gradient(w) == [0.0, 3200.0, 2400.0]


def test_passes_that_share_two_parameters_in_either_order_finish_and_sum_exactly() -> None:
    a = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
    b = TensorValue.parameter(Tensor((2,), [3.0, -1.0]))

    def passes(first: TensorValue, second: TensorValue) -> Callable[[], None]:
        def run() -> None:
            for _ in range(300):
                first.mul(second).add(second).sum().backward()

        return run

    run_threads(passes(a, b), passes(b, a), passes(a, b), passes(b, a))
    # x * y + y gives x the gradient y and y the gradient x + 1; each order runs 600 passes.
    a0, b0 = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    assert stored_gradient(a) == (600 * b0 + 600 * (b0 + 1)).tolist()
    assert stored_gradient(b) == (600 * (a0 + 1) + 600 * a0).tolist()


PASSES = st.lists(
    st.tuples(
        st.lists(st.integers(0, 3), min_size=1, max_size=6),
        st.integers(-4, 4),
        st.integers(1, 20),
    ),
    min_size=1,
    max_size=3,
)


@given(work=st.lists(PASSES, min_size=2, max_size=4))
def test_any_workload_split_over_threads_stores_the_sequential_sum(
    work: list[list[tuple[list[int], int, int]]],
) -> None:
    layer = integer_table(4, 2)

    def thread_of(passes: Sequence[tuple[list[int], int, int]]) -> Callable[[], None]:
        def run() -> None:
            for ids, scale, repeats in passes:
                upstream = upstream_of(ids, scale)
                for _ in range(repeats):
                    layer.forward(ids, (len(ids),)).backward_with_seed(upstream)

        return run

    run_threads(*(thread_of(passes) for passes in work))
    expected = np.zeros((4, 2))
    for passes in work:
        for ids, scale, repeats in passes:
            expected += repeats * plain_scatter(ids, upstream_of(ids, scale), 4, 2)
    assert stored_gradient(layer.table.tensor) == expected.reshape(-1).tolist()


def upstream_of(ids: list[int], scale: int) -> np.ndarray[Any, Any]:
    return scale * (np.arange(len(ids) * 2, dtype=np.float64).reshape(len(ids), 2) % 5 - 2)


class AbandonedUpdateError(Exception):
    """Raised by a planned update to give its locks back without writing anything."""


def hold_update_lock(leaf: TensorValue, holding: threading.Event, go: threading.Event) -> None:
    """Hold ``leaf``'s update lock until ``go`` is set, then give it back unchanged."""

    def planned() -> list[Callable[[Any], None]]:
        holding.set()
        go.wait(JOIN_SECONDS)
        raise AbandonedUpdateError()

    with pytest.raises(AbandonedUpdateError):
        update_leaves_in_place([leaf], planned)


def test_a_backward_pass_computes_while_another_thread_holds_the_lock_and_stores_after(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaf = known_layer.table.tensor
    computed = threading.Event()
    real_vjp = gather.gather_rows_vjp

    def observed_vjp(plan: Any, upstream: Any) -> Any:
        result = real_vjp(plan, upstream)
        computed.set()
        return result

    monkeypatch.setattr(gather, "gather_rows_vjp", observed_vjp)
    holding, go = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_update_lock, args=(leaf, holding, go))
    holder.start()
    assert holding.wait(JOIN_SECONDS)
    output = known_layer([[2, 1, 2]])  # a forward does not wait for the lock
    passer = threading.Thread(target=output.backward_with_seed, args=(np.ones((1, 3, 2)),))
    passer.start()
    assert computed.wait(JOIN_SECONDS), "the pass did not compute while the lock was held"
    passer.join(1.0)
    assert passer.is_alive(), "the pass stored its gradient while another thread held the lock"
    assert not any(stored_gradient(leaf))
    go.set()
    holder.join(JOIN_SECONDS)
    passer.join(JOIN_SECONDS)
    assert stored_gradient(leaf) == [0, 0, 1, 1, 2, 2, 0, 0]


def test_every_thread_can_be_inside_the_compute_phase_of_its_pass_at_once(
    known_layer: Embedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = 4
    all_inside = threading.Barrier(threads, timeout=JOIN_SECONDS)
    real_vjp = gather.gather_rows_vjp

    def vjp_waiting_for_every_thread(plan: Any, upstream: Any) -> Any:
        all_inside.wait()  # breaks (and fails the test) if the passes were serialized
        return real_vjp(plan, upstream)

    monkeypatch.setattr(gather, "gather_rows_vjp", vjp_waiting_for_every_thread)
    seed = np.ones((1, 3, 2))
    run_threads(*(lambda: known_layer([[2, 1, 2]]).backward_with_seed(seed),) * threads)
    assert stored_gradient(known_layer.table.tensor) == [0, 0, 4, 4, 8, 8, 0, 0]


def test_passes_that_release_one_shared_graph_either_finish_or_find_it_released(
    known_layer: Embedding,
) -> None:
    loss = known_layer([[2, 1, 2]]).sum()
    finished = [0] * 4

    def release(slot: int) -> Callable[[], None]:
        def run() -> None:
            try:
                loss.backward_with_seed(np.ones(()), GraphRetention.RELEASE)
                finished[slot] += 1
            except TapeError as error:
                assert error.rule == "tape.released"
                assert error.operation in ("sum", "gather_rows")

        return run

    run_threads(*(release(slot) for slot in range(4)))
    count = sum(finished)
    assert count >= 1
    expected = [0, 0, count, count, 2 * count, 2 * count, 0, 0]
    assert stored_gradient(known_layer.table.tensor) == expected
    with raises_rule(TapeError, "tape.released"):
        loss.backward()


def test_no_grad_in_one_thread_leaves_recording_on_in_another() -> None:
    w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
    inside, recorded = threading.Event(), threading.Event()
    kinds: list[str] = []

    def quiet() -> None:
        with no_grad():
            inside.set()
            assert recorded.wait(JOIN_SECONDS)
            kinds.append(w.mul(w).kind)

    thread = threading.Thread(target=quiet)
    thread.start()
    assert inside.wait(JOIN_SECONDS)
    kinds.append(w.mul(w).kind)
    recorded.set()
    thread.join(JOIN_SECONDS)
    assert kinds == ["operation", "constant"]
