"""No temporary file outlives its run: a writer killed while it writes (SIGKILL) leaves its
temporary beside the target, named ``.NAME.llm-from-scratch-PID-HEX.tmp``; the next writer of
that target removes it once process PID is gone, and nothing else: no file of another name, no
temporary of a process still running (a second run into the same folder), no folder or link.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import llm_from_scratch.files as files_module
from llm_from_scratch.files import (
    TEMPORARY_MARK,
    remove_stale_temporaries,
    replace_file,
    replace_files,
    temporary_path,
    write_new_file,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process IDs are checked on POSIX")


def ended_process() -> int:
    """The ID of a process that ran, ended and was reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def temporary_of(target: Path, pid: int, data: bytes = b"half") -> Path:
    """A temporary of ``target`` as process ``pid`` would have named it, holding ``data``."""
    name = Path(temporary_path(str(target))).name
    mine = f"-{os.getpid()}-"
    path = target.parent / name.replace(mine, f"-{pid}-")
    path.write_bytes(data)
    return path


def test_a_killed_writers_temporary_is_removed_by_the_next_write_of_its_target(
    tmp_path: Path,
) -> None:
    target = tmp_path / "table.safetensors"
    temporary_of(target, ended_process())
    temporary_of(target, ended_process())
    replace_file(str(target), [memoryview(b"whole")])
    assert os.listdir(tmp_path) == ["table.safetensors"] and target.read_bytes() == b"whole"


def test_the_pair_writer_removes_its_targets_stale_temporaries_and_stages_without_nesting(
    tmp_path: Path,
) -> None:
    table, tokenizer = tmp_path / "table.safetensors", tmp_path / "tokenizer.json"
    gone = ended_process()
    temporary_of(table, gone), temporary_of(tokenizer, gone)
    seen: list[list[str]] = []

    def table_writer(staged: str) -> None:
        replace_file(staged, [memoryview(b"table")])  # as save_parameters writes the table
        seen.append(sorted(os.listdir(tmp_path)))

    def tokenizer_writer(staged: str) -> None:
        write_new_file(staged, [memoryview(b"{}")])

    replace_files([(str(table), table_writer), (str(tokenizer), tokenizer_writer)])
    assert sorted(os.listdir(tmp_path)) == ["table.safetensors", "tokenizer.json"]
    (staged,) = seen[0]  # the staged table only: no temporary of a temporary
    assert staged.startswith(".table.safetensors.") and staged.count(TEMPORARY_MARK) == 1


def test_a_running_processs_temporary_stays(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.safetensors"
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        kept = [temporary_of(target, running.pid), temporary_of(target, os.getpid())]
        remove_stale_temporaries(str(target))
        assert sorted(tmp_path.iterdir()) == sorted(kept)
    finally:
        running.kill()
        running.wait()
    remove_stale_temporaries(str(target))
    assert list(tmp_path.iterdir()) == [kept[1]]


def test_a_process_that_ended_but_was_not_reaped_is_gone(tmp_path: Path) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to tell an ended process from a running one")
    target = tmp_path / "tokenizer.json"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{child.pid}/stat").read_bytes().rpartition(b")")[2][1:2] != b"Z":
            assert time.monotonic() < deadline, "the child did not end"
            time.sleep(0.01)
        temporary_of(target, child.pid)
        remove_stale_temporaries(str(target))
        assert list(tmp_path.iterdir()) == []
    finally:
        child.wait()


def test_only_the_targets_temporaries_are_removed_never_a_users_file(tmp_path: Path) -> None:
    target = tmp_path / "table.safetensors"
    gone = ended_process()
    stale = temporary_of(target, gone).name
    hex_tail = stale.rsplit("-", 1)[1]
    users = [
        ".table.safetensors.tmp",
        f"table.safetensors.{TEMPORARY_MARK}-{gone}-{hex_tail}",  # no leading dot
        f".table.safetensors.{TEMPORARY_MARK}-{gone}-{hex_tail}.bak",
        f".table.safetensors.{TEMPORARY_MARK}-0{gone}-{hex_tail}",
        f".table.safetensors.{TEMPORARY_MARK}-{gone}-{hex_tail.upper()}",
        f".table.safetensor.{TEMPORARY_MARK}-{gone}-{hex_tail}",  # another target
        f".tokenizer.json.{TEMPORARY_MARK}-{gone}-{hex_tail}",
        f".table.safetensors.{TEMPORARY_MARK}-{2**40}-{hex_tail}",  # no process ID at all
        "table.safetensors",
    ]
    for name in users:
        (tmp_path / name).write_bytes(b"the user's")
    folder = tmp_path / f".table.safetensors.{TEMPORARY_MARK}-{gone}-{'0' * 12}.tmp"
    folder.mkdir()
    link = tmp_path / f".table.safetensors.{TEMPORARY_MARK}-{gone}-{'1' * 12}.tmp"
    link.symlink_to(tmp_path / "table.safetensors")
    remove_stale_temporaries(str(target))
    left = sorted(path.name for path in tmp_path.iterdir())
    assert left == sorted([*users, folder.name, link.name]) and stale not in left


def test_a_folder_that_cannot_be_listed_is_left_as_it_is(tmp_path: Path) -> None:
    remove_stale_temporaries(str(tmp_path / "missing" / "table.safetensors"))
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_refuses_the_temporary_is_said_of_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refusing(path: str, *args: object) -> int:
        raise PermissionError(13, "Permission denied", path)  # as a read-only folder does

    target = tmp_path / "checkpoint.safetensors"
    monkeypatch.setattr(files_module.os, "open", refusing)
    with pytest.raises(PermissionError) as caught:
        replace_file(str(target), [memoryview(b"whole")])
    monkeypatch.undo()
    assert (caught.value.errno, caught.value.filename) == (13, str(target))
    assert TEMPORARY_MARK not in str(caught.value) and os.listdir(tmp_path) == []
