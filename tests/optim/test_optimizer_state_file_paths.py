"""``save_state`` and ``load_state`` read their path as the checkpoints do (one path reader): a
path the system cannot take, a folder or a missing folder is a ``checkpoint.write`` or
``checkpoint.read`` error before anything is created or changed, and a 240-byte name works."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given

from llm_from_scratch.errors import FileAccessError
from llm_from_scratch.optim import Adam, load_state, save_state

from checks import raises_rule, system_creates
from state_file_support import Model, new_model, snapshot, state_bytes, steps_for, train
from strategies import path_names

EMOJI_NAME = "😀" * 60  # 240 bytes in UTF-8


def trained() -> Adam:
    model = new_model("numpy", "float64")
    optimizer = Adam(model.parameters(), 0.01)
    train(model, optimizer, steps_for("numpy", "float64", 2), "row_sparse")
    return optimizer


def fresh() -> tuple[Model, Adam]:
    model = new_model("numpy", "float64")
    return model, Adam(model.parameters(), 0.01)


OPTIMIZER = trained()


@given(path_names())
def test_any_path_saves_and_loads_a_state_or_is_a_typed_error_that_changes_nothing(
    name: str,
) -> None:
    model, resumed = fresh()
    before = snapshot(model, resumed)
    with tempfile.TemporaryDirectory() as oracle, tempfile.TemporaryDirectory() as folder:
        expected = system_creates(oracle, name)
        path = f"{folder}/{name}"
        try:
            save_state(path, OPTIMIZER)
        except FileAccessError as error:
            assert error.rule == "checkpoint.write"
            event(f"write error {errno.errorcode.get(error.cause.errno or 0, '?')}")
            assert not expected and error.path == path and os.listdir(folder) == []
            with raises_rule(FileAccessError, "checkpoint.read") as caught:
                load_state(path, resumed)
            assert caught.value.path == path and snapshot(model, resumed) == before
            return
        event("saved")
        assert expected and os.listdir(folder) == os.listdir(oracle)
        load_state(path, resumed)
        assert state_bytes(resumed) == state_bytes(OPTIMIZER)


@pytest.mark.parametrize("given_as", [str, Path])
def test_a_240_byte_state_file_name_works(tmp_path: Path, given_as: type) -> None:
    path = given_as(tmp_path / EMOJI_NAME)
    save_state(path, OPTIMIZER)
    _, resumed = fresh()
    load_state(path, resumed)
    assert state_bytes(resumed) == state_bytes(OPTIMIZER)
    assert os.listdir(tmp_path) == [EMOJI_NAME]


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("adam\0.safetensors", errno.EINVAL),
        ("\ud800.safetensors", errno.EILSEQ),
        ("😀" * 64, errno.ENAMETOOLONG),
        ("", errno.EISDIR),
    ],
)
def test_a_path_the_system_cannot_take_is_typed_and_changes_nothing(
    tmp_path: Path, name: str, code: int
) -> None:
    path = f"{tmp_path}/{name}"
    with raises_rule(FileAccessError, "checkpoint.write") as written:
        save_state(path, OPTIMIZER)
    model, resumed = fresh()
    before = snapshot(model, resumed)
    with raises_rule(FileAccessError, "checkpoint.read") as read:
        load_state(path, resumed)
    assert written.value.cause.errno == read.value.cause.errno == code
    assert snapshot(model, resumed) == before and os.listdir(tmp_path) == []
