"""The memory budget plans what a run allocates: a whole ``ch18 train`` process, its peak read
by ``wait4``, stays within the plan and near it (a copy of a table, a float64 or unit-length
copy for the report's measures, would break the plan). The run measured loads its compiled
loops from a cache a first run filled: a run that compiles them peaks some 50 to 75 MB higher,
once per install, and its peak varies with the compiler's work."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from llm_from_scratch.bench.train import timed_process
from llm_from_scratch.bench.train_setup import synthetic_corpus
from llm_from_scratch.training.options import planned_megabytes

WORDS = 60_000
DIM = 300


@pytest.mark.slow
def test_a_run_peaks_within_its_planned_memory_and_near_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "compiled"))
    corpus = synthetic_corpus(tmp_path / "words.txt", WORDS)
    output = tmp_path / "out"
    command = [sys.executable, "-m", "llm_from_scratch", "ch18", "train", "--corpus", str(corpus)]
    command += ["--dim", str(DIM), "--epochs", "1", "--threads", "2", "--output"]
    timed_process([*command, str(tmp_path / "first")])  # fills the compile cache
    _, peak = timed_process([*command, str(output)])
    vocabulary = json.loads((output / "tokenizer.json").read_text(encoding="utf-8"))
    rows = len(vocabulary["model"]["vocab"])
    assert rows == WORDS + 1  # every word six times, and the unknown token
    planned = planned_megabytes(rows, DIM) * 2**20
    assert peak <= planned
    assert planned <= 1.15 * peak


def test_the_plan_grows_by_the_two_float32_tables_and_the_words() -> None:
    assert planned_megabytes(2**20, 1) - planned_megabytes(0, 1) == 8 + 512
    assert planned_megabytes(2**20, 101) - planned_megabytes(2**20, 1) == 100 * 8
