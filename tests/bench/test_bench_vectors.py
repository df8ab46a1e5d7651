"""``llm-from-scratch bench vectors``: ours against gensim's KeyedVectors, answers compared."""

from __future__ import annotations

import pytest

from llm_from_scratch.bench.vectors import Measured, analogies_case, most_similar_case, report
from llm_from_scratch.cli import main

from vectors_support import gensim_data


def test_the_ratio_is_gensims_median_over_ours() -> None:
    text = report([Measured("a case", ours=0.5, gensim=2.0, same=False)], 3, "versions")
    lines = text.splitlines()
    assert lines[2:] == [
        "a case",
        "  ours         500.0 ms (median of 3)",
        "  gensim      2000.0 ms",
        "  gensim / ours = 4.00 (above 1: ours is faster); same answers: NO",
    ]


def test_zero_repeats_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "vectors", "--repeats", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err


def test_both_cases_measure_and_find_the_same_answers_on_small_tables() -> None:
    found = most_similar_case(3000, 8, 1)
    assert found.same and found.ours > 0 and found.gensim > 0
    found = analogies_case(gensim_data("questions-words.txt"), 1000, 4, 1)
    assert found.same and "1000 x 4" in found.case
