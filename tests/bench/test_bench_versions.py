"""``llm-from-scratch bench versions``: the lookup timings of two source trees, taken in
turns by fresh workers, and each action's ratio computed from the two trees' medians."""

from __future__ import annotations

import pytest

from llm_from_scratch.bench.versions import THIS_TREE, compare, format_comparison
from llm_from_scratch.cli import main


def test_the_comparison_prints_each_trees_median_over_rounds_and_their_ratio() -> None:
    baseline = {"10x2 N=4 float64": {"forward": [0.002, 0.004, 0.003]}}
    current = {"10x2 N=4 float64": {"forward": [0.0033, 0.0031, 0.0050]}}
    text = format_comparison(baseline, current)
    assert text.splitlines() == [
        "10x2 N=4 float64",
        "  forward        3.000 ms      3.300 ms   1.100x",
    ]


def test_an_action_only_one_tree_measures_is_left_out() -> None:
    baseline = {"10x2 N=4 float64": {"forward": [0.002], "sgd fused": [0.004]}}
    current = {"10x2 N=4 float64": {"forward": [0.002]}}
    assert format_comparison(baseline, current).splitlines() == [
        "10x2 N=4 float64",
        "  forward        2.000 ms      2.000 ms   1.000x",
    ]


def test_zero_rounds_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "versions", str(THIS_TREE), "--rounds", "0"]) == 2
    assert capsys.readouterr().err == "error: --rounds must be at least 1, got 0\n"
    assert main(["bench", "versions", str(THIS_TREE), "--repeats", "0"]) == 2
    assert capsys.readouterr().err == "error: --repeats must be at least 1, got 0\n"


@pytest.mark.slow
def test_a_tree_compared_with_itself_measures_every_action_in_both() -> None:
    baseline, current = compare(THIS_TREE, rounds=1, repeats=1, quick=True)
    assert set(baseline) == set(current) == {"5000x256 N=2048 float64", "5000x256 N=2048 float32"}
    for name, actions in baseline.items():
        assert set(actions) == set(current[name])
        assert {"copy", "forward", "fwd+bwd", "sgd step"} <= set(actions)
        assert all(len(samples) == 1 and samples[0] > 0 for samples in actions.values())
