"""A training corpus as text: its files, their lines, and the words of each line.

A corpus is one text file, or a folder whose ``.txt`` files (any case of the suffix) are found
recursively: subfolders are searched, hidden files and folders (names starting with ``.``) are
left out, symbolic links to folders are not followed, and the files come sorted by their path
relative to the folder (component by component), so the order never depends on the file system.
A file given by itself is read whatever its name.

Each file is read whole, at most :data:`MAX_FILE_BYTES` bytes (a larger one is refused before
it is read; a device, a pipe or a folder is refused unread), and decoded as UTF-8 (a leading
byte-order mark dropped), or as Latin-1 when it is not valid UTF-8. A *sentence* is one line of
a file (lines end at ``\\n``, ``\\r\\n`` or ``\\r``), as gensim's word2vec is given them in the
reference measurement. Its words are the matches of :data:`WORD_PATTERN` in the lower-cased line:
runs of ASCII letters with at most one inner apostrophe. A line without a word is no sentence.

    >>> line_words("Th' ARE! don't  rock'n'roll, café 2B")
    ['th', 'are', "don't", "rock'n", 'roll', 'caf', 'b']
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar, Final

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.files import is_too_large, open_file, read_stream, replace_file

__all__ = [
    "MAX_FILE_BYTES",
    "WORD_PATTERN",
    "CorpusError",
    "corpus_files",
    "line_words",
    "read_text",
    "sentences",
    "write_atomically",
]

#: A word: ASCII letters, then at most one apostrophe followed by letters, in lower-cased text
#: (``don't`` and ``o'er`` are one word; ``'tis`` is ``tis``; ``é`` and digits split words).
WORD_PATTERN: Final[str] = r"[a-z]+(?:'[a-z]+)?"
#: The largest corpus file read: 1 GiB. A larger file is refused with ``problem="too-large"``.
MAX_FILE_BYTES: Final = 1 << 30

_WORDS: Final = re.compile(WORD_PATTERN)
_UTF8_BOM: Final = b"\xef\xbb\xbf"


class CorpusError(StructuredError, ValueError):
    """A corpus, or a minimum count, that cannot make a vocabulary; or a file that cannot be
    written. ``problem`` says which.

    ``missing``: nothing at ``path``. ``no-texts``: a folder without ``.txt`` files.
    ``unreadable``: a file that cannot be opened or read, or is no regular file (``detail`` says
    why). ``too-large``: a file over ``limit`` bytes. ``no-words``: no line has a word.
    ``empty-vocabulary``: no word occurs ``min_count`` times (the most frequent occurs
    ``highest_count`` times). ``min-count``: a minimum count that is not an integer of at least 1
    (``detail`` is its ``repr``). ``unwritable``: a tokenizer or corpus text that cannot be
    written at ``path``; any earlier file there is unchanged.
    """

    template_key = "problem"
    template: ClassVar[dict[str, str]] = {
        "missing": "no corpus at {path}: give a text file or a folder of .txt files",
        "no-texts": "the corpus folder {path} holds no .txt file, in it or in its subfolders",
        "unreadable": "cannot read the corpus file {path}: {detail}",
        "too-large": "the corpus file {path} is larger than the limit of {limit} bytes",
        "no-words": (
            "the corpus has no words: nothing in its lower-cased text matches [a-z]+(?:'[a-z]+)?"
        ),
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
    limit: int = 0
    min_count: int = 0
    highest_count: int = 0


def corpus_files(path: Path) -> list[Path]:
    """The text files of a corpus: ``[path]`` for a file, a folder's ``.txt`` files, sorted.

    Raises:
        CorpusError: ``missing`` (nothing at ``path``), ``no-texts`` (a folder without ``.txt``
            files), ``unreadable`` (neither a file nor a folder, or a folder that cannot be
            listed).
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise CorpusError("missing", str(path)) from None
    except OSError as error:
        raise CorpusError("unreadable", str(path), os_reason(error)) from error
    if stat.S_ISREG(mode):
        return [path]
    if not stat.S_ISDIR(mode):
        raise CorpusError("unreadable", str(path), "not a regular file or a folder")
    found = _texts_below(path)
    if not found:
        raise CorpusError("no-texts", str(path))
    return found


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


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A corpus file's text: UTF-8 (a leading byte-order mark dropped), else Latin-1.

    The file is opened without blocking and checked to be a regular file before a byte is read,
    so a device such as ``/dev/zero`` or a pipe fails at once; at most ``limit + 1`` bytes are
    ever read, so a file that grows while it is read fails too.

    Raises:
        CorpusError: ``unreadable`` (cannot be opened or read, or not a regular file),
            ``too-large`` (over ``limit`` bytes).
    """
    try:
        with open_file(str(path), regular=True) as stream:
            data = read_stream(stream, limit)
    except OSError as error:
        if is_too_large(error):
            raise CorpusError("too-large", str(path), limit=limit) from error
        raise CorpusError("unreadable", str(path), os_reason(error)) from error
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def line_words(line: str) -> list[str]:
    """The words of one line: the matches of :data:`WORD_PATTERN` in the lower-cased line."""
    return _WORDS.findall(line.lower())


def sentences(files: Sequence[Path]) -> Iterator[list[str]]:
    """The sentences of the files, in order: the lower-cased words of each line that has one.

    Each file is read when its first sentence is asked for (:func:`read_text`).

    Raises:
        CorpusError: as :func:`read_text`, for the file being read.
    """
    for path in files:
        text = read_text(path).lower()
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        find = _WORDS.findall
        for line in text.split("\n"):
            words = find(line)
            if words:
                yield words


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
