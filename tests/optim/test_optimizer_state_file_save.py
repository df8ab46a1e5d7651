"""``save_state`` replaces a file atomically: on any failure an earlier file stays intact, no
temporary file is left, and the optimizer is as it was and steps again."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from llm_from_scratch.errors import FileAccessError
from llm_from_scratch.optim import Adam, Optimizer, load_state, save_state

from checkpoint_support import failing_after, folder_everyone_enters, outcome_without_privileges
from checks import raises_rule
from state_file_support import Model, new_model, snapshot, steps_for, train

EARLIER = b"an earlier optimizer state that must survive"


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    """A folder holding only an earlier file at the target path."""
    path = tmp_path / "optimizer.safetensors"
    path.write_bytes(EARLIER)
    return path


def trained() -> tuple[Model, Adam]:
    model = new_model("numpy", "float64")
    optimizer = Adam(model.parameters(), 0.01)
    train(model, optimizer, steps_for("numpy", "float64", 2), "row_sparse")
    return model, optimizer


def assert_untouched(path: Path) -> None:
    assert path.read_bytes() == EARLIER
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temporary file left


def assert_steps_again(optimizer: Optimizer) -> None:
    """The save let go of the optimizer's lock: a step on another thread finishes."""
    thread = threading.Thread(target=optimizer.step)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the optimizer is still locked"


@pytest.mark.parametrize("limit", [0, 8, 100, 400])
def test_a_full_disk_while_writing_leaves_the_earlier_file_and_the_optimizer(
    earlier: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    model, optimizer = trained()
    before = snapshot(model, optimizer)
    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", failing_after(limit, full))
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_state(earlier, optimizer)
    monkeypatch.undo()
    assert caught.value.path == str(earlier) and caught.value.cause is full
    assert_untouched(earlier)
    assert snapshot(model, optimizer) == before
    assert_steps_again(optimizer)


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_failure_to_flush_or_rename_leaves_the_earlier_file(
    earlier: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    _, optimizer = trained()
    failure = OSError(errno.EIO, "Input/output error")

    def fail(*args: object) -> None:
        raise failure

    monkeypatch.setattr(os, step, fail)
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_state(earlier, optimizer)
    monkeypatch.undo()
    assert caught.value.cause is failure
    assert_untouched(earlier)
    assert_steps_again(optimizer)


def test_an_interrupt_while_writing_is_not_wrapped_and_leaves_the_earlier_file(
    earlier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, optimizer = trained()
    monkeypatch.setattr(os, "write", failing_after(16, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        save_state(earlier, optimizer)
    monkeypatch.undo()
    assert_untouched(earlier)
    assert_steps_again(optimizer)


def test_a_folder_that_is_not_writable_leaves_the_earlier_file() -> None:
    _, optimizer = trained()
    with folder_everyone_enters() as folder:
        path = folder / "optimizer.safetensors"
        path.write_bytes(EARLIER)
        path.chmod(0o644)
        folder.chmod(0o555)
        report = outcome_without_privileges(lambda: save_state(path, optimizer))
        assert report == f"FileAccessError checkpoint.write PermissionError {errno.EACCES}"
        assert_untouched(path)


def test_a_missing_folder_is_a_write_error_and_creates_nothing(tmp_path: Path) -> None:
    _, optimizer = trained()
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_state(tmp_path / "missing" / "optimizer.safetensors", optimizer)
    assert isinstance(caught.value.cause, FileNotFoundError)
    assert os.listdir(tmp_path) == []
    assert_steps_again(optimizer)


def test_after_a_failed_save_the_next_save_replaces_the_earlier_file(
    earlier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, optimizer = trained()

    def fail(descriptor: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with raises_rule(FileAccessError, "checkpoint.write"):
        save_state(earlier, optimizer)
    monkeypatch.undo()
    save_state(earlier, optimizer)
    resumed = Adam(model.parameters(), 0.01)
    load_state(earlier, resumed)
    assert resumed.step_count == optimizer.step_count == 2
    assert os.listdir(earlier.parent) == [earlier.name]
