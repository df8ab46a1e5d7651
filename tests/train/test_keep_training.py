"""Keep training: a run keeps its context table beside the pair (``--keep-model``), and
``--continue DIR`` (``Run.continue_from``) trains both tables further on a new corpus with the
vocabulary fixed, the words outside it counted and reported. Where a continued run and one run
trained the same texts in one go are well defined to be equal (docs/training.md, "Keep
training"), they write the same bytes with one thread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

from llm_from_scratch.errors import CorpusError, MismatchError
from llm_from_scratch.nn import load_metadata
from llm_from_scratch.training import Run, TrainOptions
from llm_from_scratch.training.options import CHECKPOINT_FILE, MODEL_FILE
from llm_from_scratch.training.vocabulary import Vocabulary

from checks import raises_rule
from cli_support import run_main
from train_support import folder_bytes, interrupt_at_piece, run_train, write_corpus


def tables(folder: Path) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    inputs = load_file(str(folder / "table.safetensors"))["token_embedding.weight"]
    return inputs, load_file(str(folder / MODEL_FILE))["context_embedding.weight"]


SETTINGS = {"dim": 8, "window": 2, "min_count": 2, "threads": 1, "seed": 4}


def trained(corpus: Path, output: Path, epochs: int, **options: Any) -> None:
    settings = {**SETTINGS, "keep_model": True, **options}
    run = Run.start(TrainOptions(corpus, output, epochs=epochs, **settings))
    run.train().save(output)


def test_keep_model_writes_the_context_table_beside_the_pair_and_a_run_without_removes_it(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path, lines=200)
    status, out, err = run_train(corpus, tmp_path / "out", "--keep-model")
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        MODEL_FILE,
        "table.safetensors",
        "tokenizer.json",
    ]
    inputs, contexts = tables(tmp_path / "out")
    assert inputs.shape == contexts.shape and np.abs(contexts).max() > 0
    assert f"{MODEL_FILE} (--continue" in out
    assert run_train(corpus, tmp_path / "out")[0] == 0
    assert not (tmp_path / "out" / MODEL_FILE).exists()  # it would not belong to the new pair


@pytest.mark.parametrize("first", [0, 2])
def test_a_run_continued_on_its_corpus_writes_the_bytes_of_one_run_of_all_the_epochs(
    tmp_path: Path, first: int
) -> None:
    # Equal where well defined: a rate that does not depend on where the run ends (alpha ==
    # min_alpha), or a first run of 0 epochs (the seed's tables), on the same corpus.
    corpus = write_corpus(tmp_path, lines=300)
    rate = {"alpha": 0.02, "min_alpha": 0.02} if first else {}
    trained(corpus, tmp_path / "whole", 5, **rate)
    trained(corpus, tmp_path / "parts", first, **rate)
    run = Run.continue_from(tmp_path / "parts", corpus=corpus, epochs=5 - first)
    assert run.origin.first_epoch == first and run.origin.outside_words == 0
    run.train().save(tmp_path / "parts")
    assert folder_bytes(tmp_path / "parts") == folder_bytes(tmp_path / "whole")


def test_a_continued_run_trains_both_tables_on_a_new_corpus_with_the_vocabulary_fixed(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path, lines=300)
    trained(corpus, tmp_path / "out", 2)
    before = tables(tmp_path / "out")
    tokenizer = (tmp_path / "out" / "tokenizer.json").read_bytes()
    new = tmp_path / "new.txt"
    new.write_text("my father is kind and loves zebras\nthe zebra king\n" * 40, encoding="utf-8")
    argv = ["ch18", "train", "--continue", str(tmp_path / "out"), "--corpus", str(new)]
    status, out, err = run_main([*argv, "--epochs", "2"])  # --output: the continued folder
    assert status == 0, err
    assert "continued the table of" in out and "trained 2 epochs before" in out
    assert "80 words of this corpus, 2 different ones, are outside it" in out  # zebra(s)
    assert (tmp_path / "out" / "tokenizer.json").read_bytes() == tokenizer
    after = tables(tmp_path / "out")
    for old, now in zip(before, after, strict=True):
        assert old.shape == now.shape and not np.array_equal(old, now)
    assert not (tmp_path / "out" / CHECKPOINT_FILE).exists()


def test_a_continued_run_interrupted_and_resumed_writes_the_bytes_of_one_uninterrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llm_from_scratch.training.corpus as corpus_module

    monkeypatch.setattr(corpus_module, "PIECE_BYTES", 2048)  # several blocks an epoch
    corpus = write_corpus(tmp_path, lines=400)
    for name in ("whole", "resumed"):
        trained(corpus, tmp_path / name, 1)
    common = ["--corpus", str(corpus), "--epochs", "2", "--checkpoint-minutes", "0.000001"]
    assert run_main(["ch18", "train", "--continue", str(tmp_path / "whole"), *common])[0] == 0
    with monkeypatch.context() as patch:
        interrupt_at_piece(patch, 5)
        status, _, err = run_main(
            ["ch18", "train", "--continue", str(tmp_path / "resumed"), *common]
        )
        assert status == 130, err
    assert (tmp_path / "resumed" / CHECKPOINT_FILE).is_file()
    status, out, err = run_main(["ch18", "train", "--resume", str(tmp_path / "resumed")])
    assert status == 0, err
    assert "continued the table of" in out
    assert folder_bytes(tmp_path / "resumed") == folder_bytes(tmp_path / "whole")


def test_what_cannot_be_continued_is_refused_in_one_line_before_any_file_changes(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path, lines=200)
    assert run_train(corpus, tmp_path / "plain")[0] == 0
    with raises_rule(MismatchError, "continue.missing", match=MODEL_FILE):
        Run.continue_from(tmp_path / "plain", corpus=corpus)
    trained(corpus, tmp_path / "kept", 1)
    kept = folder_bytes(tmp_path / "kept")
    with raises_rule(MismatchError, "continue.options", match="--dim 8, not 9"):
        Run.continue_from(tmp_path / "kept", corpus=corpus, dim=9)
    with raises_rule(MismatchError, "continue.options", match="--tokenized False, not True"):
        Run.continue_from(tmp_path / "kept", corpus=corpus, tokenized=True)
    stranger = tmp_path / "stranger.txt"
    stranger.write_text("zebra quagga okapi\n" * 5, encoding="utf-8")
    with raises_rule(CorpusError, "corpus.no-known-words", outside=15):
        Run.continue_from(tmp_path / "kept", corpus=stranger)
    other = Vocabulary.build([["to", "be"]], 1).tokenizer_json()
    (tmp_path / "kept" / "tokenizer.json").write_text(other, encoding="utf-8")
    with raises_rule(MismatchError, "continue.unreadable"):
        Run.continue_from(tmp_path / "kept", corpus=corpus)
    status, out, err = run_train(corpus, tmp_path / "o", "--continue", str(tmp_path / "plain"))
    assert (status, out) == (2, "") and err.count("\n") == 1 and "nothing to continue" in err
    assert {k: v for k, v in folder_bytes(tmp_path / "kept").items() if k != "tokenizer.json"} == {
        k: v for k, v in kept.items() if k != "tokenizer.json"
    }


def test_a_continued_run_takes_the_models_method_and_may_train_with_the_other(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path, lines=200)
    trained(corpus, tmp_path / "out", 1, method="pairs")
    run = Run.continue_from(tmp_path / "out", corpus=corpus)
    assert run.options.method == "pairs"
    switched = Run.continue_from(tmp_path / "out", corpus=corpus, method="hogbatch", epochs=1)
    assert switched.options.method == "hogbatch"
    switched.train().save(tmp_path / "out")
    metadata = load_metadata(tmp_path / "out" / "table.safetensors")
    assert json.loads(metadata["method"]) == "hogbatch" and metadata["epochs"] == "2"
    assert Run.continue_from(tmp_path / "out", corpus=corpus).options.method == "hogbatch"


def test_a_model_trained_from_token_lists_continues_from_a_list(tmp_path: Path) -> None:
    sentences = [["new_york", "is", "big"], ["paris", "is", "old"], ["2024", "came"]] * 40
    options = TrainOptions(sentences, tmp_path / "o", dim=8, min_count=1, epochs=1, keep_model=True)
    Run.start(options).train().save(tmp_path / "out")
    more = [["new_york", "grew", "in", "2024"]] * 30
    run = Run.continue_from(tmp_path / "out", corpus=more, epochs=2)
    assert run.options.tokenized and run.origin.outside_distinct == 2  # grew, in
    result = run.train()
    assert result.epochs_trained == 3 and "grew" not in result.vectors
    result.save(tmp_path / "out")
    assert Run.continue_from(tmp_path / "out", corpus=more).origin.first_epoch == 3
    given = TrainOptions(more, tmp_path / "o", dim=8, epochs=1, tokenized=True)
    assert Run.start(given, continue_from=tmp_path / "out").origin.first_epoch == 3
