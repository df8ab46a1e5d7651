"""The bag part of ``llm-from-scratch bench embedding`` runs and reports every measurement (the
numbers are not asserted), and the ratios it prints are computed from medians measured side by
side in one run. PyTorch is optional: without it the comparison is left out with a note."""

from __future__ import annotations

import sys

import pytest

from llm_from_scratch.bench.embedding_bag import (
    BagCaseResult,
    format_bag_results,
    measure_bag_case,
)
from llm_from_scratch.cli import main

from conftest import import_optional

OUR_ACTIONS = {"bag forward", "bag fwd+bwd", "bag step", "bag fused step"}
PYTORCH_ACTIONS = {
    "torch bag fwd+bwd dense",
    "torch bag fwd+bwd sparse",
    "torch bag step dense",
    "torch bag step sparse",
}


def test_the_bag_ratios_are_formatted_from_the_measured_medians() -> None:
    case = BagCaseResult(
        10,
        2,
        8,
        4,
        "float32",
        {
            "bag forward": 0.001,
            "bag fwd+bwd": 0.002,
            "bag step": 0.004,
            "bag fused step": 0.002,
            "torch bag fwd+bwd sparse": 0.003,
            "torch bag step dense": 0.010,
            "torch bag step sparse": 0.006,
        },
    )
    text = format_bag_results([case])
    assert 'EmbeddingBag(mode="sum") V=10 d=2 N=8 in 4 bags float32' in text
    assert "torch bag fwd+bwd sparse / our bag fwd+bwd = 1.50" in text
    assert "torch bag step dense / our bag step = 2.50" in text
    assert "torch bag step sparse / our bag step = 1.50" in text
    assert "torch bag step sparse / our bag fused step = 3.00" in text
    assert "fwd+bwd dense" not in text  # not measured, not printed


def test_without_pytorch_a_bag_measurement_leaves_the_comparison_out_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    case = measure_bag_case(50, 4, 16, 4, "float64", 1)
    assert set(case.medians) == OUR_ACTIONS
    assert case.notes == ["PyTorch is not installed: pip install 'llm-from-scratch[torch]'"]


@pytest.mark.slow
def test_with_pytorch_a_bag_measurement_times_both_steps_beside_ours() -> None:
    torch = import_optional("torch")
    case = measure_bag_case(50, 4, 16, 4, "float32", 1)
    assert set(case.medians) == OUR_ACTIONS | PYTORCH_ACTIONS
    assert all(seconds > 0 for seconds in case.medians.values())
    assert case.notes == [f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads"]


@pytest.mark.slow
def test_bench_embedding_quick_also_reports_the_bag_steps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "embedding", "--quick", "--repeats", "1", "--only", "bag"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count('EmbeddingBag(mode="sum") V=5000 d=256 N=2048 in 128 bags') == 2
    assert captured.out.count("bag step") >= 2
    assert "measuring EmbeddingBag V=5000 d=256 N=2048 B=128 float32" in captured.err
    assert main(["bench", "embedding", "--quick", "--repeats", "0", "--only", "bag"]) == 2
