"""``llm-from-scratch bench checkpoint`` runs every action and reports it (numbers not asserted)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llm_from_scratch.bench.checkpoint import (
    ACTIONS,
    CheckpointMeasurement,
    format_measurements,
    worker_main,
)
from llm_from_scratch.cli import main


def test_bench_checkpoint_quick_measures_every_action_in_a_worker_and_removes_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "checkpoint", "--quick", "--directory", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    for action in ACTIONS:
        assert f"measuring {action} on a 8192x1024 float32 table" in captured.err
        assert captured.out.count(action) >= 1
    assert "the 1.5x targets are for the 128256x4096 table" in captured.out
    assert os.listdir(tmp_path) == []


def test_the_report_divides_each_measurement_by_the_table_bytes() -> None:
    table = 128256 * 4096 * 4
    measurements = [
        CheckpointMeasurement(
            "save_parameters", table, 1.25, table // 100, table * 11 // 10, table
        ),
        CheckpointMeasurement("load_parameters", table, 0.5, table, table * 16 // 10, table // 50),
    ]
    text = format_measurements(128256, 4096, measurements)
    assert "save_parameters                    1.25        0.010x      1.100x      1.000x" in text
    assert "target: save_parameters peak RSS < 1.5x table: met (1.100x)" in text
    assert "target: load_parameters peak RSS < 1.5x table: NOT met (1.600x)" in text


def test_the_worker_refuses_an_unknown_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert worker_main(["worker", "pickle.dump", "x", "1", "1"]) == 2
    assert "usage: worker" in capsys.readouterr().err
