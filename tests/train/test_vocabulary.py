"""The vocabulary: which words, in which order, with which counts; the tokens of a text; the
tokenizer file.

The tokens are compared with a plain restatement (each word's ID, -1 for a word outside the
vocabulary, -2 at each line end) on texts Hypothesis makes. The tokenizer file is read back with
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

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import word_piece
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import load_word_pieces
from llm_from_scratch.errors import CorpusError, WordError
from llm_from_scratch.training.corpus import corpus_files, count_words
from llm_from_scratch.training.vocabulary import DEFAULT_MIN_COUNT, UNKNOWN_TOKEN, Vocabulary
from llm_from_scratch.training.words import line_words

from checks import raises_rule
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
    assert problem_of(lambda: Vocabulary.build([])).rule == "corpus.no-words"
    assert problem_of(lambda: Vocabulary.build(iter([[], []]))).rule == "corpus.no-words"
    error = problem_of(lambda: Vocabulary.build([["to", "be", "to"]], 3))
    assert (error.rule, error.min_count, error.highest_count) == ("corpus.empty-vocabulary", 3, 2)
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
    assert (error.rule, error.detail) == ("corpus.min-count", repr(min_count))


def test_a_numpy_integer_is_a_minimum_count() -> None:
    assert Vocabulary.build([["a", "a"]], np.int64(2)).words == ("a", UNKNOWN_TOKEN)


# Tokens -----------------------------------------------------------------------------------------


def plain_tokens(vocabulary: Vocabulary, text: str) -> list[int]:
    found = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        found += [
            vocabulary.words[:-1].index(w) if w in vocabulary.words[:-1] else -1
            for w in line_words(line)
        ]
        found.append(-2)
    return found[:-1]  # no line end after the last line


def test_a_text_becomes_ids_unknown_words_and_line_ends() -> None:
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    tokens = vocabulary.tokens("\n".join(HAMLET))
    assert tokens.dtype == np.int32
    assert tokens.tolist() == plain_tokens(vocabulary, "\n".join(HAMLET))
    first_line = [vocabulary.words[i] if i >= 0 else i for i in tokens[:11]]
    assert first_line == ["to", "be", "or", -1, "to", "be", -1, -1, "the", -1, -2]
    assert vocabulary.tokens("").tolist() == []
    assert vocabulary.tokens("question [UNK]\r\n\r").tolist() == [-1, -1, -2, -2]


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=5), min_size=1, max_size=10),
    st.text(alphabet=st.sampled_from("abcxyz ABC\n\r,'"), max_size=60),
    st.integers(1, 3),
)
def test_the_tokens_are_each_words_id_in_order_with_the_line_ends(
    corpus: list[list[str]], text: str, min_count: int
) -> None:
    try:
        vocabulary = Vocabulary.build(corpus, min_count)
    except CorpusError:
        return
    assert vocabulary.tokens(text).tolist() == plain_tokens(vocabulary, text)
    words = line_words(text.replace("\n", " ").replace("\r", " "))
    looked_up = vocabulary.lookup(words).tolist()
    assert looked_up == [vocabulary.word_ids.get(w, vocabulary.unknown_id) for w in words]


def test_counting_a_folder_gives_the_vocabulary_of_its_sentences(tmp_path: Path) -> None:
    (tmp_path / "hamlet.txt").write_text("\n".join(HAMLET), encoding="utf-8")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    files, counts = count_words(corpus_files(tmp_path))
    assert [file.path for file in files] == [tmp_path / "empty.txt", tmp_path / "hamlet.txt"]
    assert sum(counts.values()) == sum(map(len, SENTENCES)) == 53
    vocabulary = Vocabulary.from_counts(counts, 2)
    assert vocabulary.words == Vocabulary.build(SENTENCES, 2).words
    assert problem_of(lambda: Vocabulary.from_counts(counts, 0)).rule == "corpus.min-count"
    assert problem_of(lambda: Vocabulary.from_counts({}, 2)).rule == "corpus.no-words"


# The tokenizer file -------------------------------------------------------------------------------


def library_tokenizer(vocabulary: Vocabulary) -> Any:
    """The same tokenizer built with the ``tokenizers`` package's own API."""
    tokenizers = require_tokenizers()
    tokenizer = tokenizers.Tokenizer(
        tokenizers.models.WordLevel(dict(vocabulary.word_ids), unk_token=vocabulary.unknown_token)
    )
    folded = [
        tokenizers.normalizers.Replace(character, character.casefold())
        for character in map(chr, range(0x110000))
        if character.casefold() != character and character.lower() == character
    ]
    tokenizer.normalizer = tokenizers.normalizers.Sequence(
        [
            tokenizers.normalizers.NFC(),
            tokenizers.normalizers.Lowercase(),
            *folded,
            tokenizers.normalizers.NFC(),
        ]
    )
    letters = r"[\p{L}\p{Nl}\p{No}]+"
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(f"{letters}(?:'{letters})?"), behavior="removed", invert=True
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
    "\u212a is the Kelvin sign; İstanbul; ΣΟΦΟΣ; Straße; отец МАТЬ",
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
        tokens = vocabulary.tokens(line)
        assert encoding.ids == [i if i >= 0 else vocabulary.unknown_id for i in tokens], line


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
    with raises_rule(WordError, "word.unknown"):
        word_piece(pieces, "question")


def test_the_file_is_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("old", encoding="utf-8")
    vocabulary = Vocabulary.build(SENTENCES, min_count=2)
    vocabulary.save_tokenizer(path)
    assert path.read_text(encoding="utf-8") == vocabulary.tokenizer_json()
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer.json"]
    error = problem_of(lambda: vocabulary.save_tokenizer(tmp_path / "no" / "tokenizer.json"))
    assert (error.rule, error.path) == (
        "corpus.unwritable",
        str(tmp_path / "no" / "tokenizer.json"),
    )
