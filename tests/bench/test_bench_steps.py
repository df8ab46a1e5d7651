"""The embedding benchmark times full optimizer steps against PyTorch's (numbers not asserted)."""

from __future__ import annotations

import pytest

from llm_from_scratch.bench.embedding import CaseResult, format_results
from llm_from_scratch.cli import main

STEPS = [f"{name} {kind}" for name in ("sgd", "adagrad", "adam") for kind in ("step", "fused")]


def test_bench_embedding_times_every_optimizer_step_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "embedding", "--quick", "--repeats", "1", "--optimizers", "all"]) == 0
    captured = capsys.readouterr()
    for name in STEPS:
        assert captured.out.count(f"  {name} ") >= 2  # a row per dtype
    assert "sgd, adagrad, adam" in captured.err


def test_bench_embedding_times_only_the_chosen_optimizers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    arguments = ["bench", "embedding", "--quick", "--repeats", "1", "--optimizers", "adam"]
    assert main(arguments) == 0
    out = capsys.readouterr().out
    assert "adam fused" in out and "sgd step" not in out and "adagrad" not in out


@pytest.mark.parametrize("value", ["", "sgd,rmsprop", "ALL"])
def test_bench_embedding_rejects_unknown_optimizers(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["bench", "embedding", "--quick", "--optimizers", value])
    assert caught.value.code == 2
    assert "expected 'all' or names from sgd, adagrad, adam" in capsys.readouterr().err


def test_step_ratios_against_pytorch_are_formatted_from_the_medians() -> None:
    medians = {"copy": 0.002, "fwd+bwd": 0.005, "adam step": 0.02, "adam fused": 0.01}
    medians |= {"torch adam dense": 0.5, "torch sparse adam": 0.04}
    case = CaseResult(10, 2, 4, "float64", medians, backward_peak_bytes=8, table_bytes=160)
    text = format_results([case])
    assert "  adam fused                 10.000 ms     5.00x copy" in text
    assert "torch adam dense / our adam step = 25.00 (above 1: ours is faster)" in text
    assert "torch adam dense / our adam fused = 50.00" in text
    assert "torch sparse adam / our adam fused = 4.00" in text
    assert "torch sgd" not in text
