"""word2vec's text and binary files, read and written byte for byte as gensim 4 does, and the
TensorBoard Embedding Projector's two TSV files.

A word2vec file starts with a line ``COUNT WIDTH``; then each word, a space and its vector: in
the text form the numbers as text separated by spaces and a line feed, in the binary form
``WIDTH`` little-endian float32 numbers and nothing after them (gensim's writer). Words are UTF-8.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import FileAccessError, FormatError, OptionError
from llm_from_scratch.files import open_file, path_text, replace_file, replace_files, write_new_file

FloatArray = npt.NDArray[np.float32]
LITTLE_FLOAT32: Final = np.dtype("<f4")
CHUNK_BYTES: Final = 1 << 20
#: The most bytes of the header line, and of one word of a binary file.
LINE_LIMIT: Final = 1 << 16
PROJECTOR_FILES: Final = ("vectors.tsv", "metadata.tsv")


def path_of(path: object, function: str) -> str:
    """``path`` as text, or ``vectors.argument`` (an ``OptionError``)."""
    text = path_text(path)
    if text is None:
        raise OptionError("vectors.argument", function=function, requirement="a path", value=path)
    return text


def read_word2vec(path: str, binary: bool, limit: int | None) -> tuple[list[str], FloatArray]:
    """The words and vectors of a word2vec file: the first ``limit`` (None or 0: all), a word
    given twice kept at its first place, as gensim keeps it (``vectors.read``, ``vectors.file``)."""
    kind = "binary" if binary else "text"
    try:
        with open_file(path) as raw:
            size = os.fstat(raw.fileno()).st_size
            stream = io.BufferedReader(raw, CHUNK_BYTES)
            count, width = _header(stream.readline(LINE_LIMIT), path, kind)
            count = min(count, limit) if limit else count
            _check_size(count, width, size, binary, path, kind)
            read = _binary_rows if binary else _text_rows
            words, table = _collected(read(stream, count, width), count, width, path, kind)
    except OSError as error:
        raise FileAccessError("vectors.read", path=path, detail=_reason(error)) from error
    return words, table


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _header(line: bytes, path: str, kind: str) -> tuple[int, int]:
    try:
        count, width = (int(field) for field in line.decode("utf-8").split())
    except ValueError as error:
        detail = f"its first line must be the word count and the width, got {line[:80]!r}"
        raise FormatError("vectors.file", path=path, kind=kind, detail=detail) from error
    if count < 1 or width < 1:
        detail = f"its header counts {count} words of width {width}, not at least 1 of each"
        raise FormatError("vectors.file", path=path, kind=kind, detail=detail)
    return count, width


def _check_size(count: int, width: int, size: int, binary: bool, path: str, kind: str) -> None:
    """Refuse a header that counts more vectors than the file can hold, before allocating."""
    if count * ((4 * width + 2) if binary else (2 * width + 1)) > size:
        held = f"more than its {size} bytes hold"
        detail = f"its header counts {count} vectors of width {width}, {held}"
        raise FormatError("vectors.file", path=path, kind=kind, detail=detail)


Row = tuple[str, npt.NDArray[np.float32]]


def _text_rows(stream: IO[bytes], count: int, width: int) -> Iterator[Row | str]:
    for number in range(count):
        line = stream.readline()
        if not line:
            yield f"it ends after {number} of the {count} vectors its header counts"
            return
        parts = line.rstrip().decode("utf-8").split(" ")
        try:
            values = np.array(parts[1:], dtype=np.float32)
        except ValueError:
            yield f"line {number + 2} holds something other than numbers after its word"
            return
        if values.shape[0] != width:
            yield f"line {number + 2} holds {values.shape[0]} numbers, not {width}"
            return
        yield parts[0], values


def _binary_rows(stream: IO[bytes], count: int, width: int) -> Iterator[Row | str]:
    size = 4 * width
    chunk, start, done = b"", 0, 0
    while done < count:
        space = chunk.find(b" ", start)
        if space == -1 or len(chunk) - space - 1 < size:
            more = stream.read(CHUNK_BYTES)
            if not more:
                yield f"it ends after {done} of the {count} vectors its header counts"
                return
            chunk, start = chunk[start:] + more, 0
            continue
        word = chunk[start:space].decode("utf-8").lstrip("\n")
        yield word, np.frombuffer(chunk, LITTLE_FLOAT32, width, space + 1)
        start, done = space + 1 + size, done + 1


def _collected(
    rows: Iterator[Row | str], count: int, width: int, path: str, kind: str
) -> tuple[list[str], FloatArray]:
    table = np.empty((count, width), dtype=np.float32)
    words: list[str] = []
    seen: set[str] = set()
    try:
        for row in rows:
            if isinstance(row, str):
                raise FormatError("vectors.file", path=path, kind=kind, detail=row)
            word, values = row
            if word not in seen:
                seen.add(word)
                table[len(words)] = values
                words.append(word)
    except UnicodeDecodeError as error:
        detail = f"a word is not UTF-8 ({error.reason} at byte {error.start})"
        raise FormatError("vectors.file", path=path, kind=kind, detail=detail) from error
    return words, table[: len(words)]


# Writing ------------------------------------------------------------------------------------


def word2vec_bytes(words: tuple[str, ...], table: FloatArray, binary: bool) -> bytes:
    """The file gensim's ``save_word2vec_format`` writes for these words and vectors."""
    parts = [f"{len(words)} {table.shape[1]}\n".encode()]
    if binary:
        little = table.astype(LITTLE_FLOAT32, copy=False)
        parts.extend(
            f"{word} ".encode() + row.tobytes() for word, row in zip(words, little, strict=True)
        )
    else:
        parts.extend(
            f"{word} {' '.join(map(str, row))}\n".encode()
            for word, row in zip(words, table, strict=True)
        )
    return b"".join(parts)


def write_word2vec(path: str, data: bytes) -> None:
    """Replace the file at ``path`` by ``data`` atomically (``vectors.write``)."""
    try:
        replace_file(path, [memoryview(data)])
    except OSError as error:
        raise FileAccessError("vectors.write", path=path, detail=_reason(error)) from error


def projector_bytes(words: tuple[str, ...], table: FloatArray) -> tuple[bytes, bytes]:
    """``vectors.tsv`` (a row of tab-separated numbers per word) and ``metadata.tsv`` (a word per
    line, no header: TensorBoard's form for a single column)."""
    vectors = "".join("\t".join(map(str, row)) + "\n" for row in table).encode()
    metadata = "".join(f"{word}\n" for word in words).encode()
    return vectors, metadata


def write_projector(folder: str, files: tuple[bytes, bytes]) -> tuple[Path, Path]:
    """Write the two projector files into ``folder`` (made if missing), both or neither."""
    targets = tuple(Path(folder) / name for name in PROJECTOR_FILES)
    try:
        os.makedirs(folder, exist_ok=True)
        replace_files(
            [
                (str(target), functools.partial(write_new_file, parts=[memoryview(data)]))
                for target, data in zip(targets, files, strict=True)
            ]
        )
    except OSError as error:
        raise FileAccessError("vectors.write", path=folder, detail=_reason(error)) from error
    return targets[0], targets[1]
