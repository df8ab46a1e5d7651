"""Input from outside the process, by one set of rules: paths, files read whole, text, JSON.

Every boundary of the package that takes a file path, reads a file whole, writes text into a
file header or echoes a value on the command line goes through these functions, so each rule is
stated once, here; ``docs/errors.md`` (section "Inputs from outside the process") lists them with
the error each boundary reports. The functions raise built-in errors only, each with a message of
one line: ``TypeError`` for a path of the wrong type, an ``OSError`` (with its ``errno``) for a
path the system cannot take or a file it cannot read or that is too large, ``ValueError`` for
text or JSON that breaks a rule. Each boundary wraps them in its own typed error
(the ``checkpoint.read`` rule's, ``AnswersFileError``, ...) or, on the command line, prints them as
one line.

The rules:

- **Paths** (:func:`path_text`, :func:`os_path`, :func:`writable_path`): a ``str`` or an
  ``os.PathLike`` whose ``__fspath__`` gives a ``str`` (a ``str`` subclass is read as the plain
  ``str`` it holds); no NUL character; every character encodable by the file system encoding
  (a lone surrogate such as ``"\\ud800"`` is not; the surrogate escapes that stand for bytes of a
  name that is not UTF-8, ``"\\udc80"`` to ``"\\udcff"``, are); at most :data:`NAME_BYTE_LIMIT`
  bytes per name and :data:`PATH_BYTE_LIMIT` bytes in all, once encoded. A path to write also
  names no folder (nor ends in a separator), and its folder exists. All of this is checked
  before anything is opened or created.
- **Files read whole** (:func:`read_file`, :func:`read_stream`, :func:`read_line`): at most a
  documented number of bytes (:data:`FILE_BYTE_LIMIT` for text and JSON files,
  :data:`TOKENIZER_BYTE_LIMIT` for a tokenizer), found after reading at most one byte more, so
  ``/dev/zero`` fails at once; a file is opened without waiting for a writer (a FIFO that no
  one writes reads as empty) and a folder is refused.
- **Files written** (:func:`replace_file`): to a temporary file beside the target whose name
  is bounded in bytes (:func:`temporary_path`), flushed to disk and renamed over the target.
- **Text** (:func:`check_text`, :func:`one_line`): text written into a file must be encodable
  as UTF-8 (no lone surrogate); text echoed on one line has every character that is not
  printable escaped as in a Python string literal (``\\n``, ``\\x1b``, ``\\udcff``).
- **JSON** (:func:`load_json`): strict JSON: no ``NaN`` or ``Infinity``, no key twice in one
  object, no string that holds a lone surrogate, integers of at most
  :data:`JSON_INTEGER_DIGITS` digits (read exactly, as Python ``int``).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
import sys
from collections.abc import Sequence
from importlib.resources.abc import Traversable
from typing import Final, Protocol

__all__ = [
    "FILE_BYTE_LIMIT",
    "JSON_INTEGER_DIGITS",
    "NAME_BYTE_LIMIT",
    "PATH_BYTE_LIMIT",
    "TEMPORARY_STEM_BYTES",
    "TOKENIZER_BYTE_LIMIT",
    "TOO_LARGE",
    "check_text",
    "is_too_large",
    "load_json",
    "one_line",
    "open_file",
    "os_path",
    "path_text",
    "read_file",
    "read_line",
    "read_stream",
    "replace_file",
    "temporary_path",
    "writable_path",
    "write_file",
]

FILE_BYTE_LIMIT: Final = 1 << 20
"""The most bytes of a text or JSON file read whole (1 MiB): an answers file, a saved trace, a
label table, an exercise file, each a few kilobytes; also the most characters of one line typed
into the exercise session. One byte (or character) more makes it too large."""

TOKENIZER_BYTE_LIMIT: Final = 64 << 20
"""The most bytes of a ``tokenizer.json`` (64 MiB; MiniLM's takes 0.7 MB, the largest common
ones a few tens of MB)."""

NAME_BYTE_LIMIT: Final = 255
"""The most bytes of one name in a path, once encoded (``NAME_MAX`` of the common file
systems)."""

PATH_BYTE_LIMIT: Final = 4095
"""The most bytes of a whole path, once encoded (Linux's ``PATH_MAX``, 4096, less the final
NUL)."""

TEMPORARY_STEM_BYTES: Final = 64
"""The most bytes of the target's name that a temporary file's name keeps (whole characters)."""

JSON_INTEGER_DIGITS: Final = 4300
"""The most digits of an integer in JSON (Python's own default for converting text to ``int``:
reading more digits takes time that grows with their square)."""

TOO_LARGE: Final = errno.EFBIG
"""The ``errno`` of the ``OSError`` for a file or line over its limit."""

_SEPARATORS: Final = tuple(sep for sep in (os.sep, os.altsep) if sep)


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class _LineReadable(Protocol):
    def readline(self, size: int = ..., /) -> str: ...


# Paths ------------------------------------------------------------------------------------------


def path_text(path: object) -> str | None:
    """``path`` as a plain ``str``, or None when it is not a path.

    A ``str`` (a subclass is read once as the plain ``str`` it holds), or an ``os.PathLike``
    whose ``__fspath__`` gives a ``str``; ``bytes`` paths, and a ``__fspath__`` that gives
    anything else or fails with ``TypeError`` or ``ValueError``, are not paths.

    >>> import pathlib
    >>> path_text(pathlib.PurePosixPath("model.safetensors")), path_text(b"model")
    ('model.safetensors', None)
    """
    if isinstance(path, os.PathLike) and not isinstance(path, str):
        try:
            path = path.__fspath__()
        except (TypeError, ValueError):
            return None
    return str.__str__(path) if isinstance(path, str) else None


def os_path(path: str) -> str:
    """The same path, once the operating system can take it.

    Raises:
        OSError: a NUL character (``errno.EINVAL``), a character the file system encoding
            cannot encode, such as a lone surrogate (``errno.EILSEQ``), a name of more than
            :data:`NAME_BYTE_LIMIT` bytes or a path of more than :data:`PATH_BYTE_LIMIT` bytes
            (``errno.ENAMETOOLONG``).

    >>> os_path("😀" * 60 + ".safetensors")[:2]
    '😀😀'
    >>> try:
    ...     os_path("model\\x00.safetensors")
    ... except OSError as error:
    ...     print(error)
    [Errno 22] the path holds a NUL character at index 5
    """
    found = path.find("\0")
    if found >= 0:
        raise OSError(errno.EINVAL, f"the path holds a NUL character at index {found}")
    try:
        encoded = os.fsencode(path)
    except UnicodeEncodeError as error:
        detail = (
            f"the path holds {path[error.start]!r} at index {error.start}, which the file "
            f"system encoding ({sys.getfilesystemencoding()}) cannot encode"
        )
        raise OSError(errno.EILSEQ, detail) from None
    if len(encoded) > PATH_BYTE_LIMIT:
        detail = f"the path takes {len(encoded)} bytes, more than {PATH_BYTE_LIMIT}"
        raise OSError(errno.ENAMETOOLONG, detail)
    for name in _names(path):
        size = len(os.fsencode(name))
        if size > NAME_BYTE_LIMIT:
            shown = f"{name[:16]}..." if len(name) > 16 else name
            detail = f"the name {shown!r} takes {size} bytes, more than {NAME_BYTE_LIMIT}"
            raise OSError(errno.ENAMETOOLONG, detail)
    return path


def writable_path(path: str) -> str:
    """The same path, once a new file may be written there: :func:`os_path`, then the path must
    not end in a separator or name a folder, and its folder must exist.

    Nothing is created. Raises:
        OSError: as :func:`os_path`; ``IsADirectoryError`` for a folder, ``FileNotFoundError``
            for an empty path or a missing folder, ``NotADirectoryError`` when a file stands
            where the folder should be.
    """
    os_path(path)
    if not path:
        raise FileNotFoundError(errno.ENOENT, "the path is empty")
    if path.endswith(_SEPARATORS) or os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "the path names a folder, not a file")
    folder = os.path.dirname(path) or os.curdir
    try:
        mode = os.stat(folder).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"no folder {folder!r}") from None
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(errno.ENOTDIR, f"{folder!r} is not a folder")
    return path


def temporary_path(path: str) -> str:
    """A new name beside ``path`` for a file to be renamed over it: ``.``, the first
    :data:`TEMPORARY_STEM_BYTES` bytes of its name (whole characters), ``.``, twelve random hex
    digits and ``.tmp``: at most 82 bytes, whatever the name.

    >>> name = temporary_path("out/" + "😀" * 60)
    >>> name.startswith("out/." + "😀" * 16 + "."), len(os.fsencode(os.path.basename(name)))
    (True, 82)
    """
    folder, name = os.path.split(path)
    stem, size = [], 0
    for character in name:
        size += len(os.fsencode(character))
        if size > TEMPORARY_STEM_BYTES:
            break
        stem.append(character)
    return os.path.join(folder, f".{''.join(stem)}.{os.urandom(6).hex()}.tmp")


def _names(path: str) -> list[str]:
    for separator in _SEPARATORS[1:]:
        path = path.replace(separator, _SEPARATORS[0])
    return path.split(_SEPARATORS[0])


# Reading ----------------------------------------------------------------------------------------


def open_file(path: str, *, regular: bool = False) -> io.FileIO:
    """The file at ``path`` (checked by :func:`os_path`) opened for unbuffered binary reading.

    It is opened without waiting for a writer, so a FIFO that no one writes reads as empty, then
    reads block as usual. Raises:
        OSError: as :func:`os_path` or ``open``; ``IsADirectoryError`` for a folder; with
            ``regular``, ``errno.EINVAL`` for anything but a regular file (a pipe, a device).
    """
    os_path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "the path names a folder, not a file")
        if regular and not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe or a device)")
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(descriptor, True)
        return open(descriptor, "rb", buffering=0)
    except BaseException:
        os.close(descriptor)
        raise


def read_stream(stream: _Readable, limit: int) -> bytes:
    """All the bytes of ``stream``, at most ``limit``: reads at most ``limit + 1`` bytes.

    Raises:
        OSError: ``errno.EFBIG`` (:data:`TOO_LARGE`) when there are more than ``limit``; what
            the stream raises.
    """
    chunks, size = [], 0
    while size <= limit:
        chunk = stream.read(limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise OSError(TOO_LARGE, f"more than {limit} bytes, the most read from such a file")
    return b"".join(chunks)


def read_file(source: str | os.PathLike[str] | Traversable, limit: int) -> bytes:
    """The bytes of a file read whole, at most ``limit``: a path (checked by :func:`os_path`,
    opened by :func:`open_file`) or a package resource.

    Raises:
        TypeError: ``source`` is not a path or a resource.
        OSError: as :func:`open_file` and :func:`read_stream`.
    """
    if not isinstance(source, str | os.PathLike) and isinstance(source, Traversable):
        with source.open("rb") as stream:
            return read_stream(stream, limit)
    path = path_text(source)
    if path is None:
        raise TypeError(f"a path must be a str or an os.PathLike of str, got {type(source)}")
    with open_file(path) as stream:
        return read_stream(stream, limit)


def read_line(stream: _LineReadable, limit: int = FILE_BYTE_LIMIT) -> str:
    """One line of a text stream (``""`` at its end), of at most ``limit`` characters.

    Raises:
        OSError: ``errno.EFBIG`` (:data:`TOO_LARGE`) for a longer line, found after reading at
            most one character more.
    """
    line = stream.readline(limit + 1)
    if len(line) > limit:
        raise OSError(TOO_LARGE, f"a line of more than {limit} characters")
    return line


def is_too_large(error: OSError) -> bool:
    """Whether ``error`` is the one these readers raise for input over its limit."""
    return error.errno == TOO_LARGE


# Writing ----------------------------------------------------------------------------------------


def replace_file(path: str, parts: Sequence[memoryview], chunk: int = 1 << 26) -> None:
    """Write these bytes to a new file beside ``path`` (:func:`temporary_path`), ``fsync`` it,
    rename it over ``path`` and ``fsync`` the folder; on any failure remove it, so an earlier
    file at ``path`` is as it was.

    ``path`` is checked by :func:`writable_path` first, before anything is created. Each write
    call moves at most ``chunk`` bytes. Raises:
        OSError: as :func:`writable_path`, or from creating, writing, flushing or renaming.
    """
    writable_path(path)
    temporary = temporary_path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    descriptor = os.open(temporary, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            for part in parts:
                while len(part):  # a write to a file moves at least one byte, or raises
                    part = part[os.write(descriptor, part[:chunk]) :]
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sync_folder(os.path.dirname(path) or os.curdir)


def sync_folder(folder: str | os.PathLike[str]) -> None:
    """``fsync`` a folder, so that renames into it last; quietly nothing where the system
    cannot sync a folder."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_file(path: str, data: bytes) -> None:
    """Write ``data`` to the file at ``path`` (checked by :func:`writable_path`), in place: an
    output such as ``/dev/stdout`` works. Raises OSError as :func:`writable_path` or ``open``."""
    writable_path(path)
    with open(path, "wb") as stream:
        stream.write(data)


# Text -------------------------------------------------------------------------------------------


def check_text(text: str) -> str:
    """``text``, once UTF-8 can encode it.

    Raises:
        ValueError: it holds a lone surrogate (as Python decodes a byte that is not UTF-8 from a
            file name or the command line, ``"\\udcff"``, or a JSON escape ``"\\ud800"``).

    >>> try:
    ...     check_text("a\\ud800")
    ... except ValueError as error:
    ...     print(error)
    '\\ud800' at index 1 is a lone surrogate, which UTF-8 cannot encode
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        detail = f"{text[error.start]!a} at index {error.start} is a lone surrogate"
        raise ValueError(f"{detail}, which UTF-8 cannot encode") from None
    return text


def one_line(text: str) -> str:
    """``text`` with every character that is not printable escaped as in a Python string
    literal (line breaks, other control characters, lone surrogates, U+2028), so that it prints
    as one line; printable characters, the backslash included, are kept.

    >>> print(one_line("no\\nsuch\\udcff.safetensors"))
    no\\nsuch\\udcff.safetensors
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


# JSON -------------------------------------------------------------------------------------------


def load_json(text: str) -> object:
    """The value of a strict JSON text.

    Integers are read exactly, as Python ``int``; other numbers as ``float`` (``1e400`` is
    ``inf``). Raises:
        ValueError: text that is not JSON (the decoder's message, with line and column),
            ``NaN``, ``Infinity`` or ``-Infinity``, an integer of more than
            :data:`JSON_INTEGER_DIGITS` digits, an object with a key twice, a string that holds
            a lone surrogate (an escape such as ``"\\ud800"``), or nesting deeper than Python's
            recursion limit.

    >>> load_json('{"1": [30, 31.5], "8": false}')
    {'1': [30, 31.5], '8': False}
    """
    try:
        value = json.loads(
            text,
            parse_int=_integer,
            parse_constant=_constant,
            object_pairs_hook=_object,
        )
    except RecursionError:
        raise ValueError("the JSON value is nested too deeply") from None
    _check_strings(value)
    return value


def _integer(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > JSON_INTEGER_DIGITS:
        raise ValueError(f"an integer of {count} digits, more than {JSON_INTEGER_DIGITS}")
    return int(digits)


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"the key {key!a} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def _check_strings(value: object) -> None:
    """Refuse a string (key or value) that holds a lone surrogate, without recursion."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                check_text(item)
            except ValueError as error:
                raise ValueError(f"a JSON string {item[:32]!a}: {error}") from None
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
