"""``save_state`` and ``load_state``: resuming from files is bit-identical to an uninterrupted
run, and the file is the state dict as the safetensors package reads it."""

from __future__ import annotations

import json
import os
import struct
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from llm_from_scratch.errors import FormatError
from llm_from_scratch.nn import load_parameters, save_parameters
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW, load_state, save_state

from checks import raises_rule
from state_file_support import (
    FACTORIES,
    MODES,
    SIZES,
    new_model,
    snapshot,
    state_bytes,
    steps_for,
    train,
)

EXPECTED_METADATA = {
    "sgd": {"optimizer": "SGD", "learning_rate": "0.1"},
    "adagrad": {
        "optimizer": "Adagrad",
        "learning_rate": "0.1",
        "eps": "1e-10",
        "initial_accumulator": "0.1",
    },
    "adam": {
        "optimizer": "Adam",
        "learning_rate": "0.01",
        "betas[0]": "0.9",
        "betas[1]": "0.999",
        "eps": "1e-08",
        "weight_decay": "0.1",
    },
    "adamw": {
        "optimizer": "AdamW",
        "learning_rate": "0.01",
        "betas[0]": "0.9",
        "betas[1]": "0.999",
        "eps": "1e-08",
        "weight_decay": "0.01",
    },
}
STEPS, SAVED_AFTER = 12, 5


def resumed_run(
    tmp_path: Path, name: str, dtype: str, mode: str, size: str, *, load: bool = True
) -> tuple[dict[str, object], dict[str, object]]:
    """Snapshots of an uninterrupted run and of one saved to files after ``SAVED_AFTER`` steps,
    rebuilt from other values, loaded (unless ``load`` is false) and run to the end."""
    factory, steps = FACTORIES[name], steps_for(size, dtype, STEPS)
    straight = new_model(size, dtype)
    straight_optimizer = factory(straight.parameters())
    train(straight, straight_optimizer, steps, mode)

    first = new_model(size, dtype)
    interrupted = factory(first.parameters())
    train(first, interrupted, steps[:SAVED_AFTER], mode)
    save_parameters(tmp_path / "model.safetensors", first.named_parameters())
    save_state(tmp_path / "optimizer.safetensors", interrupted)
    del first, interrupted

    resumed = new_model(size, dtype, seed=99)  # other values: the files must bring them back
    load_parameters(tmp_path / "model.safetensors", into=resumed.named_parameters())
    optimizer = factory(resumed.parameters())
    if load:
        load_state(tmp_path / "optimizer.safetensors", optimizer)
        assert optimizer.step_count == SAVED_AFTER
    train(resumed, optimizer, steps[SAVED_AFTER:], mode)
    expected, actual = snapshot(straight, straight_optimizer), snapshot(resumed, optimizer)
    for taken in (expected, actual):
        for key in [key for key in taken if "revision" in key]:
            del taken[key]  # a rebuilt leaf counts its own revisions
    return expected, actual


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", FACTORIES)
def test_resuming_from_saved_files_is_bit_identical_to_an_uninterrupted_run(
    tmp_path: Path, name: str, dtype: str, mode: str, size: str
) -> None:
    expected, actual = resumed_run(tmp_path, name, dtype, mode, size)
    assert actual == expected


@pytest.mark.parametrize("name", FACTORIES)
def test_without_load_state_the_resumed_run_differs(tmp_path: Path, name: str) -> None:
    expected, actual = resumed_run(tmp_path, name, "float64", "row_sparse", "numpy", load=False)
    assert actual["state"] != expected["state"]  # SGD: the step count alone


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", FACTORIES)
def test_the_file_is_the_state_dict_as_the_safetensors_package_reads_it(
    tmp_path: Path, name: str, dtype: str
) -> None:
    model = new_model("numpy", dtype)
    optimizer = FACTORIES[name](model.parameters())
    train(model, optimizer, steps_for("numpy", dtype, 3), "row_sparse")
    path = tmp_path / "optimizer.safetensors"
    save_state(path, optimizer)
    loaded = load_file(path)
    assert state_bytes_of(loaded) == state_bytes(optimizer)
    assert loaded["step"].shape == () and loaded["step"].dtype == np.int64
    assert int(loaded["step"]) == 3
    with safe_open(path, framework="np") as opened:
        assert opened.metadata() == EXPECTED_METADATA[name]


def state_bytes_of(arrays: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    return {key: (str(a.dtype), a.shape, a.tobytes()) for key, a in arrays.items()}


def header_of(path: Path) -> dict[str, Any]:
    content = path.read_bytes()
    length = struct.unpack("<Q", content[:8])[0]
    header: dict[str, Any] = json.loads(content[8 : 8 + length])
    return header


def test_the_header_lists_step_as_a_scalar_i64_and_the_wider_tensors_first(tmp_path: Path) -> None:
    model = new_model("numpy", "float32")
    optimizer = Adam(model.parameters(), 0.01)
    path = tmp_path / "adam.safetensors"
    save_state(path, optimizer)
    header = header_of(path)
    assert header["step"] == {"dtype": "I64", "shape": [], "data_offsets": [0, 8]}
    tensors = {key: entry for key, entry in header.items() if key != "__metadata__"}
    by_offset = sorted((entry["data_offsets"], key) for key, entry in tensors.items())
    assert [key for _, key in by_offset] == [
        "step",
        "token_embedding.weight.exp_avg",
        "token_embedding.weight.exp_avg_sq",
        "1.exp_avg",
        "1.exp_avg_sq",
    ]
    assert {header[key]["dtype"] for _, key in by_offset[1:]} == {"F32"}


def test_sgd_keeps_only_the_step_count(tmp_path: Path) -> None:
    model = new_model("numpy", "float64")
    optimizer = SGD(model.parameters(), 0.1)
    train(model, optimizer, steps_for("numpy", "float64", 2), "dense")
    path = tmp_path / "sgd.safetensors"
    save_state(path, optimizer)
    assert state_bytes_of(load_file(path)) == state_bytes_of({"step": np.array(2, np.int64)})
    resumed = SGD(model.parameters(), 0.1)
    load_state(path, resumed)
    assert resumed.step_count == 2


def test_a_file_another_tool_writes_with_the_same_metadata_loads(tmp_path: Path) -> None:
    model = new_model("numpy", "float64")
    optimizer = Adagrad(model.parameters(), 0.1, initial_accumulator=0.1)
    train(model, optimizer, steps_for("numpy", "float64", 3), "row_sparse")
    path = tmp_path / "adagrad.safetensors"
    save_file(optimizer.state_dict(), str(path), metadata=EXPECTED_METADATA["adagrad"])
    resumed = Adagrad(model.parameters(), 0.1, initial_accumulator=0.1)
    load_state(path, resumed)
    assert state_bytes(resumed) == state_bytes(optimizer)


@pytest.mark.parametrize(
    ("given", "written"),
    [
        (0.1 + 0.2, "0.30000000000000004"),
        (np.float32(0.1), "0.10000000149011612"),
        (Fraction(1, 3), "0.3333333333333333"),
        (1e-300, "1e-300"),
    ],
)
def test_a_hyperparameter_is_written_as_the_float_the_optimizer_uses_and_compared_exactly(
    tmp_path: Path, given: Any, written: str
) -> None:
    model = new_model("numpy", "float64")
    path = tmp_path / "adam.safetensors"
    save_state(path, Adam(model.parameters(), given))
    with safe_open(path, framework="np") as opened:
        assert opened.metadata()["learning_rate"] == written
    load_state(path, Adam(model.parameters(), given))  # the same value reads back equal
    nearest = float(np.nextafter(float(given), 1.0))  # one unit in the last place away
    with raises_rule(FormatError, "optimizer.state-file") as caught:
        load_state(path, Adam(model.parameters(), nearest))
    assert (caught.value.key, caught.value.expected, caught.value.actual) == (
        "learning_rate",
        repr(nearest),
        written,
    )


def test_an_optimizer_over_bare_leaves_saves_and_loads_by_position(tmp_path: Path) -> None:
    model = new_model("numpy", "float64")
    leaves = [model.layer.table.tensor, model.bias]
    optimizer = AdamW(leaves, 0.01)
    train(model, optimizer, steps_for("numpy", "float64", 2), "row_sparse")
    path = tmp_path / "adamw.safetensors"
    save_state(path, optimizer)
    names = ["0.exp_avg", "0.exp_avg_sq", "1.exp_avg", "1.exp_avg_sq", "step"]
    assert sorted(load_file(path)) == names
    resumed = AdamW(leaves, 0.01)
    load_state(path, resumed)
    assert state_bytes(resumed) == state_bytes(optimizer)


def test_saving_again_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    model = new_model("numpy", "float64")
    optimizer = Adam(model.parameters(), 0.01)
    path = tmp_path / "adam.safetensors"
    save_state(path, optimizer)
    inode = path.stat().st_ino
    train(model, optimizer, steps_for("numpy", "float64", 1), "row_sparse")
    save_state(str(path), optimizer)
    assert path.stat().st_ino != inode  # renamed into place, not rewritten
    assert os.listdir(tmp_path) == [path.name]
    assert int(load_file(path)["step"]) == 1


def test_the_state_file_keeps_load_parameters_rules(tmp_path: Path) -> None:
    model = new_model("numpy", "float64")
    optimizer = Adam(model.parameters(), 0.01)
    train(model, optimizer, steps_for("numpy", "float64", 2), "row_sparse")
    path = tmp_path / "adam.safetensors"
    save_state(path, optimizer)
    with raises_rule(FormatError, "checkpoint.tensor-dtype") as caught:
        load_parameters(path)
    assert (caught.value.name, caught.value.dtype) == ("step", "I64")
    key = "token_embedding.weight.exp_avg"
    loaded = load_parameters(path, names=[key])
    assert loaded[key].tensor.numpy().tobytes() == optimizer.state_dict()[key].tobytes()


def test_a_save_while_another_thread_steps_holds_the_state_of_one_step_count(
    tmp_path: Path,
) -> None:
    model = new_model("compiled", "float64")
    optimizer = Adam(model.parameters(), 0.01)
    steps = steps_for("compiled", "float64", 8)
    after_each = [state_bytes(optimizer)]

    def stepping() -> None:
        for step in steps:
            train(model, optimizer, [step], "fused_row_sparse")
            after_each.append(state_bytes(optimizer))  # only this thread steps

    thread = threading.Thread(target=stepping)
    thread.start()
    saved = []
    while thread.is_alive() or not saved:
        path = tmp_path / f"{len(saved)}.safetensors"
        save_state(path, optimizer)
        saved.append(path)
    thread.join()
    counts = set()
    for path in saved:
        state = state_bytes_of(load_file(path))
        count = int(load_file(path)["step"])
        assert state == after_each[count]
        counts.add(count)
    assert counts  # at least one file; usually several step counts
