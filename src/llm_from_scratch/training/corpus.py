"""A training corpus read as a stream: its files, their pieces of whole lines (a longer line cut),
and their words (``docs/training.md``, "Reading the corpus").
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from llm_from_scratch.errors import CorpusError
from llm_from_scratch.files import open_file, replace_file
from llm_from_scratch.training.counting import WordCounter
from llm_from_scratch.training.words import (
    LINE_END_PATTERN,
    WORD_PATTERN,
    WORDS,
    Finder,
    Reading,
    compiled,
    normalized,
)

PIECE_BYTES: Final = 1 << 18
"""The bytes read at a time; a piece of text holds at most twice as many."""
DIGEST_BYTES: Final = 1 << 20
"""The bytes :func:`file_digest` reads at a time."""

_UTF8_BOM: Final = b"\xef\xbb\xbf"
_SPACES: Final = (b" ", b"\t", b"\f", b"\v")


@dataclass(frozen=True)
class CorpusFile:
    """One file of a corpus: its path, its size when it was listed, its text encoding
    (``utf-8`` until :func:`count_words` finds it is not) and the SHA-256 of its ``size``
    first bytes (:func:`file_digest`; empty until :func:`count_words` reads the file)."""

    path: Path
    size: int
    encoding: str = "utf-8"
    digest: str = ""


@dataclass(frozen=True)
class Piece:
    """Whole lines of one file: their text, and the file offsets where they start and end (a
    later read can start at ``end``)."""

    text: str
    start: int
    end: int


def corpus_files(path: Path) -> list[CorpusFile]:
    """The text files of a corpus: ``path`` for a file, a folder's ``.txt`` files, sorted.

    Raises:
        CorpusError: ``corpus.missing`` (nothing at ``path``), ``corpus.no-texts`` (a folder
            without ``.txt`` files), ``corpus.unreadable`` (neither a file nor a folder, or one
            that cannot be listed or looked at).
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise CorpusError("corpus.missing", path=str(path)) from None
    except OSError as error:
        raise _unreadable(path, error) from error
    if stat.S_ISREG(mode):
        return [_listed(path)]
    if not stat.S_ISDIR(mode):
        raise CorpusError(
            "corpus.unreadable", path=str(path), detail="not a regular file or a folder"
        )
    found = _texts_below(path)
    if not found:
        raise CorpusError("corpus.no-texts", path=str(path))
    return [_listed(file) for file in found]


def _listed(path: Path) -> CorpusFile:
    try:
        return CorpusFile(path, path.stat().st_size)
    except OSError as error:
        raise _unreadable(path, error) from error


def _texts_below(folder: Path) -> list[Path]:
    found: list[tuple[tuple[str, ...], Path]] = []

    def refuse(error: OSError) -> None:
        raise _unreadable(error.filename or folder, error) from error

    for root, folders, names in os.walk(folder, onerror=refuse):
        folders[:] = [name for name in folders if not name.startswith(".")]
        base = Path(root)
        relative = base.relative_to(folder).parts
        for name in names:
            if not name.startswith(".") and name.lower().endswith(".txt"):
                found.append(((*relative, name), base / name))
    return [path for _, path in sorted(found)]


def pieces(file: CorpusFile, start: int = 0, errors: str = "replace") -> Iterator[Piece]:
    """The pieces of ``file`` from byte offset ``start`` (0, or the ``end`` of a piece), decoded
    with ``errors`` (``strict``: a ``UnicodeDecodeError`` for bytes not of the encoding).

    Raises:
        CorpusError: ``corpus.unreadable``, with the system's reason.
    """
    try:
        with open_file(str(file.path), regular=True) as stream:
            stream.seek(start)
            yield from _pieces_of(stream, file, start, errors)
    except OSError as error:
        raise _unreadable(file.path, error) from error


def _pieces_of(stream: object, file: CorpusFile, start: int, errors: str) -> Iterator[Piece]:
    # Reads end at multiples of PIECE_BYTES in the file, wherever the first one starts, so a
    # read from a piece's end finds the pieces a read from the start finds after it.
    read = stream.read  # type: ignore[attr-defined]
    pending, offset, position = b"", start, start
    while True:
        wanted = min(PIECE_BYTES - position % PIECE_BYTES, file.size - position)
        chunk = read(wanted) if wanted > 0 else b""
        position += len(chunk)
        data = pending + chunk
        cut = len(data) if not chunk else _cut(data, file.encoding)
        if cut:
            text = data[:cut]
            if offset == 0 and file.encoding == "utf-8" and text.startswith(_UTF8_BOM):
                text = text[len(_UTF8_BOM) :]
            yield Piece(text.decode(file.encoding, errors), offset, offset + cut)
        pending, offset = data[cut:], offset + cut
        if not chunk:
            return


def _cut(data: bytes, encoding: str) -> int:
    """Where a piece of ``data`` ends: after its last line end; when that would leave a
    line's part of :data:`PIECE_BYTES` or more unread, after the last space, or else before
    the last character (whole or not); 0 when there is no line end yet (read on)."""
    end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
    if len(data) - end < PIECE_BYTES:
        return end
    space = max(data.rfind(mark, end) for mark in _SPACES) + 1
    if len(data) - space < PIECE_BYTES:
        return space
    end = len(data) - 1
    if encoding == "utf-8":
        while end > 0 and data[end] & 0xC0 == 0x80:  # a continuation byte
            end -= 1
    return end if end > 0 else len(data)


@dataclass(frozen=True, eq=False)
class Counted:
    """A corpus counted: its files (their encodings found), how often each word occurs, and
    every word read (those too long to count or forgotten under ``max_vocab_size`` too)."""

    files: list[CorpusFile]
    counts: Counter[str]
    words: int


def count_words(files: Sequence[CorpusFile]) -> tuple[list[CorpusFile], Counter[str]]:
    """One pass over the corpus: the files with their encodings and :func:`file_digest`, and
    how often each word of at most ``LONGEST_WORD`` letters occurs.

    Raises:
        CorpusError: ``corpus.unreadable``, as :func:`pieces`.
    """
    counted = count_corpus(files)
    return counted.files, counted.counts


def count_corpus(
    files: Sequence[CorpusFile], reading: Reading = WORDS, max_vocab_size: int | None = None
) -> Counted:
    """:func:`count_words` for a corpus read as ``reading`` says, counted under gensim's
    ``max_vocab_size`` (:mod:`~llm_from_scratch.training.counting`), with every word read.

    Raises:
        CorpusError: ``corpus.unreadable``, as :func:`pieces`.
    """
    counted: list[CorpusFile] = []
    total = WordCounter(max_vocab_size)
    for file in files:
        if max_vocab_size is not None:  # counted straight into the capped counts
            file = file if _decodes(file) else replace(file, encoding="latin-1")
            _file_counts(file, reading, total)
        else:
            try:
                counts = _file_counts(file, reading, WordCounter())
            except UnicodeDecodeError:
                file = replace(file, encoding="latin-1")
                counts = _file_counts(file, reading, WordCounter())
            if total.counts:
                total.counts.update(counts.counts)
            else:  # the first file's counts are the total: no second dictionary of its words
                total.counts = counts.counts
            total.words += counts.words
        counted.append(replace(file, digest=file_digest(file)))
    return Counted(counted, total.counts, total.words)


def file_digest(file: CorpusFile) -> str:
    """The SHA-256 (hexadecimal) of the ``file.size`` first bytes of the file: what a run
    reads of it, so that a checkpoint knows its corpus by content (about 1.2 s a GB,
    ``docs/training.md``).

    Raises:
        CorpusError: ``corpus.unreadable``, as :func:`pieces` (a file now shorter, too).
    """
    digest, left = hashlib.sha256(), file.size
    try:
        with open_file(str(file.path), regular=True) as stream:
            while left > 0:
                chunk = stream.read(min(DIGEST_BYTES, left))
                if not chunk:
                    raise EOFError(f"the file ends {left} bytes before its {file.size}")
                digest.update(chunk)
                left -= len(chunk)
    except OSError as error:
        raise _unreadable(file.path, error) from error
    except EOFError as error:
        raise CorpusError("corpus.unreadable", path=str(file.path), detail=str(error)) from None
    return digest.hexdigest()


def _decodes(file: CorpusFile) -> bool:
    """Whether ``file`` is text of its encoding."""
    try:
        for _ in pieces(file, errors="strict"):
            pass
    except UnicodeDecodeError:
        return False
    return True


def _file_counts(file: CorpusFile, reading: Reading, counter: WordCounter) -> WordCounter:
    longest = reading.longest
    for piece in pieces(file, errors="strict"):
        text = reading.normalized(piece.text)
        find = reading.finder(text)
        found = find(text)
        read = len(found)
        if longest is not None and found and max(map(len, found)) > longest:
            found = [word for word in found if len(word) <= longest]

        def lines(text: str = text, find: Finder = find) -> Iterator[tuple[list[str], int]]:
            for line in compiled(LINE_END_PATTERN).split(text):
                words = find(line)
                if words:
                    kept = [w for w in words if longest is None or len(w) <= longest]
                    yield kept, len(words)

        counter.add_text(found, read, lines)
    return counter


def sentences(files: Sequence[CorpusFile]) -> Iterator[list[str]]:
    """The words of each line of the files that has one, in order (raises as :func:`pieces`)."""
    find = compiled(WORD_PATTERN).findall
    for file in files:
        for piece in pieces(file):
            for line in compiled(LINE_END_PATTERN).split(normalized(piece.text)):
                found = find(line)
                if found:
                    yield found


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with :func:`llm_from_scratch.files.replace_file` (a reader sees
    the old file or the whole new one).

    Raises:
        CorpusError: ``corpus.unwritable``, with the system's reason.
    """
    try:
        replace_file(str(path), [memoryview(data)])
    except OSError as error:
        detail = os_reason(error)
        raise CorpusError("corpus.unwritable", path=str(path), detail=detail) from error


def os_reason(error: OSError) -> str:
    """The system's reason for an ``OSError`` on one line (``Permission denied``)."""
    reason = error.strerror or str(error) or type(error).__name__
    return " ".join(reason.split())


def _unreadable(path: object, error: OSError) -> CorpusError:
    return CorpusError("corpus.unreadable", path=str(path), detail=os_reason(error))
