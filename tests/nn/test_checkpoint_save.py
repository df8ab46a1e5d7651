"""``save_parameters`` replaces a file atomically: on any failure an earlier file stays intact."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import numpy as np
import pytest

import llm_from_scratch.autograd.value as value_module
from llm_from_scratch.autograd import NonFiniteParameterError
from llm_from_scratch.errors import (
    FileAccessError,
    FormatError,
    NonFiniteError,
    OptionError,
    TableError,
)
from llm_from_scratch.nn import NamedParameter, load_parameters, save_parameters
from llm_from_scratch.tensor import Tensor

from checkpoint_support import (
    failing_after,
    folder_everyone_enters,
    known_parameters,
    outcome_without_privileges,
)
from checks import raises_rule

EARLIER = b"an earlier checkpoint that must survive"


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    """A folder holding only an earlier file at the target path."""
    path = tmp_path / "model.safetensors"
    path.write_bytes(EARLIER)
    return path


def assert_untouched(path: Path) -> None:
    assert path.read_bytes() == EARLIER
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temporary file left


def test_saving_over_an_earlier_file_replaces_it_with_a_new_file(earlier: Path) -> None:
    inode = earlier.stat().st_ino
    save_parameters(earlier, known_parameters())
    assert earlier.stat().st_ino != inode  # renamed into place, not rewritten
    assert sorted(os.listdir(earlier.parent)) == [earlier.name]
    assert load_parameters(earlier).names() == ("token_embedding.weight",)


@pytest.mark.parametrize("limit", [0, 5, 8, 100])
def test_a_full_disk_while_writing_leaves_the_earlier_file_and_no_temporary(
    earlier: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", failing_after(limit, full))
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_parameters(earlier, known_parameters())
    monkeypatch.undo()
    error = caught.value
    assert error.path == str(earlier) and error.cause is full and error.__cause__ is full
    assert str(error).endswith("No space left on device; any earlier file there is unchanged")
    assert_untouched(earlier)


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_failure_to_flush_or_rename_leaves_the_earlier_file(
    earlier: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    failure = OSError(errno.EIO, "Input/output error")

    def fail(*args: object) -> None:
        raise failure

    monkeypatch.setattr(os, step, fail)
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_parameters(earlier, known_parameters())
    monkeypatch.undo()
    assert caught.value.cause is failure
    assert_untouched(earlier)


def test_an_interrupt_while_writing_is_not_wrapped_and_leaves_the_earlier_file(
    earlier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "write", failing_after(16, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        save_parameters(earlier, known_parameters())
    monkeypatch.undo()
    assert_untouched(earlier)


def test_a_folder_that_is_not_writable_leaves_the_earlier_file() -> None:
    with folder_everyone_enters() as folder:
        path = folder / "model.safetensors"
        path.write_bytes(EARLIER)
        path.chmod(0o644)
        folder.chmod(0o555)
        report = outcome_without_privileges(lambda: save_parameters(path, known_parameters()))
        assert report == f"FileAccessError checkpoint.write PermissionError {errno.EACCES}"
        assert_untouched(path)


def test_a_missing_folder_is_a_write_error_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "model.safetensors"
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_parameters(path, known_parameters())
    assert isinstance(caught.value.cause, FileNotFoundError)
    assert os.listdir(tmp_path) == []


def test_a_directory_at_the_target_path_is_left_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "model.safetensors"
    target.mkdir()
    (target / "inside").write_bytes(b"kept")
    with raises_rule(FileAccessError, "checkpoint.write") as caught:
        save_parameters(target, known_parameters())
    assert isinstance(caught.value.cause, IsADirectoryError | OSError)
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]
    assert (target / "inside").read_bytes() == b"kept"


# Checks before anything is written ---------------------------------------------------------------


def test_a_non_finite_parameter_is_refused_before_anything_is_written(
    earlier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = NamedParameter.from_tensor("a.weight", Tensor((2,), [1.0, 2.0]))
    table = Tensor((2, 2), [1.0, 2.0, 3.0, float("-inf")])
    with pytest.raises(NonFiniteParameterError):
        NamedParameter.from_tensor("b.weight", table)  # no public path builds such a leaf
    with monkeypatch.context() as patch:  # so the writer's own check is reached around that one
        patch.setattr(value_module, "first_non_finite", lambda array: None)
        bad = NamedParameter.from_tensor("b.weight", table)
    with raises_rule(NonFiniteError, "checkpoint.non-finite") as caught:
        save_parameters(earlier, [good, bad])
    error = caught.value
    assert (error.path, error.name, error.position, error.value) == (
        str(earlier),
        "b.weight",
        3,
        float("-inf"),
    )
    assert_untouched(earlier)


@pytest.mark.parametrize(
    ("metadata", "detail"),
    [
        ([("k", "v")], "list"),
        ({"rows": 4}, "the entry 'rows': 4"),
        ({1: "one"}, "the entry 1: 'one'"),
    ],
)
def test_metadata_must_map_str_to_str(earlier: Path, metadata: object, detail: str) -> None:
    with raises_rule(OptionError, "checkpoint.argument") as caught:
        save_parameters(earlier, known_parameters(), metadata=metadata)  # type: ignore[arg-type]
    error = caught.value
    assert (error.argument, error.requirement, error.detail) == (
        "metadata",
        "a mapping of str to str",
        detail,
    )
    assert_untouched(earlier)


def test_parameters_that_are_not_a_collection_and_paths_that_are_not_paths_are_refused(
    earlier: Path,
) -> None:
    leaf = known_parameters()["token_embedding.weight"].tensor
    with raises_rule(TableError, "parameters.item-type"):
        save_parameters(earlier, [leaf])  # type: ignore[list-item]
    with raises_rule(OptionError, "checkpoint.argument") as caught:
        save_parameters(3, known_parameters())  # type: ignore[arg-type]
    assert (caught.value.argument, caught.value.detail) == ("path", "int")
    assert_untouched(earlier)


def test_a_header_beyond_the_format_limit_is_refused(earlier: Path) -> None:
    with raises_rule(FormatError, "checkpoint.invalid") as caught:
        save_parameters(earlier, known_parameters(), metadata={"note": "x" * 100_000_000})
    found = re.fullmatch(
        r"the header would take (\d+) bytes, over the limit of 100000000", str(caught.value.cause)
    )
    assert found is not None and int(found[1]) > 100_000_000 and int(found[1]) % 8 == 0
    assert_untouched(earlier)


def test_a_float32_and_a_float64_parameter_keep_their_dtypes(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    single = known_parameters(dtype=np.float32)["token_embedding.weight"]
    double = NamedParameter.from_tensor("output.bias", Tensor((2,), [0.5, 0.25]))
    save_parameters(path, [single, double])
    loaded = load_parameters(path)
    assert loaded["token_embedding.weight"].tensor.dtype == np.float32
    assert loaded["output.bias"].tensor.dtype == np.float64
