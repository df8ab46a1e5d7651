"""The benchmark commands run and report every measurement (their numbers are not asserted),
and the ratios they print are computed from the medians measured side by side.

The tests that run a real measurement for seconds are marked ``slow``: ``make test`` (and so CI)
runs them, ``-m "not slow"`` leaves them out. PyTorch is optional: without it the comparison is
left out with a note, and the test of the comparison itself needs it (CI installs it).
"""

from __future__ import annotations

import sys

import pytest

from llm_from_scratch.bench.embedding import CaseResult, format_results, measure_case
from llm_from_scratch.cli import main

from conftest import import_optional

OUR_ACTIONS = {"copy", "forward", "fwd+bwd", "sgd step", "sgd fused"}
PYTORCH_ACTIONS = {
    "torch forward",
    "torch fwd+bwd dense",
    "torch fwd+bwd sparse",
    "torch sgd dense",
    "torch sgd sparse",
}


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_the_targets_against_pytorchs_sparse_steps_are_printed_with_their_verdicts() -> None:
    medians = {"copy": 0.002, "sgd step": 0.010, "sgd fused": 0.005, "torch sgd sparse": 0.012}
    case = CaseResult(50257, 768, 8192, "float32", medians, 0, 1)
    text = format_results([case])
    assert "50257x768 float32: torch sgd sparse / our sgd step = 1.20 (>= 1.3: not met)" in text
    assert "50257x768 float32: torch sgd sparse / our sgd fused = 2.40 (>= 1.3: met)" in text
    assert "adagrad" not in text  # not measured: no verdict


def test_without_pytorch_a_measurement_leaves_the_comparison_out_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    case = measure_case(50, 4, 16, "float64", 1)
    assert set(case.medians) == OUR_ACTIONS
    assert case.notes == ["PyTorch is not installed: pip install 'llm-from-scratch[torch]'"]
    assert "torch" not in format_results([case]).replace(case.notes[0], "")


@pytest.mark.slow
def test_with_pytorch_a_measurement_times_its_three_actions_beside_ours() -> None:
    torch = import_optional("torch")
    case = measure_case(50, 4, 16, "float32", 1)
    assert set(case.medians) == OUR_ACTIONS | PYTORCH_ACTIONS
    assert all(seconds > 0 for seconds in case.medians.values())
    assert case.notes == [f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads"]
    text = format_results([case])
    for name in ("torch fwd+bwd dense", "torch fwd+bwd sparse"):
        assert f"{name} / our fwd+bwd = {case.ratio(name, 'fwd+bwd'):.2f}" in text
