"""word2vec files are read and written byte for byte as gensim writes and reads them, both ways,
text and binary, in any script (a Russian ``.vec`` of our own included); the projector's TSV
files hold every word and vector; a damaged file is a ``FormatError`` naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.errors import FileAccessError, FormatError
from llm_from_scratch.vectors import WordVectors

from checks import raises_rule
from conftest import import_optional
from vectors_support import GENSIM_FILES, file_with, gensim_data, gensim_pair, small_vectors

pytestmark = pytest.mark.filterwarnings("ignore:attribute count not present")

RUSSIAN = "и в не что он на я с со как а то все она ёж".split()  # noqa: RUF001, SIM905


def keyed_vectors() -> type:
    return import_optional("gensim.models.keyedvectors", "gensim").KeyedVectors  # type: ignore[no-any-return]


def russian_vectors() -> WordVectors:
    rng = np.random.default_rng(7)
    values = rng.standard_normal((len(RUSSIAN), 5)).astype(np.float32)
    values[0, 0], values[1, 1] = 1e-20, 3.0e38  # numbers NumPy prints in scientific notation
    return WordVectors(RUSSIAN, values)


@pytest.mark.parametrize(("name", "binary"), [*GENSIM_FILES, ("crime-and-punishment.vec", False)])
def test_gensims_files_read_to_gensims_words_and_vectors(name: str, binary: bool) -> None:
    theirs, ours = gensim_pair(name, binary)
    assert ours.index_to_key == theirs.index_to_key
    assert np.array_equal(ours.vectors, theirs.vectors)


@pytest.mark.parametrize(("name", "binary"), [*GENSIM_FILES, ("crime-and-punishment.vec", False)])
@pytest.mark.parametrize("written_binary", [False, True])
def test_what_we_write_is_byte_for_byte_what_gensim_writes(
    tmp_path: Path, name: str, binary: bool, written_binary: bool
) -> None:
    theirs, ours = gensim_pair(name, binary)
    theirs.save_word2vec_format(str(tmp_path / "theirs"), binary=written_binary)
    ours.save_word2vec_format(tmp_path / "ours", binary=written_binary)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes()


@pytest.mark.parametrize("binary", [False, True])
def test_a_russian_vec_we_write_reads_in_gensim_and_back(tmp_path: Path, binary: bool) -> None:
    ours = russian_vectors()
    path = tmp_path / ("russian.bin" if binary else "russian.vec")
    ours.save_word2vec_format(path, binary=binary)
    theirs = keyed_vectors().load_word2vec_format(str(path), binary=binary)
    assert theirs.index_to_key == RUSSIAN
    assert np.array_equal(theirs.vectors, ours.vectors)
    theirs.save_word2vec_format(str(tmp_path / "again"), binary=binary)
    assert (tmp_path / "again").read_bytes() == path.read_bytes()
    again = WordVectors.load_word2vec_format(tmp_path / "again", binary=binary)
    assert again.index_to_key == RUSSIAN and np.array_equal(again.vectors, ours.vectors)


@pytest.mark.parametrize(("name", "binary"), GENSIM_FILES)
@pytest.mark.parametrize("limit", [1, 7, 10**9])
def test_limit_reads_the_first_vectors_as_gensim(name: str, binary: bool, limit: int) -> None:
    path = gensim_data(name)
    theirs = keyed_vectors().load_word2vec_format(str(path), binary=binary, limit=limit)
    ours = WordVectors.load_word2vec_format(path, binary=binary, limit=limit)
    assert ours.index_to_key == theirs.index_to_key
    assert np.array_equal(ours.vectors, theirs.vectors)


def test_a_word_given_twice_is_kept_at_its_first_place_as_gensim_keeps_it() -> None:
    path = file_with(b"3 2\nking 1 2\nqueen 3 4\nking 5 6\n")
    theirs = keyed_vectors().load_word2vec_format(str(path))
    ours = WordVectors.load_word2vec_format(path)
    assert ours.index_to_key == [word for word in theirs.index_to_key if word] == ["king", "queen"]
    assert np.array_equal(ours.vectors, theirs.vectors[:2])


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (b"", "its first line must be the word count and the width, got b''"),
        (b"2\nking 1\n", "its first line must be the word count and the width, got b'2\\n'"),
        (b"0 2\n", "its header counts 0 words of width 2, not at least 1 of each"),
        (b"2 2\nking 1 2\nqueen 3 4 5\n", "line 3 holds 3 numbers, not 2"),
        (b"2 2\nking 1 2\nqueen x 4\n", "line 3 holds something other than numbers after its word"),
        (b"2 1\nking 1\n", "it ends after 1 of the 2 vectors its header counts"),
        (b"1 2\n\xff 1 2\n", "a word is not UTF-8 (invalid start byte at byte 0)"),
        (b"1 2\nking nan 2\n", "word vectors must be finite numbers, got a NaN or an infinity"),
    ],
)
def test_a_damaged_text_file_is_a_format_error_saying_what(text: bytes, detail: str) -> None:
    path = file_with(text)
    with raises_rule(FormatError, "vectors.file") as caught:
        WordVectors.load_word2vec_format(path)
    assert caught.value.detail == detail and caught.value.kind == "text"


def test_a_binary_file_cut_short_or_overcounted_is_a_format_error() -> None:
    whole = b"2 2\nking " + np.ones(2, "<f4").tobytes() + b"queen " + np.ones(2, "<f4").tobytes()
    with raises_rule(FormatError, "vectors.file") as caught:
        WordVectors.load_word2vec_format(file_with(whole[:-1]), binary=True)
    assert caught.value.detail == "it ends after 1 of the 2 vectors its header counts"
    with raises_rule(FormatError, "vectors.file") as caught:
        WordVectors.load_word2vec_format(file_with(b"999999999 300\n"), binary=True)
    assert "more than its 14 bytes hold" in caught.value.detail


def test_a_missing_file_or_folder_is_a_file_access_error(tmp_path: Path) -> None:
    with raises_rule(FileAccessError, "vectors.read"):
        WordVectors.load_word2vec_format(tmp_path / "none.vec")
    with raises_rule(FileAccessError, "vectors.write"):
        small_vectors().save_word2vec_format(tmp_path / "none" / "v.vec")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_earlier_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v.vec"
    path.write_bytes(b"earlier")

    def full_disk(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("llm_from_scratch.files.os.fsync", full_disk)
    with raises_rule(FileAccessError, "vectors.write") as caught:
        small_vectors().save_word2vec_format(path)
    assert caught.value.detail == "No space left on device"
    assert path.read_bytes() == b"earlier" and [p.name for p in tmp_path.iterdir()] == ["v.vec"]


def test_the_projector_files_hold_every_word_and_vector(tmp_path: Path) -> None:
    wv = russian_vectors()
    vectors, metadata = wv.save_projector(tmp_path / "projector")
    assert (vectors.name, metadata.name) == ("vectors.tsv", "metadata.tsv")
    assert metadata.read_text(encoding="utf-8").splitlines() == RUSSIAN
    rows = [line.split("\t") for line in vectors.read_text(encoding="utf-8").splitlines()]
    assert np.array_equal(np.array(rows, dtype=np.float32), wv.vectors)
