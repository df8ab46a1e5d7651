"""Training from Python as a gensim user trains: a list of token lists or a pre-tokenized file,
tokens kept verbatim, the result's vectors and its save, gensim's options with gensim's
meanings (compared with gensim 4's own vocabulary and sampling), gensim's other names answered
with ours, and a run that trains once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

from llm_from_scratch.errors import CorpusError, MismatchError, OptionError, PyTorchNameError
from llm_from_scratch.training import Run, TrainOptions
from llm_from_scratch.training.options import CHECKPOINT_FILE, METHODS
from llm_from_scratch.training.run import EpochSummary, ProgressState
from llm_from_scratch.training.skipgram import NoiseTable, keep_probabilities
from llm_from_scratch.training.words import TOKENS
from llm_from_scratch.vectors import WordVectors

from checks import raises_rule
from cli_support import run_main
from conftest import import_optional

CITIES = ("new_york", "paris", "tokyo", "são_paulo")
FRAMES = (("i", "live", "in", "{}"), ("{}", "is", "a", "big", "city"), ("in", "2024", "{}", "grew"))


def city_sentences(count: int = 300, seed: int = 0) -> list[list[str]]:
    """Sentences of phrase tokens (``new_york``), numbers (``2024``) and plain words."""
    rng = np.random.default_rng(seed)
    return [
        [word.format(CITIES[int(rng.integers(len(CITIES)))]) for word in FRAMES[rng.integers(3)]]
        for _ in range(count)
    ]


def small(corpus: Any, output: Path, **options: Any) -> TrainOptions:
    settings = {"dim": 8, "window": 2, "epochs": 2, "min_count": 1, "threads": 1, **options}
    return TrainOptions(corpus=corpus, output=output, **settings)


def table_of(folder: Path) -> np.ndarray[Any, Any]:
    return load_file(str(folder / "table.safetensors"))["token_embedding.weight"]


# A list of token lists, a pre-tokenized file -----------------------------------------------------


def test_a_list_of_token_lists_trains_with_every_token_kept_as_it_is(tmp_path: Path) -> None:
    run = Run.start(small(city_sentences(), tmp_path / "unused"))
    assert {"new_york", "são_paulo", "2024"} <= set(run.vocabulary.words)
    result = run.train()
    vectors = result.vectors
    assert isinstance(vectors, WordVectors)
    assert vectors.index_to_key == list(run.vocabulary.words[:-1])  # [UNK] left out
    table = result.model.parameters[0].tensor.numpy()
    np.testing.assert_array_equal(vectors["new_york"], table[run.vocabulary.word_ids["new_york"]])
    assert not (tmp_path / "unused").exists()  # an iterable corpus writes no checkpoint
    with raises_rule(MismatchError, "resume.missing", match="iterable corpus"):
        Run.start(small(city_sentences(), tmp_path / "unused"), resume=True)


def test_a_token_spelled_unk_stands_for_a_word_outside_the_vocabulary(tmp_path: Path) -> None:
    sentences = [["[UNK]", "is", "here"], ["here", "[UNK]", "[UNK]"]] * 5
    run = Run.start(small(sentences, tmp_path / "o"))
    assert run.vocabulary.words == ("here", "is", "[UNK]")
    assert run.vocabulary.counts.tolist() == [10, 5, 0] and run.corpus_words == 30
    assert run.train().vectors.index_to_key == ["here", "is"]


def test_save_writes_the_pair_and_leaves_no_checkpoint(tmp_path: Path) -> None:
    corpus = tmp_path / "cities.txt"
    corpus.write_text("\n".join(" ".join(s) for s in city_sentences()) + "\n", encoding="utf-8")
    run = Run.start(small(corpus, tmp_path / "out", tokenized=True))
    result = run.train()
    assert (tmp_path / "out" / CHECKPOINT_FILE).is_file()
    result.save(tmp_path / "saved")
    assert sorted(path.name for path in (tmp_path / "saved").iterdir()) == [
        "table.safetensors",
        "tokenizer.json",
    ]
    assert not (tmp_path / "out" / CHECKPOINT_FILE).exists()
    loaded = WordVectors.load(
        tmp_path / "saved" / "table.safetensors", tmp_path / "saved" / "tokenizer.json"
    )
    assert loaded.index_to_key == result.vectors.index_to_key
    np.testing.assert_array_equal(loaded.vectors, result.vectors.vectors)


def test_the_tokenizer_of_a_pre_tokenized_corpus_splits_as_the_trainer_does(
    tmp_path: Path,
) -> None:
    tokenizers = import_optional("tokenizers")
    corpus = tmp_path / "tokens.txt"
    text = "New_York\u00a02024 U.S.\tcafé\u2003x\u001cy\n" * 3
    corpus.write_text(text, encoding="utf-8")
    run = Run.start(small(corpus, tmp_path / "out", tokenized=True))
    words = TOKENS.words(text)
    assert words[:5] == ["New_York", "2024", "U.S.", "café", "x\u001cy"]  # \x1c is no white space
    run.train().save(tmp_path / "out")
    tokenizer = tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    assert tokenizer.encode(text).tokens == words


@pytest.mark.parametrize("method", METHODS)
def test_a_list_trains_the_very_table_its_pre_tokenized_file_trains(
    tmp_path: Path, method: str
) -> None:
    sentences = city_sentences()
    corpus = tmp_path / "cities.txt"
    corpus.write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
    from_list = Run.start(small(sentences, tmp_path / "a", seed=3, method=method)).train()
    given = small(corpus, tmp_path / "b", seed=3, tokenized=True, method=method)
    from_file = Run.start(given).train()
    assert from_list.vectors.index_to_key == from_file.vectors.index_to_key
    np.testing.assert_array_equal(from_list.vectors.vectors, from_file.vectors.vectors)


class Restartable:
    """A corpus streamed from a file, started over by each ``iter()`` (gensim's tutorial)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[list[str]]:
        with self.path.open(encoding="utf-8") as stream:
            for line in stream:
                yield line.split()


def test_a_class_with_iter_trains_and_a_generator_is_refused_pointing_to_one(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "cities.txt"
    corpus.write_text("\n".join(" ".join(s) for s in city_sentences()) + "\n", encoding="utf-8")
    assert Run.start(small(Restartable(corpus), tmp_path / "a")).train().vectors["paris"].size == 8
    for once in ((s for s in city_sentences()), iter(city_sentences()), map(list, [["a"]])):
        with raises_rule(OptionError, "train.one-shot-corpus", match="restartable"):
            Run.start(small(once, tmp_path / "b"))
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("corpus", "rule", "fields"),
    [
        ([["a", "b"], "the cat"], "corpus.sentence", {"number": 1}),
        ([["a"], 5], "corpus.sentence", {"number": 1, "detail": "a int"}),
        ([["a", 7]], "corpus.token", {"number": 0, "token": 7, "detail": "a int"}),
        ([["a"], ["new york"]], "corpus.token", {"token": "new york"}),
        ([["a", ""]], "corpus.token", {"detail": "empty"}),
        ([["café", "\ud800"]], "corpus.token", {"token": "\ud800"}),
    ],
)
def test_an_item_that_is_no_token_list_is_refused_on_the_first_pass(
    tmp_path: Path, corpus: list[Any], rule: str, fields: dict[str, Any]
) -> None:
    with raises_rule(CorpusError, rule, **fields):
        Run.start(small(corpus, tmp_path / "out"))


class Shrinking:
    """A corpus whose passes after the count give fewer sentences (the first ``iter()`` is the
    check that it is restartable)."""

    def __init__(self) -> None:
        self.passes = 0

    def __iter__(self) -> Iterator[list[str]]:
        self.passes += 1
        return iter(city_sentences(300 if self.passes <= 2 else 200))


def test_a_corpus_that_gives_other_words_on_a_later_pass_is_refused(tmp_path: Path) -> None:
    run = Run.start(small(Shrinking(), tmp_path / "out"))
    with raises_rule(CorpusError, "corpus.changed", epoch=1, counted=run.corpus_words):
        run.train()


# One run, one training; callbacks --------------------------------------------------------------


def test_train_again_is_refused_and_the_table_stays_as_trained(tmp_path: Path) -> None:
    run = Run.start(small(city_sentences(), tmp_path / "out"))
    result = run.train()
    before = result.vectors.vectors.copy()
    with raises_rule(OptionError, "train.finished", epochs=2, match="continue_from"):
        run.train()
    np.testing.assert_array_equal(result.vectors.vectors, before)


def test_the_epoch_callback_gets_each_epochs_vectors_as_they_were_then(tmp_path: Path) -> None:
    seen: list[tuple[EpochSummary, WordVectors]] = []
    states: list[ProgressState] = []
    run = Run.start(small(city_sentences(), tmp_path / "out", epochs=3))
    result = run.train(states.append, on_epoch=lambda epoch, wv: seen.append((epoch, wv)))
    assert [epoch for epoch, _ in seen] == list(result.epochs)
    assert [state.epoch for state in states if state.epoch_done] == [1, 2, 3]
    assert all(isinstance(vectors, WordVectors) for _, vectors in seen)
    (_, first), *_, (_, last) = seen
    assert first.index_to_key == result.vectors.index_to_key
    np.testing.assert_array_equal(last.vectors, result.vectors.vectors)
    assert not np.array_equal(first.vectors, last.vectors)  # a copy, not the live table


# gensim's options, gensim's meanings -----------------------------------------------------------


def test_gensims_defaults_are_the_options_defaults() -> None:
    gensim = import_optional("gensim")
    import inspect

    defaults = inspect.signature(gensim.models.Word2Vec).parameters
    ours = TrainOptions()
    for name in ("sample", "alpha", "min_alpha", "ns_exponent", "max_vocab_size",
                 "max_final_vocab", "window", "min_count", "seed", "epochs"):  # fmt: skip
        assert getattr(ours, name) == defaults[name].default, name


def test_the_default_options_given_by_name_train_the_same_bytes(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(s) for s in city_sentences()) + "\n", encoding="utf-8")
    common = ("--dim", "8", "--threads", "1", "--min-count", "1", "--corpus", str(corpus))
    assert run_main(["ch18", "train", *common, "--output", str(tmp_path / "a")])[0] == 0
    named = ("--sample", "0.001", "--alpha", "0.025", "--min-alpha", "0.0001")
    named += ("--ns-exponent", "0.75")
    assert run_main(["ch18", "train", *common, *named, "--output", str(tmp_path / "b")])[0] == 0
    np.testing.assert_array_equal(table_of(tmp_path / "a"), table_of(tmp_path / "b"))
    status, _, _ = run_main(
        ["ch18", "train", *common, "--sample", "0", "--output", str(tmp_path / "c")]
    )
    assert status == 0 and not np.array_equal(table_of(tmp_path / "a"), table_of(tmp_path / "c"))


def gensim_model(sentences: list[list[str]], **options: Any) -> Any:
    gensim = import_optional("gensim")
    model = gensim.models.Word2Vec(sg=1, workers=1, **options)
    model.build_vocab(sentences)
    return model


def zipf_sentences(seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    words = np.minimum(rng.zipf(1.3, size=30_000), 5000)
    return [[f"w{word}" for word in words[i : i + 10]] for i in range(0, words.size, 10)]


@pytest.mark.parametrize("cap", [None, 50, 400, 2000])
@pytest.mark.parametrize("final", [None, 30, 100])
def test_the_vocabulary_under_max_vocab_size_and_max_final_vocab_is_gensims(
    tmp_path: Path, cap: int | None, final: int | None
) -> None:
    sentences = zipf_sentences()
    model = gensim_model(sentences, min_count=2, max_vocab_size=cap, max_final_vocab=final)
    theirs = {word: model.wv.get_vecattr(word, "count") for word in model.wv.index_to_key}
    options = small(
        sentences, tmp_path / "o", min_count=2, max_vocab_size=cap, max_final_vocab=final
    )
    run = Run.start(options)
    ours = dict(zip(run.vocabulary.words[:-1], run.vocabulary.counts[:-1].tolist(), strict=True))
    assert ours == theirs
    assert run.corpus_words == model.corpus_total_words


@pytest.mark.parametrize("sample", [0.0, 1e-5, 1e-3, 0.3, 1.0, 40.0])
def test_subsampling_keeps_each_word_with_gensims_probability(sample: float) -> None:
    model = gensim_model(zipf_sentences(), min_count=1, sample=sample)
    counts = np.array([model.wv.get_vecattr(w, "count") for w in model.wv.index_to_key])
    theirs = np.array([model.wv.get_vecattr(w, "sample_int") for w in model.wv.index_to_key])
    ours = keep_probabilities(counts, sample)
    np.testing.assert_allclose(ours, theirs / (2**32 - 1), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("exponent", [-0.5, 0.0, 0.75, 1.0])
def test_noise_words_are_drawn_as_gensims_ns_exponent_says(exponent: float) -> None:
    model = gensim_model(zipf_sentences(), min_count=1, ns_exponent=exponent)
    their_cumulative = model.cum_table / model.cum_table[-1]
    theirs = np.diff(their_cumulative, prepend=0.0)
    counts = np.array([model.wv.get_vecattr(w, "count") for w in model.wv.index_to_key])
    ours = NoiseTable.of(np.append(counts, 0), exponent).probabilities  # with [UNK]'s 0
    assert ours[-1] == 0.0
    np.testing.assert_allclose(ours[:-1], theirs, atol=1e-8)


@pytest.mark.parametrize(
    ("option", "value"),
    [("sample", -1e-3), ("alpha", float("nan")), ("min_alpha", 11), ("ns_exponent", float("inf")),
     ("max_vocab_size", 0), ("max_final_vocab", 1.5)],
)  # fmt: skip
def test_an_option_of_gensims_out_of_its_range_is_refused_in_one_line(
    tmp_path: Path, option: str, value: object
) -> None:
    with raises_rule(OptionError, "train.option", option=option.replace("_", "-")):
        TrainOptions(corpus=tmp_path, output=tmp_path / "out", **{option: value}).checked(1)


# gensim's other names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gensim_name", "ours"),
    [("vector_size", "dim"), ("workers", "threads"), ("negative", "negatives"),
     ("iter", "epochs"), ("sentences", "corpus")],
)  # fmt: skip
def test_gensims_names_in_python_are_answered_with_ours(gensim_name: str, ours: str) -> None:
    with raises_rule(PyTorchNameError, "gensim.name", gensim_name=gensim_name) as caught:
        TrainOptions(**{gensim_name: 5})
    assert caught.value.ours.split()[0] == ours
    assert isinstance(caught.value, TypeError)


@pytest.mark.parametrize(
    ("words", "ours"),
    [(["--vector-size", "50"], "--dim"), (["--workers", "2"], "--threads"),
     (["--negative", "5"], "--negatives"), (["--sg", "1"], "skip-gram"),
     (["--iter", "3"], "--epochs")],
)  # fmt: skip
def test_gensims_names_on_the_command_line_are_answered_in_one_line(
    tmp_path: Path, words: list[str], ours: str
) -> None:
    status, out, err = run_main(["ch18", "train", "--output", str(tmp_path / "o"), *words])
    assert (status, out) == (2, "") and err.count("\n") == 1
    assert f"'{words[0]}' (gensim's name); here: " in err and ours in err
    assert not (tmp_path / "o").exists()


def test_the_help_lists_gensims_options_with_their_defaults() -> None:
    status, out, _ = run_main(["ch18", "train", "--help"])
    assert status == 0
    for text in ("--sample S", "default: 0.001", "--min-alpha A", "--ns-exponent E",
                 "--max-vocab-size N", "--max-final-vocab N", "--tokenized", "--keep-model",
                 "--continue DIR"):  # fmt: skip
        assert text in " ".join(out.split()), text
    assert "--vector-size" not in out


def test_a_table_file_records_gensims_options(tmp_path: Path) -> None:
    Run.start(small(city_sentences(), tmp_path / "o", sample=0.0)).train().save(tmp_path / "o")
    from llm_from_scratch.nn import load_metadata

    metadata = load_metadata(tmp_path / "o" / "table.safetensors")
    assert json.loads(metadata["sample"]) == 0.0 and json.loads(metadata["alpha"]) == 0.025
    assert json.loads(metadata["tokenized"]) is True and metadata["epochs"] == "2"
