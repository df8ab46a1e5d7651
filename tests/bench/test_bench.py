"""The benchmark commands run and report every measurement (their numbers are not asserted)."""

from __future__ import annotations

import pytest

from llm_from_scratch.bench.embedding import CaseResult, format_results
from llm_from_scratch.cli import main


def test_bench_embedding_quick_reports_every_measurement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "embedding", "--quick", "--repeats", "1"]) == 0
    captured = capsys.readouterr()
    for name in ("copy", "forward", "fwd+bwd", "sgd step", "backward peak extra memory"):
        assert captured.out.count(name) >= 2  # once per dtype
    assert "measuring V=5000 d=256 N=2048 float64" in captured.err


def test_bench_rejects_zero_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "embedding", "--quick", "--repeats", "0"]) == 2
    assert main(["bench", "startup", "--repeats", "0"]) == 2


def test_bench_startup_reports_both_medians_and_their_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "startup", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "import numpy" in out and "llm-from-scratch ch18" in out and "ratio" in out


def test_ratios_are_formatted_from_the_measured_medians() -> None:
    case = CaseResult(
        10,
        2,
        4,
        "float64",
        {
            "copy": 0.002,
            "forward": 0.003,
            "fwd+bwd": 0.005,
            "sgd step": 0.006,
            "torch fwd+bwd dense": 0.05,
        },
        backward_peak_bytes=80,
        table_bytes=160,
    )
    text = format_results([case])
    assert "1.50x copy" in text and "2.50x copy" in text
    assert "torch fwd+bwd dense / our fwd+bwd = 10.00" in text
    assert "= 50.00% of the" in text
