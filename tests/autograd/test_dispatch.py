"""One dispatch chooses NumPy or a compiled kernel; Numba loads on the first large operation."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llm_from_scratch.autograd.dispatch import (
    COMPILED_KERNEL_MIN_VALUES,
    compiled_kernel,
    runs_compiled,
)

NUMBA_LOADS_LATE = """
import contextlib, io, sys
from llm_from_scratch.cli import main
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import SGD

with contextlib.redirect_stdout(io.StringIO()):
    main(["ch18"])
    main(["ch18", "trace"])
layer = Embedding.new("token_embedding.weight", 10, 4, SplitMix64.from_seed(1))
layer([[2, 1, 2]]).sum().backward()
SGD(layer.parameters(), learning_rate=0.5).step()
print("numba" in sys.modules)
layer([1] * ({minimum} // 4)).sum().backward()
print("numba" in sys.modules)
"""


def test_the_threshold_is_the_first_size_that_runs_compiled() -> None:
    assert not runs_compiled(COMPILED_KERNEL_MIN_VALUES - 1)
    assert runs_compiled(COMPILED_KERNEL_MIN_VALUES)


def test_numba_is_imported_only_by_the_first_operation_at_the_threshold() -> None:
    result = subprocess.run(
        [sys.executable, "-c", NUMBA_LOADS_LATE.format(minimum=COMPILED_KERNEL_MIN_VALUES)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["False", "True"]


def test_a_kernel_loop_must_be_a_plain_function() -> None:
    with pytest.raises(TypeError):
        compiled_kernel(parallel=False)(print)


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_one_kernel_thread_runs_serial_compilations_with_the_same_bits(optimizer: str) -> None:
    """On one kernel thread the kernels run serial compilations and a fused step sums each
    row's upstream rows front to back before the update: the same bits as on all threads."""
    import numpy as np

    from llm_from_scratch.autograd.dispatch import kernel_thread_limit, set_kernel_threads
    from llm_from_scratch.nn import Embedding, SplitMix64
    from llm_from_scratch.optim import SGD, Adagrad, Adam

    kinds = {"sgd": SGD, "adagrad": Adagrad, "adam": Adam}

    def trained() -> bytes:
        layer = Embedding.new("token_embedding.weight", 500, 64, SplitMix64.from_seed(5))
        steps = kinds[optimizer](layer.parameters(), learning_rate=0.1)
        rng = np.random.default_rng(0)
        for _ in range(3):
            ids = rng.integers(0, 500, size=(40, 50))
            steps.backward_step(layer(ids), rng.normal(size=(40, 50, 64)))
        return layer.table.tensor.numpy().tobytes()

    limit = kernel_thread_limit()
    previous = set_kernel_threads(1)
    try:
        serial = trained()
        assert set_kernel_threads(limit) == 1
        assert trained() == serial
    finally:
        set_kernel_threads(previous)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, "PASSIVE"),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE"),
        ({"GOMP_SPINCOUNT": "1000"}, None),
    ],
)
def test_sleeping_threads_are_asked_for_only_when_the_environment_chose_no_wait(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, str], expected: str | None
) -> None:
    from llm_from_scratch.autograd.dispatch import sleep_between_kernels

    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    sleep_between_kernels()
    assert os.environ.get("OMP_WAIT_POLICY") == expected
    assert os.environ.get("GOMP_SPINCOUNT") == given.get("GOMP_SPINCOUNT")
