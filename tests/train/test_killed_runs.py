"""A run of ``ch18 train`` killed (SIGKILL) at any moment, then run again (``--resume`` when it
left a checkpoint, else the same command), leaves its folder holding exactly the table and the
tokenizer, byte for byte those of a run never killed: no temporary file outlives its run.

The moments are every call of ``llm_from_scratch.files`` into the file system (creating,
writing, flushing, closing, renaming, linking and removing the checkpoint's and the pair's files),
each killed in a real process of its own (``tests/train/killed_at_moment.py``): a few of them
in the quick run; every one of them, and kills at random times, in the slow one.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_from_scratch.training.options import CHECKPOINT_FILE, TABLE_FILE, TOKENIZER_FILE

from train_support import folder_bytes, write_corpus

KILLER = Path(__file__).with_name("killed_at_moment.py")
SOURCE = Path(__file__).resolve().parents[2] / "src"
OPTIONS = ("--dim", "8", "--window", "2", "--epochs", "2", "--min-count", "2", "--threads", "1")
PAIR = [TABLE_FILE, TOKENIZER_FILE]


def command(corpus: Path, output: Path, seed: int) -> list[str]:
    """``ch18 train`` of the corpus into ``output`` with the test's options and ``seed``."""
    return ["ch18", "train", "--corpus", str(corpus), "--output", str(output), *OPTIONS,
            "--seed", str(seed)]  # fmt: skip


def run(moment: int, log: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``llm-from-scratch ARGV`` in a process killed just before the ``moment``-th call (0:
    never)."""
    environment = {**os.environ, "PYTHONPATH": str(SOURCE)}
    return subprocess.run(
        [sys.executable, str(KILLER), str(moment), str(log), *argv],
        capture_output=True, text=True, env=environment, check=False, timeout=300,
    )  # fmt: skip


class Runs:
    """A corpus, a folder holding an earlier run's pair, and what a run never killed writes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.corpus = write_corpus(folder)
        self.earlier = folder / "earlier"
        assert run(0, folder / "earlier.log", command(self.corpus, self.earlier, 4)).returncode == 0
        whole = folder / "whole"
        shutil.copytree(self.earlier, whole)
        log = folder / "whole.log"
        assert run(0, log, command(self.corpus, whole, 3)).returncode == 0
        self.moments = log.read_text(encoding="utf-8").splitlines()
        self.expected = folder_bytes(whole)
        assert sorted(self.expected) == PAIR

    def killed_then_run_again(self, name: str, kill: object) -> Path:
        """The earlier pair's folder, a run into it killed by ``kill`` (a moment's number, or
        seconds after its start), then run again to its end; the folder."""
        output = self.folder / name
        shutil.copytree(self.earlier, output)
        argv = command(self.corpus, output, 3)
        if isinstance(kill, int):
            killed = run(kill, self.folder / f"{name}.log", argv)
            assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        else:
            killed_after(float(kill), argv, self.folder / f"{name}.log")
        again = ["ch18", "train", "--resume", str(output), "--threads", "1"]
        if not (output / CHECKPOINT_FILE).exists():
            again = argv
        finished = run(0, self.folder / f"{name}.again.log", again)
        assert finished.returncode == 0, finished.stderr[-2000:]
        return output


def killed_after(seconds: float, argv: list[str], log: Path) -> None:
    """Start ``llm-from-scratch ARGV`` and kill it ``seconds`` later (if it still runs)."""
    environment = {**os.environ, "PYTHONPATH": str(SOURCE)}
    process = subprocess.Popen(
        [sys.executable, str(KILLER), "0", str(log), *argv],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
    )  # fmt: skip
    time.sleep(seconds)
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("killed"))


def first_moment(runs: Runs, call: str) -> int:
    """The number of the first moment whose logged call starts with ``call``."""
    return next(number for number, line in enumerate(runs.moments, 1) if line.startswith(call))


def test_a_run_never_killed_writes_its_files_through_the_moments_the_tests_kill(
    runs: Runs,
) -> None:
    calls = {line.split()[0] for line in runs.moments}
    assert {"open", "write", "fsync", "replace", "link", "unlink"} <= calls
    staged = [line.split()[1] for line in runs.moments if line.startswith("replace ")]
    assert [name.split(".llm-from-scratch-")[0] for name in staged] == [
        ".checkpoint.safetensors", ".checkpoint.safetensors", ".table.safetensors",
        ".tokenizer.json",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "call",
    [
        "write 4",  # the first checkpoint, half written
        "link table.safetensors",  # the pair staged, the earlier table given a second name
        "replace .tokenizer.json",  # the new table in place, the earlier tokenizer still there
        "unlink .table.safetensors",  # both in place, the temporaries not yet removed
    ],
)
def test_a_run_killed_at_a_moment_then_run_again_leaves_exactly_the_pair_it_would_have(
    runs: Runs, call: str
) -> None:
    moment = first_moment(runs, call)
    output = runs.killed_then_run_again(f"moment-{moment}", moment)
    assert folder_bytes(output) == runs.expected


@pytest.mark.slow
def test_a_run_killed_at_every_moment_then_run_again_leaves_exactly_the_pair(
    runs: Runs,
) -> None:
    for moment in range(1, len(runs.moments) + 1):
        output = runs.killed_then_run_again(f"every-{moment}", moment)
        assert folder_bytes(output) == runs.expected, (moment, runs.moments[moment - 1])
        shutil.rmtree(output)


@pytest.mark.slow
def test_a_run_killed_at_random_times_then_run_again_leaves_exactly_the_pair(
    runs: Runs,
) -> None:
    draws = random.Random(32)
    for number in range(12):
        seconds = draws.uniform(0.5, 4.0)
        output = runs.killed_then_run_again(f"timed-{number}", seconds)
        assert folder_bytes(output) == runs.expected, seconds
        shutil.rmtree(output)
