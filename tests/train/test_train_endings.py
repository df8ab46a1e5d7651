"""How ``ch18 train`` ends when a file cannot be written or the folders disagree: one line that
names the file that failed (``table.safetensors``, ``tokenizer.json``, ``checkpoint.safetensors``,
never a temporary's name, never "checkpoint" for the table), status 1, the folder as it was and
no temporary left; a dangling ``--output`` link and ``--resume DIR --output OTHER`` refused
(status 2) before anything is written."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import llm_from_scratch.files as files_module
from llm_from_scratch.cli import run as command_line
from llm_from_scratch.errors import MismatchError
from llm_from_scratch.exits import FAILED, REFUSED
from llm_from_scratch.training.options import CHECKPOINT_FILE, TABLE_FILE, TOKENIZER_FILE

from checks import raises_rule
from train_support import folder_bytes, interrupt_at_piece, run_train, write_corpus


class FullDisk:
    """``os`` as ``llm_from_scratch.files`` sees it, but a write into a temporary of ``target``
    fails as a full disk does (``ENOSPC``, which names no file)."""

    def __init__(self, target: str) -> None:
        self.prefix = f".{target}."

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, descriptor: int, data: Any) -> int:
        if os.path.basename(os.readlink(f"/proc/self/fd/{descriptor}")).startswith(self.prefix):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(descriptor, data)


@pytest.fixture
def earlier(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """A corpus, and a folder holding an earlier run's pair (and its bytes)."""
    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    corpus = write_corpus(tmp_path)
    output = tmp_path / "out"
    assert run_train(corpus, output, "--seed", "4")[0] == 0
    return corpus, output, folder_bytes(output)


@pytest.mark.parametrize("target", [TABLE_FILE, TOKENIZER_FILE, CHECKPOINT_FILE])
def test_a_full_disk_names_the_file_it_was_writing_and_leaves_the_folder_as_it_was(
    monkeypatch: pytest.MonkeyPatch, earlier: tuple[Path, Path, dict[str, bytes]], target: str
) -> None:
    corpus, output, before = earlier
    monkeypatch.setattr(files_module, "os", FullDisk(target))
    status, _, err = run_train(corpus, output, "--seed", "3")
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert status == FAILED and len(lines) == 1, err
    (line,) = lines
    assert f"{output / target}" in line and "No space left on device" in line
    assert ".tmp" not in line and "llm-from-scratch-" not in line
    if target != CHECKPOINT_FILE:
        assert line == f"error: {output / target}: No space left on device"
    after = folder_bytes(output)  # no temporary; the earlier pair; the checkpoint to resume from
    resumable = {CHECKPOINT_FILE} if target != CHECKPOINT_FILE else set()
    assert set(after) == set(before) | resumable
    assert {name: after[name] for name in before} == before


def test_a_dangling_output_link_is_refused_and_explained_before_anything_is_written(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path)
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "nowhere")
    status, out, err = run_train(corpus, link)
    assert (status, out) == (REFUSED, "")
    assert err == (
        f"error: --output must be a folder, or a path where one can be made, got {link}, a "
        f"symbolic link to {tmp_path / 'nowhere'}, which does not exist\n"
    )
    assert "File exists" not in err and sorted(os.listdir(tmp_path)) == ["corpus.txt", "out"]


@pytest.fixture
def interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, dict[str, bytes]]:
    """A corpus and the folder of a run interrupted with its checkpoint (and its bytes)."""
    corpus = write_corpus(tmp_path, lines=300)
    output = tmp_path / "out"
    with monkeypatch.context() as patch:
        interrupt_at_piece(patch, 2)
        assert run_train(corpus, output, "--epochs", "3")[0] == 130
    assert (output / CHECKPOINT_FILE).is_file()
    return corpus, output, folder_bytes(output)


def test_resume_with_another_output_is_refused_before_anything_is_read_or_written(
    tmp_path: Path, interrupted: tuple[Path, Path, dict[str, bytes]]
) -> None:
    corpus, output, before = interrupted
    other = tmp_path / "other"
    args = ["ch18", "train", "--resume", str(output), "--output", str(other)]
    with raises_rule(MismatchError, "resume.output", folder=str(output), output=str(other)):
        command_line(args)
    status, out, err = run_train(corpus, other, "--resume", str(output), "--epochs", "3")
    assert (status, out) == (REFUSED, "")
    assert (
        err == f"error: {MismatchError('resume.output', folder=str(output), output=str(other))}\n"
    )
    assert not other.exists() and folder_bytes(output) == before


def test_resume_with_the_same_folder_spelled_otherwise_goes_on(
    tmp_path: Path, interrupted: tuple[Path, Path, dict[str, bytes]]
) -> None:
    corpus, output, _ = interrupted
    (tmp_path / "link").symlink_to(output)
    spelled = tmp_path / "link" / ".." / "out"
    status, _, err = run_train(corpus, spelled, "--resume", str(tmp_path / "link"), "--epochs", "3")
    assert status == 0, err
    assert sorted(os.listdir(output)) == [TABLE_FILE, TOKENIZER_FILE]
