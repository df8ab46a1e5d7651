"""``bench train`` on a small corpus: every trainer runs as a process, the table it writes is
read back and measured, and the report lines up the ratios."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_from_scratch.bench.train import format_result, group_measure, measure
from llm_from_scratch.cli import main
from llm_from_scratch.training.corpus import corpus_files, count_words

from conftest import import_optional
from train_support import write_corpus


@pytest.mark.parametrize("copies", [1, 2])
def test_each_trainer_runs_and_is_measured(tmp_path: Path, copies: int) -> None:
    import_optional("gensim")
    import_optional("torch")
    corpus = write_corpus(tmp_path, lines=300)
    result = measure(corpus, epochs=1, rounds=1, threads=(1,), copies=copies)
    assert [(found.trainer, found.threads) for found in result.measured] == [
        ("ours", 1),
        ("gensim", 1),
        ("torch", 1),
    ]
    words = sum(count_words(corpus_files(corpus))[1].values()) * copies
    for found in result.measured:
        assert found.median_seconds > 0 and found.words_per_run == words
        assert 10 * 2**20 < found.median_peak_memory < 4 * 2**30  # a process's own peak
        assert -1 <= found.between <= found.within <= 1
    text = format_result(result)
    assert f"x{copies}, 1 epochs" in text
    assert "ours / gensim, 1 threads: words/s" in text and "x, peak memory " in text
    assert "ours 1 thread / gensim 1 worker, words/s:" in text


def test_the_group_measure_reads_any_word_list() -> None:
    import numpy as np

    words = ["father", "mother", "one", "two", "other"]
    vectors = np.array([[1, 0], [1, 0.1], [0, 1], [0.1, 1], [1, 1]], dtype=np.float32)
    within, between = group_measure(vectors, words)
    assert within == pytest.approx(np.mean([0.995037, 0.995037]), abs=1e-5)
    assert between < 0.2


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["bench", "train", "--corpus", str(tmp_path / "none")]) == 2
    assert "no corpus at" in capsys.readouterr().err
    assert main(["bench", "train", "--repeats", "0", "--corpus", str(tmp_path)]) == 2
    assert main(["bench", "train", "--copies", "0", "--corpus", str(tmp_path)]) == 2


def test_a_synthetic_corpus_holds_each_of_its_different_words_six_times(tmp_path: Path) -> None:
    from llm_from_scratch.bench.train_setup import synthetic_corpus

    path = synthetic_corpus(tmp_path / "words.txt", 1000)
    counts = count_words(corpus_files(path))[1]
    assert len(counts) == 1000 and set(counts.values()) == {6}
    assert all(len(line.split()) <= 12 for line in path.read_text().splitlines())


def test_the_memory_report_divides_the_peaks_and_the_growth_from_one_copy_to_ten() -> None:
    from llm_from_scratch.bench.train import Measured, TrainBenchResult
    from llm_from_scratch.bench.train_setup import MemoryCase, format_memory

    def case(name: str, ours: int, gensim: int) -> MemoryCase:
        measured = tuple(
            Measured(trainer, 2, (1.0,), (peak * 2**20,), 10, 0.5, 0.1)
            for trainer, peak in (("ours", ours), ("gensim", gensim))
        )
        return MemoryCase(name, TrainBenchResult(Path("c"), 1, 1, 1, measured))

    text = format_memory([case("words", 780, 600), case("x1", 200, 100), case("x10", 240, 110)])
    assert "ours / gensim: 1.30x (target <= 1.3x)" in text
    assert "growth from 1 copy to 10: ours 1.20x, gensim 1.10x" in text
