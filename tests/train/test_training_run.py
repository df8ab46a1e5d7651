"""A training run at scale: stable on every seed and on tiny corpora, resumable to the same
bytes, refusing a checkpoint that is not its own, any language, the reference path, and memory
that does not grow with the corpus.

The seed sweep follows gensim's own test suite: on the Lee corpus that ships with gensim's tests,
``terrorism`` must rank among the 50 nearest words of ``war``, here for six seeds, with the
settings under which batched training used to diverge (window 4, 15 negatives, 10 epochs).
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

import llm_from_scratch.training.corpus as corpus_module
from llm_from_scratch.demos.ch18_token_embeddings.train import REPORT_GROUPS_RU, train
from llm_from_scratch.training.options import CHECKPOINT_FILE, METHODS, TrainOptions
from llm_from_scratch.training.run import ProgressState, Run

from conftest import import_optional
from train_support import folder_bytes, interrupt_at_piece, run_train, write_corpus


def lee_corpus(folder: Path) -> Path:
    """gensim's Lee background corpus (300 news texts, 60,000 words), copied into ``folder``."""
    import_optional("gensim")
    from gensim.test.utils import datapath

    path = folder / "lee.txt"
    shutil.copy(datapath("lee_background.cor"), path)
    return path


def rank_of(run: Run, table: np.ndarray[Any, Any], word: str, near: str) -> int:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    ids = run.vocabulary.word_ids
    order = [int(i) for i in np.argsort(-(unit @ unit[ids[word]])) if i != ids[word]]
    return order.index(ids[near])


STRESS = {"min_count": 5, "window": 4, "negatives": 15, "epochs": 10, "threads": 1}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(1, 7))
def test_every_seed_learns_that_terrorism_is_near_war_with_gensim_sized_rows(
    tmp_path: Path, seed: int, method: str
) -> None:
    corpus = lee_corpus(tmp_path)
    options = TrainOptions(corpus, tmp_path / "out", seed=seed, method=method, **STRESS)
    run = Run.start(options, 1)
    result = run.train()
    table = result.model.parameters[0].tensor.numpy()
    assert np.isfinite(table).all()
    assert rank_of(run, table, "war", "terrorism") < 50
    assert result.largest_row_norm < 10  # gensim's largest on this run is about 3.5
    assert all(math.isfinite(epoch.mean_loss) for epoch in result.epochs)


@pytest.mark.parametrize("method", METHODS)
def test_our_rows_stay_of_the_order_of_gensims_on_the_same_run(tmp_path: Path, method: str) -> None:
    corpus = lee_corpus(tmp_path)
    from gensim.models import Word2Vec

    from llm_from_scratch.training.corpus import corpus_files, count_words, sentences

    files = count_words(corpus_files(corpus))[0]
    theirs = Word2Vec(
        list(sentences(files)),
        sg=1,
        vector_size=100,
        window=4,
        negative=15,
        min_count=5,
        epochs=10,
        workers=1,
        seed=1,
    )
    their_norm = float(np.linalg.norm(theirs.wv.vectors, axis=1).max())
    options = TrainOptions(corpus, tmp_path / "out", seed=1, method=method, **STRESS)
    ours = Run.start(options, 1).train().largest_row_norm
    assert their_norm / 2 < ours < 2 * their_norm


def test_a_tiny_corpus_trained_for_15_epochs_ends_with_a_finite_table(tmp_path: Path) -> None:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("the cat sat on the mat and the dog sat on the log\n" * 3, encoding="utf-8")
    assert len(corpus.read_text().split()) < 50
    status, out, err = run_train(corpus, tmp_path / "out", "--epochs", "15", "--negatives", "15")
    assert status == 0, err
    table = load_file(str(tmp_path / "out" / "table.safetensors"))["token_embedding.weight"]
    assert np.isfinite(table).all() and float(np.linalg.norm(table, axis=1).max()) < 10
    assert "largest row norm" in out


# Resuming -------------------------------------------------------------------------------------


RUNNING = ("--seed", "5", "--threads", "1", "--epochs", "3", "--checkpoint-minutes", "0.000001")


@pytest.mark.parametrize("method", METHODS)
def test_a_run_interrupted_and_resumed_any_number_of_times_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.setattr(corpus_module, "PIECE_BYTES", 2048)  # several blocks an epoch
    corpus = write_corpus(tmp_path, lines=600)
    run = (*RUNNING, "--method", method)
    assert run_train(corpus, tmp_path / "whole", *run)[0] == 0
    output = tmp_path / "resumed"
    for piece in (3, 9, 4):  # interrupt mid-epoch, then later, then again
        with monkeypatch.context() as patch:
            interrupt_at_piece(patch, piece)
            resume = ["--resume", str(output)] if (output / CHECKPOINT_FILE).exists() else []
            status, _, err = run_train(corpus, output, *run, *resume)
            assert status == 130, err
        assert (output / CHECKPOINT_FILE).is_file()
    status, out, err = run_train(corpus, output, *run, "--resume", str(output))
    assert status == 0, err
    assert "resumed from the checkpoint" in out
    assert folder_bytes(output) == folder_bytes(tmp_path / "whole")


def test_a_checkpoint_of_other_options_or_another_corpus_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_corpus(tmp_path, lines=300)
    output = tmp_path / "out"
    interrupt_at_piece(monkeypatch, 2)
    assert run_train(corpus, output, "--epochs", "3")[0] == 130
    monkeypatch.undo()
    status, out, err = run_train(corpus, output, "--resume", str(output), "--window", "3")
    assert (status, out) == (2, "") and err.count("\n") == 1
    assert "the checkpoint was made with --window 2, not 3" in err
    status, out, err = run_train(corpus, output, "--resume", str(output), "--method", "pairs")
    assert (status, out) == (2, "") and err.count("\n") == 1
    assert "--method hogbatch, not pairs" in err
    corpus.write_text(corpus.read_text() + "one more line\n", encoding="utf-8")
    status, _, err = run_train(corpus, output, "--resume", str(output), "--epochs", "3")
    assert status == 2 and err.count("\n") == 1
    assert "the corpus differs from the checkpoint's" in err and "bytes" in err
    status, _, err = run_train(corpus, tmp_path / "none", "--resume", str(tmp_path / "none"))
    assert status == 2 and "no checkpoint to resume" in err


# Progress, report, languages, the reference path ----------------------------------------------


def test_progress_shows_epoch_share_speed_loss_time_left_and_peak_memory(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path, lines=300)
    states: list[ProgressState] = []
    options = TrainOptions(corpus, tmp_path / "out", dim=8, window=2, epochs=2, min_count=2)
    report = train(options, 1, states.append)
    done = [state for state in states if state.epoch_done]
    assert [(state.epoch, state.epochs, state.corpus_fraction) for state in done] == [
        (1, 2, 1.0),
        (2, 2, 1.0),
    ]
    assert done[-1].fraction == 1.0 and done[-1].seconds_left == 0.0
    assert all(state.words_per_second > 0 and state.peak_memory > 2**20 for state in done)
    assert report.words_read == len(corpus.read_text().split())  # the frames' words, all letters
    assert report.peak_memory >= done[-1].peak_memory
    assert 0 < report.largest_row_norm < 10


def test_a_russian_corpus_trains_russian_words_and_reports_russian_neighbours(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(0)
    frames = ["мой {} добр и любит меня", "он насчитал {} монет на столе", "да здравствует {}"]
    lines = []
    for _ in range(300):
        group = int(rng.integers(3))
        words = [members for _, members in REPORT_GROUPS_RU][group]
        lines.append(frames[group].format(words[int(rng.integers(len(words)))]).capitalize())
    corpus = tmp_path / "корпус.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    status, out, err = run_train(corpus, tmp_path / "out", "--epochs", "5")
    assert status == 0, err
    assert "отец" in out and "  семья " not in out  # Russian words, English labels
    assert "family" in out and "король" in out
    status, out, _ = run_train(corpus, tmp_path / "ru", "--epochs", "1", "--lang", "ru")
    assert status == 0 and "семья" in out


@pytest.mark.parametrize("method", METHODS)
def test_the_reference_path_on_the_tape_learns_the_table_the_compiled_loop_learns(
    tmp_path: Path, method: str
) -> None:
    corpus = write_corpus(tmp_path, lines=80)
    common = ("--seed", "2", "--threads", "1", "--epochs", "2", "--method", method)
    assert run_train(corpus, tmp_path / "compiled", *common)[0] == 0
    status, _, err = run_train(corpus, tmp_path / "reference", *common, "--reference")
    assert status == 0, err
    tables = [
        load_file(str(tmp_path / name / "table.safetensors"))["token_embedding.weight"]
        for name in ("compiled", "reference")
    ]
    np.testing.assert_allclose(tables[0], tables[1], rtol=1e-3, atol=1e-4)


# Memory ---------------------------------------------------------------------------------------


def peak_memory_of_one_epoch(corpus: Path, output: Path) -> int:
    from llm_from_scratch.bench.train import timed_process

    command = [sys.executable, "-m", "llm_from_scratch", "ch18", "train", "--corpus", str(corpus)]
    command += ["--output", str(output), "--epochs", "1", "--threads", "2"]
    return timed_process(command)[1]


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_corpus(tmp_path: Path) -> None:
    from llm_from_scratch.bench.train import copied_corpus

    corpus = write_corpus(tmp_path, lines=20_000)  # 600,000 words
    ten = copied_corpus(corpus, 10, tmp_path / "ten")
    one, many = (
        peak_memory_of_one_epoch(path, tmp_path / f"out-{path.stem}") for path in (corpus, ten)
    )
    assert many <= 1.25 * one, (one, many)
