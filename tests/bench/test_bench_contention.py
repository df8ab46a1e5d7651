"""``bench contention``: the row writes of each training method counted on a corpus, as the
compiled loops make them, and the scaling the contention model predicts from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.bench.contention import CORES, WriteCounts, count_writes, format_counts
from llm_from_scratch.cli import main

from train_support import write_corpus


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, WriteCounts]:
    corpus = write_corpus(tmp_path_factory.mktemp("contention"), lines=400)
    found = {method: count_writes(corpus, method, 10**6) for method in ("pairs", "hogbatch")}
    assert all(item.words == len(corpus.read_text().split()) for item in found.values())
    return found


def test_the_counts_are_of_the_pairs_the_compiled_loop_trains(
    counted: dict[str, WriteCounts],
) -> None:
    for found in counted.values():
        assert found.pairs == found.compiled_pairs > 0
        assert int(found.input_writes.sum()) == found.pairs  # one input row written per pair
        assert found.seconds > 0


def test_a_pair_writes_all_its_context_rows_and_a_window_one_set_for_its_words(
    counted: dict[str, WriteCounts],
) -> None:
    pairs, windows = counted["pairs"], counted["hogbatch"]
    assert int(pairs.context_writes.sum()) == 6 * pairs.pairs  # the context word, 5 negatives
    context = int(windows.context_writes.sum())
    assert context % 6 == 0 and context // 6 < windows.pairs  # one set per window of words
    for found in (pairs, windows):
        for writes in (found.input_writes, found.context_writes):
            assert found.hot(writes) <= int(writes.sum())
            assert found.hot(writes, rows=1) == int(writes.max())


def test_the_model_predicts_at_most_linear_scaling_and_more_for_fewer_hot_writes(
    counted: dict[str, WriteCounts],
) -> None:
    pairs = counted["pairs"]
    same_speed = {
        method: WriteCounts(**{**vars(found), "seconds": pairs.seconds})
        for method, found in counted.items()
    }
    for found in same_speed.values():
        speed_ups = [found.speed_up(cores, 100, 100.0) for cores in CORES]
        assert all(0 < s <= cores for s, cores in zip(speed_ups, CORES, strict=True))
        assert speed_ups == sorted(speed_ups)
    for cores in CORES:
        assert same_speed["hogbatch"].speed_up(cores, 100, 100.0) > pairs.speed_up(
            cores, 100, 100.0
        )
    untouched = WriteCounts(
        "pairs", 1000, 10, np.zeros(3, np.int64), np.zeros(3, np.int64), 1.0, 10
    )
    assert untouched.speed_up(64, 100, 100.0) == pytest.approx(64)


def test_the_command_prints_each_method_with_its_predictions(
    counted: dict[str, WriteCounts], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = format_counts(list(counted.values()), 100, 100.0)
    assert "x8 cores" in text and "x64 cores" in text
    corpus = write_corpus(tmp_path, lines=100)
    assert main(["bench", "contention", "--corpus", str(corpus), "--words", "300"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()[2:]] == ["pairs", "hogbatch"]
    assert main(["bench", "contention", "--corpus", str(corpus), "--words", "0"]) == 2
