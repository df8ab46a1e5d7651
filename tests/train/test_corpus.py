"""Reading a corpus as a stream: which files, how they decode, the pieces they are read in, and
what a word is.

The pieces are checked on any text Hypothesis makes (with a small piece size): they are the
file, whole, in order, with offsets a later read can start from, and none is larger than twice
the piece size. The word rule is checked against a plain restatement and, through the saved
tokenizer file, against the ``tokenizers`` package on every assigned character.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.errors import CorpusError
from llm_from_scratch.training import corpus as corpus_module
from llm_from_scratch.training.corpus import (
    PIECE_BYTES,
    CorpusFile,
    corpus_files,
    count_words,
    pieces,
    sentences,
    write_atomically,
)
from llm_from_scratch.training.vocabulary import Vocabulary
from llm_from_scratch.training.words import (
    ASCII_WORD_PATTERN,
    LINE_END_PATTERN,
    WORD_PATTERN,
    WORDS,
    compiled,
    line_words,
)

from conftest import require_tokenizers


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def problem_of(call: object) -> CorpusError:
    assert callable(call)
    with pytest.raises(CorpusError) as caught:
        call()
    return caught.value


def listed(path: Path) -> list[CorpusFile]:
    """The files of a corpus with the encodings the counting pass found."""
    return count_words(corpus_files(path))[0]


def text_of(path: Path) -> str:
    (file,) = listed(path)
    return "".join(piece.text for piece in pieces(file))


# Which files ----------------------------------------------------------------------------------


def test_a_folder_gives_its_txt_files_recursively_sorted_without_hidden_ones(
    tmp_path: Path,
) -> None:
    for name in ["b.txt", "a.txt", "sub/c.txt", "sub/deeper/a.txt", "A.TXT", "z/x.txt"]:
        write(tmp_path / name, "to be")
    for name in ["notes.md", ".hidden.txt", ".hidden/d.txt", "sub/.e.txt", "sub/readme"]:
        write(tmp_path / name, "not read")
    (tmp_path / "folder.txt").mkdir()  # a folder named like a text is no file
    found = [file.path.relative_to(tmp_path).as_posix() for file in corpus_files(tmp_path)]
    assert found == ["A.TXT", "a.txt", "b.txt", "sub/c.txt", "sub/deeper/a.txt", "z/x.txt"]


def test_a_file_is_its_own_corpus_whatever_its_name_with_its_size(tmp_path: Path) -> None:
    path = write(tmp_path / "plays.text", "to be")
    assert corpus_files(path) == [CorpusFile(path, 5)]


def test_symbolic_links_to_files_are_read_but_links_to_folders_are_not_followed(
    tmp_path: Path,
) -> None:
    write(tmp_path / "outside" / "o.txt", "to be")
    corpus = tmp_path / "corpus"
    write(corpus / "a.txt", "to be")
    (corpus / "linked.txt").symlink_to(tmp_path / "outside" / "o.txt")
    (corpus / "loop").symlink_to(corpus)  # would never end if followed
    assert [file.path.name for file in corpus_files(corpus)] == ["a.txt", "linked.txt"]


def test_a_missing_path_and_an_empty_folder_are_refused(tmp_path: Path) -> None:
    missing = problem_of(lambda: corpus_files(tmp_path / "nothing"))
    assert (missing.rule, missing.path) == ("corpus.missing", str(tmp_path / "nothing"))
    write(tmp_path / "notes.md", "to be")
    empty = problem_of(lambda: corpus_files(tmp_path))
    assert (empty.rule, empty.path) == ("corpus.no-texts", str(tmp_path))
    assert (
        str(empty) == f"the corpus folder {tmp_path} holds no .txt file, in it or in its subfolders"
    )


def test_a_device_is_no_corpus() -> None:
    error = problem_of(lambda: corpus_files(Path("/dev/zero")))
    assert (error.rule, error.detail) == ("corpus.unreadable", "not a regular file or a folder")


# Decoding -------------------------------------------------------------------------------------


def test_utf8_is_read_as_utf8_and_anything_else_as_latin1(tmp_path: Path) -> None:
    text = "Café, naïve — to be\n"
    assert text_of(write(tmp_path / "utf8" / "a.txt", text.encode("utf-8"))) == text
    bom = b"\xef\xbb\xbf" + text.encode("utf-8")
    assert text_of(write(tmp_path / "bom" / "a.txt", bom)) == text
    latin = "Café, naïve, to be\n".encode("latin-1")
    assert text_of(write(tmp_path / "latin" / "a.txt", latin)) == "Café, naïve, to be\n"
    # one invalid byte anywhere makes the whole file Latin-1, even past the first piece
    mixed = ("é " * PIECE_BYTES).encode() + b"\xff"
    assert listed(write(tmp_path / "mixed" / "a.txt", mixed))[0].encoding == "latin-1"
    assert text_of(tmp_path / "mixed" / "a.txt").endswith("Ã© ÿ")


def test_dev_zero_fails_at_once_and_a_fifo_does_not_block(tmp_path: Path) -> None:
    started = time.perf_counter()
    error = problem_of(lambda: list(pieces(CorpusFile(Path("/dev/zero"), 10))))
    assert (error.rule, error.detail) == (
        "corpus.unreadable",
        "not a regular file (a pipe or a device)",
    )
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    # a fifo named .txt inside a corpus folder is listed, and refused when read
    assert [file.path for file in corpus_files(tmp_path)] == [fifo]
    assert problem_of(lambda: count_words(corpus_files(tmp_path))).rule == "corpus.unreadable"
    assert time.perf_counter() - started < 5


def test_a_folder_or_a_dangling_link_cannot_be_read(tmp_path: Path) -> None:
    error = problem_of(lambda: list(pieces(CorpusFile(tmp_path, 0))))
    assert (error.rule, error.path) == ("corpus.unreadable", str(tmp_path))
    dangling = tmp_path / "gone.txt"
    dangling.symlink_to(tmp_path / "nowhere.txt")
    error = problem_of(lambda: list(pieces(CorpusFile(dangling, 0))))
    assert (error.rule, error.detail) == ("corpus.unreadable", "No such file or directory")
    assert str(error) == f"cannot read the corpus file {dangling}: No such file or directory"


# Pieces ---------------------------------------------------------------------------------------

TEXTS = st.text(alphabet=st.sampled_from("ab é€𝄞\n\r-'"), max_size=200)


@given(text=TEXTS, latin=st.booleans())
def test_pieces_are_the_whole_file_in_order_and_the_same_from_any_pieces_end(
    tmp_path_factory: pytest.TempPathFactory, text: str, latin: bool
) -> None:
    data = text.encode("latin-1", "replace") if latin else text.encode("utf-8")
    path = write(tmp_path_factory.mktemp("pieces") / "a.txt", data)
    file = CorpusFile(path, len(data), "latin-1" if latin else "utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corpus_module, "PIECE_BYTES", 8)
        found = list(pieces(file, errors="strict"))
        assert "".join(piece.text for piece in found) == data.decode(file.encoding)
        starts = [0, *(piece.end for piece in found)][: len(found)]
        assert [piece.start for piece in found] == starts
        assert all(0 < piece.end - piece.start < 16 for piece in found)
        for index, piece in enumerate(found):  # a read from a piece's end finds the rest
            assert list(pieces(file, piece.end, errors="strict")) == found[index + 1 :]


def test_a_line_longer_than_a_piece_is_cut_after_a_space_so_no_word_is_split(
    tmp_path: Path,
) -> None:
    letters = [chr(ord("a") + index) for index in range(26)]
    line = " ".join(a + b + c + d for a, b, c, d in itertools.product(letters, repeat=4))
    assert len(line) > 3 * PIECE_BYTES  # four pieces or more, and no line end
    path = write(tmp_path / "a.txt", line)
    (file,) = listed(path)
    found = list(pieces(file))
    assert len(found) >= 3
    assert all(piece.text.endswith(" ") for piece in found[:-1])
    assert count_words([file])[1] == {word: 1 for word in line_words(line)}


def test_a_file_without_any_space_or_line_end_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", "ж" * (3 * PIECE_BYTES))
    (file,) = listed(path)
    found = list(pieces(file, errors="strict"))
    assert len(found) >= 3
    assert all(len(piece.text.encode()) < 2 * PIECE_BYTES for piece in found)
    assert "".join(piece.text for piece in found) == "ж" * (3 * PIECE_BYTES)


def test_a_file_is_read_up_to_the_size_it_had_when_the_corpus_was_listed(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", "to be\n")
    (file,) = corpus_files(tmp_path)
    with path.open("ab") as grown:
        grown.write(b"or not to be\n")
    assert "".join(piece.text for piece in pieces(file)) == "to be\n"


# Words and sentences --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("To be, or not to be: that is the question.", "to be or not to be that is the question"),
        ("Don't O'er 'tis th' rock'n'roll", "don't o'er tis th rock'n roll"),
        ("abc''def 'a' x'", "abc def a x"),
        ("café naïve Ægypt", "café naïve ægypt"),
        ("2B or not 2B, R2D2, snake_case", "b or not b r d snake case"),
        ("\u212a is the Kelvin sign; İstanbul", "k is the kelvin sign i stanbul"),  # i, U+0307
        ("Отец, МАТЬ и ёлка", "отец мать и ёлка"),
        ("Straße ΛΌΓΟΣ", "strasse λόγοσ"),
        ("cafe\u0301 composes to café", "café composes to café"),
        ("Ⅻ and x² are letters here", "ⅻ and x² are letters here"),
        ("\u2019Tis curly quotes", "tis curly quotes"),
        ("-- [Exit.] --", "exit"),
        ("", ""),
    ],
)
def test_words_are_runs_of_letters_of_the_case_folded_nfc_line(line: str, words: str) -> None:
    assert line_words(line) == words.split()


@given(st.text(alphabet=st.sampled_from("aZé'\u2019 -\u212a\u0130\n1_жΣß\u0301"), max_size=40))
def test_words_match_the_documented_rule(line: str) -> None:
    folded = unicodedata.normalize("NFC", line.casefold())
    letter = r"[^\W\d_]"
    assert line_words(line) == re.findall(rf"{letter}+(?:'{letter}+)?", folded)
    assert rf"{letter}+(?:'{letter}+)?" == WORD_PATTERN


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_an_ascii_text_gives_the_same_words_and_line_ends_by_its_faster_pattern(text: str) -> None:
    assert WORDS.finder(text) == compiled(ASCII_WORD_PATTERN).findall
    for line_ends in (False, True):
        general = compiled(WORD_PATTERN + ("|" + LINE_END_PATTERN if line_ends else ""))
        assert WORDS.finder(text, line_ends)(text) == general.findall(text)
    assert WORDS.finder(text + "é") == compiled(WORD_PATTERN).findall


def test_the_tokenizer_file_normalizes_and_splits_every_assigned_character_as_the_trainer() -> None:
    tokenizers = require_tokenizers()
    vocabulary = Vocabulary.from_counts({"a": 1}, 1)
    tokenizer = tokenizers.Tokenizer.from_str(vocabulary.tokenizer_json())
    differ = []
    for code in range(0x110000):
        character = chr(code)
        if unicodedata.category(character) in ("Cn", "Cs"):  # unassigned in Python's tables
            continue
        text = f"a{character}b"
        found = tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(text))
        if [word for word, _ in found] != line_words(text):
            differ.append(hex(code))
    assert differ == []


def test_sentences_are_the_lines_with_a_word_in_file_order(tmp_path: Path) -> None:
    write(tmp_path / "b.txt", "ACT I.\r\n\r\n-- --\r\nTo be\rOr not\n\nTo BE\n")
    write(tmp_path / "a.txt", "that is\nthe question")
    assert list(sentences(listed(tmp_path))) == [
        ["that", "is"],
        ["the", "question"],
        ["act", "i"],
        ["to", "be"],
        ["or", "not"],
        ["to", "be"],
    ]
    assert list(sentences([])) == []


def test_counting_memory_follows_the_words_not_the_corpus(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "to be or not\n" * 50_000)
    _, counts = count_words(corpus_files(tmp_path))
    assert counts == {"to": 50_000, "be": 50_000, "or": 50_000, "not": 50_000}
    assert json.dumps(counts)  # plain words and counts, nothing per line


# Atomic writes --------------------------------------------------------------------------------


def test_a_file_is_replaced_whole_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer.json", "old")
    write_atomically(path, b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["tokenizer.json"]


def test_a_failed_write_leaves_the_earlier_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer.json", "old")
    os.chmod(tmp_path, 0o500)
    try:
        if os.access(tmp_path, os.W_OK):  # root writes anyway: make the rename fail instead
            os.chmod(tmp_path, 0o700)
            path.unlink()
            path.mkdir()
            (path / "keep").write_text("old")
        error = problem_of(lambda: write_atomically(path, b"new"))
    finally:
        os.chmod(tmp_path, 0o700)
    assert (error.rule, error.path) == ("corpus.unwritable", str(path))
    assert str(error).endswith("; any earlier file there is unchanged")
    assert sorted(os.listdir(tmp_path)) == ["tokenizer.json"]
