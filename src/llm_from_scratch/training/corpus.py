"""A training corpus read as a stream: its files, their pieces of text, and their words.

A corpus is one text file, or a folder whose ``.txt`` files (any case of the suffix) are found
recursively: subfolders are searched, hidden files and folders (names starting with ``.``) are
left out, symbolic links to folders are not followed, and the files come sorted by their path
relative to the folder (component by component), so the order never depends on the file system.
A file given by itself is read whatever its name.

Nothing the size of the corpus is ever held in memory. Each file is read :data:`PIECE_BYTES`
bytes at a time into *pieces* of text of less than twice that, which end at a line end, so a
piece holds whole lines; a line longer than that (a file without line breaks, say) is cut after
a space, or between two characters when it has no space, and each part of it is a line of its
own. A file
is read up to the size it had when the corpus was listed (a device, a pipe or a folder is refused
unread, so neither ``/dev/zero`` nor a file that keeps growing is read forever). A file is
decoded as UTF-8 (a leading byte-order mark dropped), or as Latin-1 when it is not valid UTF-8
(:func:`count_words` decides, on its pass over the file). A *sentence* is one line with a word
(:mod:`~llm_from_scratch.training.words` says what a word and a line are).
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Final

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.files import open_file, replace_file
from llm_from_scratch.training.words import LONGEST_WORD, WORD_PATTERN, normalized

__all__ = [
    "PIECE_BYTES",
    "CorpusError",
    "CorpusFile",
    "Piece",
    "corpus_files",
    "count_words",
    "os_reason",
    "pieces",
    "sentences",
    "write_atomically",
]

PIECE_BYTES: Final = 1 << 18
"""The bytes read at a time; a piece of text holds at most twice as many."""

_WORDS: Final = re.compile(WORD_PATTERN)
_LINE_END: Final = re.compile(r"\r\n?|\n")
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_SPACES: Final = (b" ", b"\t", b"\f", b"\v")


class CorpusError(StructuredError, ValueError):
    """A corpus, or a minimum count, that cannot make a vocabulary; or a file that cannot be
    written. ``problem`` says which.

    ``missing``: nothing at ``path``. ``no-texts``: a folder without ``.txt`` files.
    ``unreadable``: a file that cannot be opened or read, or is no regular file (``detail`` says
    why). ``no-words``: no line has a word. ``empty-vocabulary``: no word occurs ``min_count``
    times (the most frequent occurs ``highest_count`` times). ``min-count``: a minimum count that
    is not an integer of at least 1 (``detail`` is its ``repr``). ``unwritable``: a tokenizer or
    corpus text that cannot be written at ``path``; any earlier file there is unchanged.
    """

    template_key = "problem"
    template: ClassVar[dict[str, str]] = {
        "missing": "no corpus at {path}: give a text file or a folder of .txt files",
        "no-texts": "the corpus folder {path} holds no .txt file, in it or in its subfolders",
        "unreadable": "cannot read the corpus file {path}: {detail}",
        "no-words": "the corpus has no words: no line of it holds a letter",
        "empty-vocabulary": (
            "no word of the corpus occurs {min_count} times or more (the most frequent occurs "
            "{highest_count} times), so the vocabulary is empty: lower the minimum count"
        ),
        "min-count": "the minimum count must be an integer of at least 1, got {detail}",
        "unwritable": "cannot write {path}: {detail}; any earlier file there is unchanged",
    }
    problem: str
    path: str = ""
    detail: str = ""
    min_count: int = 0
    highest_count: int = 0


@dataclass(frozen=True)
class CorpusFile:
    """One file of a corpus: its path, its size when it was listed, and its text encoding
    (``utf-8`` until :func:`count_words` finds it is not)."""

    path: Path
    size: int
    encoding: str = "utf-8"


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
        CorpusError: ``missing`` (nothing at ``path``), ``no-texts`` (a folder without ``.txt``
            files), ``unreadable`` (neither a file nor a folder, or a folder that cannot be
            listed, or a file that cannot be looked at).
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise CorpusError("missing", str(path)) from None
    except OSError as error:
        raise CorpusError("unreadable", str(path), os_reason(error)) from error
    if stat.S_ISREG(mode):
        return [_listed(path)]
    if not stat.S_ISDIR(mode):
        raise CorpusError("unreadable", str(path), "not a regular file or a folder")
    found = _texts_below(path)
    if not found:
        raise CorpusError("no-texts", str(path))
    return [_listed(file) for file in found]


def _listed(path: Path) -> CorpusFile:
    try:
        return CorpusFile(path, path.stat().st_size)
    except OSError as error:
        raise CorpusError("unreadable", str(path), os_reason(error)) from error


def _texts_below(folder: Path) -> list[Path]:
    found: list[tuple[tuple[str, ...], Path]] = []

    def refuse(error: OSError) -> None:
        raise CorpusError("unreadable", str(error.filename or folder), os_reason(error)) from error

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
    in its encoding with ``errors`` (``strict``: a ``UnicodeDecodeError`` for bytes that are
    not the encoding's).

    Raises:
        CorpusError: ``unreadable``, with the system's reason.
    """
    try:
        with open_file(str(file.path), regular=True) as stream:
            stream.seek(start)
            yield from _pieces_of(stream, file, start, errors)
    except OSError as error:
        raise CorpusError("unreadable", str(file.path), os_reason(error)) from error


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


def count_words(files: Sequence[CorpusFile]) -> tuple[list[CorpusFile], Counter[str]]:
    """One pass over the corpus: the files with the encoding each is read in, and how often
    each word of at most :data:`~llm_from_scratch.training.words.LONGEST_WORD` letters occurs.
    Memory follows the number of different words, not the corpus length.

    Raises:
        CorpusError: ``unreadable``, as :func:`pieces`.
    """
    counted: list[CorpusFile] = []
    total: Counter[str] = Counter()
    for file in files:
        try:
            counts = _file_counts(file)
        except UnicodeDecodeError:
            file = replace(file, encoding="latin-1")
            counts = _file_counts(file)
        counted.append(file)
        total.update(counts)
    return counted, total


def _file_counts(file: CorpusFile) -> Counter[str]:
    counts: Counter[str] = Counter()
    find = _WORDS.findall
    for piece in pieces(file, errors="strict"):
        found = find(normalized(piece.text))
        if found and max(map(len, found)) > LONGEST_WORD:
            found = [word for word in found if len(word) <= LONGEST_WORD]
        counts.update(found)
    return counts


def sentences(files: Sequence[CorpusFile]) -> Iterator[list[str]]:
    """The sentences of the files, in order: the words of each line that has one.

    Raises:
        CorpusError: as :func:`pieces`.
    """
    find = _WORDS.findall
    for file in files:
        for piece in pieces(file):
            for line in _LINE_END.split(normalized(piece.text)):
                found = find(line)
                if found:
                    yield found


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with :func:`llm_from_scratch.files.replace_file`: a reader
    sees the old file or the whole new one, never a part.

    Raises:
        CorpusError: ``unwritable``, with the system's reason.
    """
    try:
        replace_file(str(path), [memoryview(data)])
    except OSError as error:
        raise CorpusError("unwritable", str(path), os_reason(error)) from error


def os_reason(error: OSError) -> str:
    """The system's reason for an ``OSError`` on one line (``Permission denied``)."""
    reason = error.strerror or str(error) or type(error).__name__
    return " ".join(reason.split())
