"""``llm-from-scratch bench neighbours``: one query's process time against the 2 s budget."""

from __future__ import annotations

import pytest

from llm_from_scratch.bench.neighbours import NeighboursResult, format_result
from llm_from_scratch.cli import main

from conftest import require_pretrained


def test_the_ratios_are_formatted_from_the_measured_medians() -> None:
    text = format_result(NeighboursResult(query=0.5, demo=0.25, numpy_import=0.2, runs=3))
    lines = text.splitlines()
    assert lines[0].split()[-5:] == ["500.0", "ms", "(median", "of", "3)"]
    assert lines[3].split()[-1] == "0.25"  # 0.5 s of the 2 s budget
    assert lines[4].split()[-1] == "2.00"


def test_zero_repeats_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "neighbours", "--repeats", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_neighbours_reports_the_three_medians(capsys: pytest.CaptureFixture[str]) -> None:
    require_pretrained()
    assert main(["bench", "neighbours", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "ch18 neighbours king" in out and "budget" in out and "import numpy" in out
