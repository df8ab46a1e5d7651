"""``bench train`` on a small corpus: every trainer runs as a process, the table it writes is
read back and measured, and the report lines up the ratios."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from llm_from_scratch.bench.train import format_result, group_measure, measure, tokenized_corpus
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
        ("hogbatch", 1),
        ("pairs", 1),
        ("gensim", 1),
        ("gensim-file", 1),
        ("torch", 1),
    ]
    words = sum(count_words(corpus_files(corpus))[1].values()) * copies
    for found in result.measured:
        assert found.median_seconds > 0 and found.words_per_run == words
        assert 10 * 2**20 < found.median_peak_memory < 4 * 2**30  # a process's own peak
        assert -1 <= found.between <= found.within <= 1
        assert not found.scores.analogies > 1 and not abs(found.scores.simlex) > 1
    text = format_result(result)
    assert f"x{copies}, 1 epochs" in text
    for method in ("hogbatch", "pairs"):
        for other in ("gensim", "gensim-file", "torch"):
            assert f"{method} / {other}, 1 threads: words/s " in text
    assert "x, peak memory " in text and "2 threads over 1" not in text


def test_each_trainer_reports_its_speed_up_from_one_thread_to_two(tmp_path: Path) -> None:
    import_optional("gensim")
    corpus = write_corpus(tmp_path, lines=300)
    trainers = ("hogbatch", "gensim-file")
    result = measure(corpus, epochs=1, rounds=1, trainers=trainers, threads=(1, 2))
    text = format_result(result)
    for trainer in trainers:
        one, two = result.find(trainer, 1), result.find(trainer, 2)
        assert one is not None and two is not None
        speed = two.words_per_second / one.words_per_second
        assert f"{trainer}, 2 threads over 1, words/s: {speed:.2f}x" in text
    assert "hogbatch / gensim-file, 2 threads: words/s" in text


def test_gensim_reads_the_words_ch18_train_finds_one_sentence_a_line(tmp_path: Path) -> None:
    corpus = tmp_path / "text.txt"
    corpus.write_text("Don't STOP, o'er 12 hills!\n\nThe end.\n", encoding="utf-8")
    path = tokenized_corpus(corpus, tmp_path / "lines.txt")
    assert path.read_text(encoding="utf-8") == "don't stop o'er hills\nthe end\n"


def test_the_word_benchmarks_score_a_table_with_gensims_evaluation() -> None:
    import_optional("gensim")
    import numpy as np

    from llm_from_scratch.bench.word_benchmarks import word_scores

    words = ["man", "woman", "king", "queen", "boy", "girl", "tiger", "cat", "car"]
    rng = np.random.default_rng(0)
    gender, royal = rng.normal(size=50), rng.normal(size=50)
    base = {word: rng.normal(size=50) for word in words}
    for man, woman in (("man", "woman"), ("king", "queen"), ("boy", "girl")):
        base[woman] = base[man] + 3 * gender  # every pair differs by one offset
    base["queen"], base["king"] = base["queen"] + royal, base["king"] + royal
    scores = word_scores(np.array([base[word] for word in words]), words)
    assert scores.analogies == 1.0  # man : woman = king : queen, boy : girl, ...
    assert -1 <= scores.wordsim <= 1  # tiger-cat, king-queen, ... known
    assert math.isnan(scores.simlex)  # fewer than two of its pairs known


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
    from llm_from_scratch.bench.train import OURS, Measured, TrainBenchResult
    from llm_from_scratch.bench.train_setup import MemoryCase, format_memory
    from llm_from_scratch.bench.word_benchmarks import WordScores

    def case(name: str, ours: int, gensim: int) -> MemoryCase:
        scores = WordScores(0.5, 0.4, 0.3)
        measured = tuple(
            Measured(trainer, 2, (1.0,), (peak * 2**20,), 10, 0.5, 0.1, scores)
            for trainer, peak in ((OURS[0], ours), ("gensim", gensim))
        )
        return MemoryCase(name, TrainBenchResult(Path("c"), 1, 1, 1, measured))

    text = format_memory([case("words", 780, 600), case("x1", 200, 100), case("x10", 240, 110)])
    assert "ours / gensim: 1.30x (target <= 1.3x)" in text
    assert "growth from 1 copy to 10: ours 1.20x, gensim 1.10x" in text
