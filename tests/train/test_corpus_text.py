"""Reading a corpus: which files, how they decode, how large they may be, and their words.

The word rule is checked against a plain restatement (lower-case the line, then take the
matches of ``[a-z]+('[a-z]+)?``) on any text Hypothesis makes, and on the edge cases by name.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.demos.ch18_token_embeddings.corpus import (
    MAX_FILE_BYTES,
    WORD_PATTERN,
    CorpusError,
    corpus_files,
    line_words,
    read_text,
    sentences,
)
from llm_from_scratch.demos.ch18_token_embeddings.corpus_text import write_atomically


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def problem_of(call: object) -> CorpusError:
    assert callable(call)
    with pytest.raises(CorpusError) as caught:
        call()
    return caught.value


# Which files ----------------------------------------------------------------------------------


def test_a_folder_gives_its_txt_files_recursively_sorted_without_hidden_ones(
    tmp_path: Path,
) -> None:
    for name in ["b.txt", "a.txt", "sub/c.txt", "sub/deeper/a.txt", "A.TXT", "z/x.txt"]:
        write(tmp_path / name, "to be")
    for name in ["notes.md", ".hidden.txt", ".hidden/d.txt", "sub/.e.txt", "sub/readme"]:
        write(tmp_path / name, "not read")
    (tmp_path / "folder.txt").mkdir()  # a folder named like a text is no file
    found = [path.relative_to(tmp_path).as_posix() for path in corpus_files(tmp_path)]
    assert found == ["A.TXT", "a.txt", "b.txt", "sub/c.txt", "sub/deeper/a.txt", "z/x.txt"]


def test_a_file_is_its_own_corpus_whatever_its_name(tmp_path: Path) -> None:
    path = write(tmp_path / "plays.text", "to be")
    assert corpus_files(path) == [path]


def test_symbolic_links_to_files_are_read_but_links_to_folders_are_not_followed(
    tmp_path: Path,
) -> None:
    write(tmp_path / "outside" / "o.txt", "to be")
    corpus = tmp_path / "corpus"
    write(corpus / "a.txt", "to be")
    (corpus / "linked.txt").symlink_to(tmp_path / "outside" / "o.txt")
    (corpus / "loop").symlink_to(corpus)  # would never end if followed
    assert [path.name for path in corpus_files(corpus)] == ["a.txt", "linked.txt"]


def test_a_missing_path_and_an_empty_folder_are_refused(tmp_path: Path) -> None:
    missing = problem_of(lambda: corpus_files(tmp_path / "nothing"))
    assert (missing.problem, missing.path) == ("missing", str(tmp_path / "nothing"))
    write(tmp_path / "notes.md", "to be")
    empty = problem_of(lambda: corpus_files(tmp_path))
    assert (empty.problem, empty.path) == ("no-texts", str(tmp_path))
    assert (
        str(empty) == f"the corpus folder {tmp_path} holds no .txt file, in it or in its subfolders"
    )


def test_a_device_is_no_corpus() -> None:
    error = problem_of(lambda: corpus_files(Path("/dev/zero")))
    assert (error.problem, error.detail) == ("unreadable", "not a regular file or a folder")


# Reading --------------------------------------------------------------------------------------


def test_utf8_is_read_as_utf8_and_anything_else_as_latin1(tmp_path: Path) -> None:
    text = "Café, naïve — to be\n"
    assert read_text(write(tmp_path / "utf8.txt", text.encode("utf-8"))) == text
    assert read_text(write(tmp_path / "bom.txt", b"\xef\xbb\xbf" + text.encode("utf-8"))) == text
    latin = "Café, naïve, to be\n".encode("latin-1")
    assert read_text(write(tmp_path / "latin.txt", latin)) == "Café, naïve, to be\n"
    # one invalid byte anywhere makes the whole file Latin-1
    mixed = "é".encode() + b"\xff"
    assert read_text(write(tmp_path / "mixed.txt", mixed)) == "Ã©ÿ"


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "big.txt", "x" * 11)
    assert read_text(path, limit=11) == "x" * 11
    error = problem_of(lambda: read_text(path, limit=10))
    assert (error.problem, error.path, error.limit) == ("too-large", str(path), 10)
    assert str(error) == f"the corpus file {path} is larger than the limit of 10 bytes"
    assert MAX_FILE_BYTES == 2**30


def test_dev_zero_fails_at_once_and_a_fifo_does_not_block(tmp_path: Path) -> None:
    started = time.perf_counter()
    error = problem_of(lambda: read_text(Path("/dev/zero")))
    assert (error.problem, error.detail) == (
        "unreadable",
        "not a regular file (a pipe or a device)",
    )
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    assert problem_of(lambda: read_text(fifo)).detail == "not a regular file (a pipe or a device)"
    # a fifo named .txt inside a corpus folder is listed, and refused when read
    assert corpus_files(tmp_path) == [fifo]
    assert problem_of(lambda: list(sentences([fifo]))).problem == "unreadable"
    assert time.perf_counter() - started < 5


def test_a_folder_or_a_file_without_permission_cannot_be_read(tmp_path: Path) -> None:
    error = problem_of(lambda: read_text(tmp_path))
    assert (error.problem, error.path) == ("unreadable", str(tmp_path))
    dangling = tmp_path / "gone.txt"
    dangling.symlink_to(tmp_path / "nowhere.txt")
    error = problem_of(lambda: read_text(dangling))
    assert (error.problem, error.detail) == ("unreadable", "No such file or directory")
    assert str(error) == f"cannot read the corpus file {dangling}: No such file or directory"


# Words and sentences --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("To be, or not to be: that is the question.", "to be or not to be that is the question"),
        ("Don't O'er 'tis th' rock'n'roll", "don't o'er tis th rock'n roll"),
        ("abc''def 'a' x'", "abc def a x"),
        ("café naïve Ægypt", "caf na ve gypt"),  # é, ï and Æ are not [a-z]: they split words
        ("2B or not 2B, R2D2", "b or not b r d"),
        ("\u212a is the Kelvin sign; İstanbul", "k is the kelvin sign i stanbul"),
        ("\u2019Tis curly quotes", "tis curly quotes"),
        ("-- [Exit.] --", "exit"),
        ("", ""),
    ],
)
def test_words_are_the_pattern_in_the_lower_cased_line(line: str, words: str) -> None:
    assert line_words(line) == words.split()


@given(st.text(alphabet=st.sampled_from("aZé'\u2019 -\u212a\u0130\n1"), max_size=40) | st.text())
def test_words_match_the_documented_rule(line: str) -> None:
    assert line_words(line) == re.findall(r"[a-z]+(?:'[a-z]+)?", line.lower())
    assert WORD_PATTERN == r"[a-z]+(?:'[a-z]+)?"


def test_sentences_are_the_lines_with_a_word_in_file_order(tmp_path: Path) -> None:
    first = write(tmp_path / "b.txt", "ACT I.\r\n\r\n-- --\r\nTo be\rOr not\n\nTo BE\n")
    second = write(tmp_path / "a.txt", "that is\nthe question")
    assert list(sentences([first, second])) == [
        ["act", "i"],
        ["to", "be"],
        ["or", "not"],
        ["to", "be"],
        ["that", "is"],
        ["the", "question"],
    ]
    assert list(sentences([])) == []


def test_a_file_is_read_only_when_its_sentences_are_reached(tmp_path: Path) -> None:
    good = write(tmp_path / "a.txt", "to be\n")
    stream = sentences([good, tmp_path / "missing.txt"])
    assert next(stream) == ["to", "be"]
    assert problem_of(lambda: next(stream)).problem == "unreadable"


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
    assert (error.problem, error.path) == ("unwritable", str(path))
    assert str(error).endswith("; any earlier file there is unchanged")
    assert sorted(os.listdir(tmp_path)) == ["tokenizer.json"]
