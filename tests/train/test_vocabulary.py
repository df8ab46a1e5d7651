"""The vocabulary: which words, in which order, with which counts; the encoder; the tokenizer file.

The encoder is compared with a plain restatement (look each word up, drop the unknown ones and
the sentences left empty) on sentences Hypothesis makes. The tokenizer file is read back with
the ``tokenizers`` package (``make pretrained`` or ``make corpus`` installs it), compared with
the same tokenizer built by that package's own API, and loaded the way ``ch18 neighbours``
loads one.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.demos.ch18_token_embeddings.corpus import (
    DEFAULT_MIN_COUNT,
    UNKNOWN_TOKEN,
    WORD_PATTERN,
    CorpusError,
    Vocabulary,
    line_words,
    load_corpus,
)
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    UnknownWordError,
    word_piece,
)
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import load_word_pieces

from conftest import require_tokenizers

HAMLET = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune,",
    "Or to take arms against a sea of troubles",
    "And by opposing end them. To die—to sleep,",
    "",
    "No more; and by a sleep to say we end",
]
SENTENCES = [words for line in HAMLET if (words := line_words(line))]


def problem_of(call: object) -> CorpusError:
    assert callable(call)
    with pytest.raises(CorpusError) as caught:
        call()
    return caught.value


# Building ---------------------------------------------------------------------------------------


def test_ids_go_by_falling_count_then_by_word_and_the_unknown_token_is_last() -> None:
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    counts = Counter(word for sentence in SENTENCES for word in sentence)
    # "and" and "the" are both seen 3 times: the word breaks the tie
    assert vocabulary.words == (
        *("to", "and", "the", "a", "be", "by", "end", "of", "or", "sleep"),
        "[UNK]",
    )
    assert vocabulary.counts.tolist() == [counts[word] for word in vocabulary.words[:-1]] + [0]
    assert vocabulary.counts.tolist()[:4] == [7, 3, 3, 2]
    assert vocabulary.counts.dtype == np.int64 and not vocabulary.counts.flags.writeable
    assert (vocabulary.unknown_token, vocabulary.unknown_id) == (UNKNOWN_TOKEN, 10)
    assert vocabulary.vocabulary_size == len(vocabulary.words) == 11
    assert vocabulary.word_ids["sleep"] == 9 and vocabulary.word_ids["[UNK]"] == 10


def test_the_default_minimum_count_is_five_as_in_gensim() -> None:
    sentences = [["often"] * 5, ["seldom"] * 4, ["once"]]
    assert DEFAULT_MIN_COUNT == 5
    assert Vocabulary.build(sentences).words == ("often", UNKNOWN_TOKEN)
    assert Vocabulary.build(sentences, 1).words == ("often", "seldom", "once", UNKNOWN_TOKEN)


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=6), max_size=12), st.integers(1, 4))
def test_the_vocabulary_is_every_word_seen_min_count_times_in_the_documented_order(
    sentences: list[list[str]], min_count: int
) -> None:
    counts = Counter(word for sentence in sentences for word in sentence)
    kept = sorted(
        (word for word in counts if counts[word] >= min_count), key=lambda w: (-counts[w], w)
    )
    if not kept:
        return
    vocabulary = Vocabulary.build(iter(sentences), min_count)
    assert vocabulary.words == (*kept, UNKNOWN_TOKEN)
    assert vocabulary.counts.tolist() == [counts[word] for word in kept] + [0]


def test_a_corpus_without_words_or_without_frequent_words_makes_no_vocabulary() -> None:
    assert problem_of(lambda: Vocabulary.build([])).problem == "no-words"
    assert problem_of(lambda: Vocabulary.build(iter([[], []]))).problem == "no-words"
    error = problem_of(lambda: Vocabulary.build([["to", "be", "to"]], 3))
    assert (error.problem, error.min_count, error.highest_count) == ("empty-vocabulary", 3, 2)
    assert str(error) == (
        "no word of the corpus occurs 3 times or more (the most frequent occurs 2 times), so the "
        "vocabulary is empty: lower the minimum count"
    )


@pytest.mark.parametrize("min_count", [0, -1, True, 2.0, "5", None])
def test_a_minimum_count_must_be_an_integer_of_at_least_one(min_count: Any) -> None:
    def never_read() -> Any:
        raise AssertionError("the sentences were read before the minimum count was checked")
        yield

    error = problem_of(lambda: Vocabulary.build(never_read(), min_count))
    assert (error.problem, error.detail) == ("min-count", repr(min_count))


def test_a_numpy_integer_is_a_minimum_count() -> None:
    assert Vocabulary.build([["a", "a"]], np.int64(2)).words == ("a", UNKNOWN_TOKEN)


# Encoding ---------------------------------------------------------------------------------------


def plain_encode(vocabulary: Vocabulary, sentences: list[list[str]]) -> tuple[list[int], list[int]]:
    ids, starts = [], [0]
    for sentence in sentences:
        kept = [vocabulary.words.index(word) for word in sentence if word in vocabulary.words[:-1]]
        if kept:
            ids += kept
            starts.append(len(ids))
    return ids, starts


def test_words_outside_the_vocabulary_and_sentences_left_empty_are_dropped() -> None:
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    ids, starts = vocabulary.encode(iter(SENTENCES))
    assert (ids.dtype, starts.dtype) == (np.int64, np.int64)
    assert (ids.tolist(), starts.tolist()) == plain_encode(vocabulary, SENTENCES)
    first = ids[starts[0] : starts[1]].tolist()
    assert [vocabulary.words[i] for i in first] == ["to", "be", "or", "to", "be", "the"]
    assert starts[-1] == ids.size and (np.diff(starts) >= 1).all()
    empty_ids, empty_starts = vocabulary.encode([])
    assert (empty_ids.tolist(), empty_starts.tolist()) == ([], [0])
    none_ids, none_starts = vocabulary.encode([["question"], [], ["[UNK]"]])
    assert (none_ids.tolist(), none_starts.tolist()) == ([], [0])


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=5), min_size=1, max_size=10),
    st.lists(st.lists(st.sampled_from("abcdefghxyz"), max_size=5), max_size=10),
    st.integers(1, 3),
)
def test_the_encoder_keeps_known_words_in_order_and_starts_each_kept_sentence(
    corpus: list[list[str]], sentences: list[list[str]], min_count: int
) -> None:
    try:
        vocabulary = Vocabulary.build(corpus, min_count)
    except CorpusError:
        return
    ids, starts = vocabulary.encode(sentences)
    assert (ids.tolist(), starts.tolist()) == plain_encode(vocabulary, sentences)
    words = [word for sentence in sentences for word in sentence]
    looked_up = vocabulary.lookup(words).tolist()
    assert looked_up == [vocabulary.word_ids.get(w, vocabulary.unknown_id) for w in words]
    assert [i for i in looked_up if i != vocabulary.unknown_id] == ids.tolist()


def test_load_corpus_reads_counts_and_encodes_a_folder(tmp_path: Path) -> None:
    (tmp_path / "hamlet.txt").write_text("\n".join(HAMLET), encoding="utf-8")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    corpus = load_corpus(tmp_path, min_count=2)
    assert corpus.files == (tmp_path / "empty.txt", tmp_path / "hamlet.txt")
    assert corpus.words_read == sum(map(len, SENTENCES)) == 53
    assert corpus.vocabulary.words == Vocabulary.build(SENTENCES, 2).words
    assert (corpus.ids.tolist(), corpus.starts.tolist()) == plain_encode(
        corpus.vocabulary, SENTENCES
    )
    assert problem_of(lambda: load_corpus(tmp_path / "none", min_count=0)).problem == "min-count"
    assert problem_of(lambda: load_corpus(tmp_path / "empty.txt")).problem == "no-words"


# The tokenizer file -------------------------------------------------------------------------------


def library_tokenizer(vocabulary: Vocabulary) -> Any:
    """The same tokenizer built with the ``tokenizers`` package's own API."""
    tokenizers = require_tokenizers()
    tokenizer = tokenizers.Tokenizer(
        tokenizers.models.WordLevel(dict(vocabulary.word_ids), unk_token=vocabulary.unknown_token)
    )
    tokenizer.normalizer = tokenizers.normalizers.Lowercase()
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(WORD_PATTERN), behavior="removed", invert=True
    )
    return tokenizer


def saved_tokenizer(vocabulary: Vocabulary, path: Path) -> Any:
    tokenizers = require_tokenizers()
    vocabulary.save_tokenizer(path)
    return tokenizers.Tokenizer.from_file(str(path))


def test_the_file_is_what_the_tokenizers_package_writes_for_the_same_tokenizer() -> None:
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    assert json.loads(vocabulary.tokenizer_json()) == json.loads(
        library_tokenizer(vocabulary).to_str()
    )
    document = json.loads(vocabulary.tokenizer_json())
    assert list(document["model"]["vocab"]) == list(vocabulary.words)


EDGE_LINES = [
    *HAMLET,
    "DON'T o'er 'tis th' rock'n'roll abc''def x'",
    "café naïve Ægypt façade",
    "2B or not 2B, R2D2 1600",
    "\u212a is the Kelvin sign; İstanbul; ΣΟΦΟΣ",
    "\u2019Tis [UNK] [unk] unk <s>",
    "\t  \u00a0",
    "",
]


def test_the_saved_tokenizer_gives_the_encoder_ids_on_every_line(tmp_path: Path) -> None:
    vocabulary = Vocabulary.build([*SENTENCES, ["tis", "o'er", "don't", "k", "i"]], min_count=1)
    tokenizer = saved_tokenizer(vocabulary, tmp_path / "tokenizer.json")
    for line in EDGE_LINES:
        words = line_words(line)
        expected = vocabulary.lookup(words).tolist()
        encoding = tokenizer.encode(line, add_special_tokens=False)
        assert encoding.ids == expected, line
        assert encoding.tokens == [vocabulary.words[i] for i in expected], line
        ids, _ = vocabulary.encode([words])
        assert [i for i in encoding.ids if i != vocabulary.unknown_id] == ids.tolist(), line


def test_the_neighbours_command_reads_one_piece_per_known_word(tmp_path: Path) -> None:
    require_tokenizers()
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    path = tmp_path / "tokenizer.json"
    vocabulary.save_tokenizer(path)
    pieces = load_word_pieces(path)
    assert pieces.unknown_token == UNKNOWN_TOKEN
    assert pieces.pieces("sleep") == (("sleep", 9),)
    assert pieces.pieces("Sleep") == (("sleep", 9),)
    assert pieces.pieces("question") == ((UNKNOWN_TOKEN, vocabulary.unknown_id),)
    assert pieces.token(vocabulary.unknown_id) == UNKNOWN_TOKEN
    assert word_piece(pieces, "sleep").id == 9
    with pytest.raises(UnknownWordError):
        word_piece(pieces, "question")


def test_the_file_is_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("old", encoding="utf-8")
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    vocabulary.save_tokenizer(path)
    assert path.read_text(encoding="utf-8") == vocabulary.tokenizer_json()
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer.json"]
    error = problem_of(lambda: vocabulary.save_tokenizer(tmp_path / "no" / "tokenizer.json"))
    assert (error.problem, error.path) == ("unwritable", str(tmp_path / "no" / "tokenizer.json"))
