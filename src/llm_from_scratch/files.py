"""Input from outside the process, by one set of rules: paths, files read whole and written, text,
JSON. Every boundary that takes a path, reads or writes a file, or writes text into a header or
on the command line goes through these functions (``docs/errors.md``, "Inputs from outside the
process"). They raise built-in errors of one line, which each boundary wraps: ``TypeError`` (a
path of the wrong type), ``OSError`` with its ``errno`` (a path or file the system cannot take,
read or write, or one too large), ``ValueError`` (text or JSON that breaks a rule).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import IO, TYPE_CHECKING, Final

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

FILE_BYTE_LIMIT: Final = 1 << 20
"""The most bytes of a text or JSON file read whole, and of a line typed in a session."""
TOKENIZER_BYTE_LIMIT: Final = 64 << 20
"""The most bytes of a ``tokenizer.json`` (MiniLM's takes 0.7 MB)."""
NAME_BYTE_LIMIT: Final = 255
"""The most bytes of one name in a path, once encoded (``NAME_MAX``)."""
PATH_BYTE_LIMIT: Final = 4095
"""The most bytes of a whole path, once encoded (Linux's ``PATH_MAX`` less the final NUL)."""
TEMPORARY_STEM_BYTES: Final = 64
"""The most bytes of the target's name that a temporary file's name keeps (whole characters)."""
TEMPORARY_MARK: Final = "llm-from-scratch"
"""What every temporary file's name holds before its writer's process ID (``temporary_path``)."""
JSON_INTEGER_DIGITS: Final = 4300
"""The most digits of an integer in JSON (Python's own limit for converting text to ``int``)."""
TOO_LARGE: Final = errno.EFBIG
"""The ``errno`` of the ``OSError`` for a file or line over its limit."""

_SEPARATORS: Final = tuple(sep for sep in (os.sep, os.altsep) if sep)


# Paths ------------------------------------------------------------------------------------------


def path_text(path: object) -> str | None:
    """``path`` as a plain ``str``: a ``str`` (a subclass read once) or an ``os.PathLike`` whose
    ``__fspath__`` gives one; None for anything else (``bytes``, a failing ``__fspath__``).

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
    """The same path, once the operating system can take it: no NUL, every character encodable
    by the file system encoding (the escapes ``"\\udc80"`` to ``"\\udcff"`` of bytes that are not
    UTF-8 are; a lone surrogate is not), at most :data:`NAME_BYTE_LIMIT` bytes a name and
    :data:`PATH_BYTE_LIMIT` in all.

    Raises:
        OSError: ``errno.EINVAL`` (a NUL), ``errno.EILSEQ``, ``errno.ENAMETOOLONG``.

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
    """The same path, once a new file may be written there (nothing is created).

    Raises:
        OSError: as :func:`os_path`; ``IsADirectoryError`` (a folder, or a path ending in a
            separator), ``FileNotFoundError`` (empty, or no folder), ``NotADirectoryError``.
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
    """A new name beside ``path``, at most 110 bytes: ``.``, its name's first
    :data:`TEMPORARY_STEM_BYTES` bytes, ``.``, :data:`TEMPORARY_MARK`, ``-``, this process's ID,
    ``-``, twelve random hex digits, ``.tmp`` (:func:`remove_stale_temporaries` knows it by that).

    >>> name = temporary_path("out/" + "😀" * 60)
    >>> name.startswith("out/." + "😀" * 16 + ".llm-from-scratch-"), name.endswith(".tmp")
    (True, True)
    """
    folder, name = os.path.split(path)
    mark = f"{_temporary_prefix(name)}{os.getpid()}-{os.urandom(6).hex()}.tmp"
    return os.path.join(folder, mark)


def _temporary_prefix(name: str) -> str:
    """What every temporary name of the target ``name`` starts with, up to the process ID."""
    while len(os.fsencode(name)) > TEMPORARY_STEM_BYTES:
        name = name[:-1]
    return f".{name}.{TEMPORARY_MARK}-"


_TEMPORARY_TAIL: Final = re.compile(r"(?P<pid>[1-9][0-9]{0,9})-[0-9a-f]{12}\.tmp")


def remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files of ``path`` (:func:`temporary_path`) whose writer was killed:
    regular files of exactly that name whose process is gone (POSIX only). Nothing else is
    touched, not the temporary of a process still running, nor a folder that cannot be listed."""
    if os.name != "posix":
        return
    folder, name = os.path.split(path)
    prefix = _temporary_prefix(name)
    with contextlib.suppress(OSError), os.scandir(folder or os.curdir) as entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            found = _TEMPORARY_TAIL.fullmatch(entry.name[len(prefix) :])
            if found and entry.is_file(follow_symlinks=False) and _process_gone(int(found["pid"])):
                _remove(entry.path)


def _process_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs: none has it, or it has ended and waits to be reaped."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # another user's process, or no process ID at all
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2][1:2]
    except OSError:  # no /proc: a process that answers runs
        return False
    return state in (b"Z", b"X")  # a zombie, or one being removed


def _names(path: str) -> list[str]:
    return re.split("|".join(map(re.escape, _SEPARATORS)), path)


# Reading ----------------------------------------------------------------------------------------


def open_file(path: str, *, regular: bool = False) -> io.FileIO:
    """The file at ``path`` (checked by :func:`os_path`) opened for unbuffered binary reading,
    without waiting for a writer (a FIFO that no one writes reads as empty).

    Raises:
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


def read_stream(stream: IO[bytes], limit: int) -> bytes:
    """All the bytes of ``stream``, at most ``limit`` (reads at most ``limit + 1``, so that
    ``/dev/zero`` fails at once).

    Raises:
        OSError: :data:`TOO_LARGE` when there are more; what the stream raises.
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
    """The bytes of a file (a path opened by :func:`open_file`, or a package resource) read
    whole, at most ``limit``.

    Raises:
        TypeError: ``source`` is not a path or a resource.
        OSError: as :func:`open_file` and :func:`read_stream`, about the path (:func:`about`).
    """
    if not isinstance(source, str | os.PathLike):
        from importlib.resources.abc import Traversable  # not loaded for a path

        if isinstance(source, Traversable):
            with source.open("rb") as stream:
                return read_stream(stream, limit)
    path = path_text(source)
    if path is None:
        raise TypeError(f"a path must be a str or an os.PathLike of str, got {type(source)}")
    try:
        with open_file(path) as stream:
            return read_stream(stream, limit)
    except OSError as error:
        raise about(path, error) from error


def read_line(stream: IO[str], limit: int = FILE_BYTE_LIMIT) -> str:
    """One line of a text stream (``""`` at its end), of at most ``limit`` characters.

    Raises:
        OSError: :data:`TOO_LARGE` for a longer line.
    """
    line = stream.readline(limit + 1)
    if len(line) > limit:
        raise OSError(TOO_LARGE, f"a line of more than {limit} characters")
    return line


def is_too_large(error: OSError) -> bool:
    """Whether ``error`` is the one these readers raise for input over its limit."""
    return error.errno == TOO_LARGE


# Writing ----------------------------------------------------------------------------------------


def write_new_file(path: str, parts: Sequence[memoryview], chunk: int = 1 << 26) -> None:
    """Create the file ``path`` (none may be there), write ``parts`` (at most ``chunk`` bytes a
    call) and ``fsync`` it; on any failure remove it.

    Raises:
        OSError: from creating (``FileExistsError`` for a taken name), writing or flushing.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            for part in parts:
                while len(part):  # a write to a file moves at least one byte, or raises
                    part = part[os.write(descriptor, part[:chunk]) :]
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except BaseException:
        _remove(path)
        raise


def replace_file(path: str, parts: Sequence[memoryview], chunk: int = 1 << 26) -> None:
    """Write ``parts`` to a new file beside ``path`` (:func:`write_new_file` at a
    :func:`temporary_path`), rename it over ``path`` and ``fsync`` the folder: a reader sees the
    earlier file or the whole new one. ``path`` is checked by :func:`writable_path` first and
    stale temporaries removed; a temporary name of this process (staged by :func:`replace_files`)
    is written directly.

    Raises:
        OSError: as :func:`writable_path` and :func:`write_new_file` (a temporary the folder
            refuses is said of ``path``, :func:`about`), or from the rename; an earlier file at
            ``path`` is as it was.
    """
    writable_path(path)
    if _own_temporary(path):  # staged by replace_files, which renames it into place
        write_new_file(path, parts, chunk)
        return
    remove_stale_temporaries(path)
    temporary = temporary_path(path)
    try:
        write_new_file(temporary, parts, chunk)
    except OSError as error:
        if error.filename != temporary:  # a full disk, say: the system's error as it is
            raise
        raise about(path, error) from error  # the folder refused the file: said of the file
    try:
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise
    sync_folder(os.path.dirname(path) or os.curdir)


def _own_temporary(path: str) -> bool:
    """Whether ``path`` is a temporary name (:func:`temporary_path`) of this process."""
    name = os.path.basename(path)
    marked = name.rpartition(f".{TEMPORARY_MARK}-")[2]
    found = _TEMPORARY_TAIL.fullmatch(marked) if name.startswith(".") else None
    return found is not None and int(found["pid"]) == os.getpid()


def replace_files(writers: Sequence[tuple[str, Callable[[str], object]]]) -> bool:
    """Replace several files as one: each ``write(staged)`` makes its new file at a
    :func:`temporary_path` beside its target, then each is renamed over its target, the stale
    temporaries of the targets removed first. A failed rename gives the targets renamed before it
    their earlier files back (or none): the folders hold every earlier file or every new one, no
    temporary. Ctrl-C (SIGINT, in the main thread) is held back from the first write to the last
    rename.

    Returns:
        Whether a Ctrl-C came meanwhile (every new file is in place).

    Raises:
        What a ``write`` or a rename raises (a ``KeyboardInterrupt`` raised inside, too), an
        ``OSError`` about the target it failed for (:func:`about`: never a temporary's name):
        the targets are as they were.
    """
    staged: list[str] = []
    for target, _ in writers:
        remove_stale_temporaries(target)
    failing = writers[0][0] if writers else ""
    try:
        with _interrupts_held() as held:
            for target, write in writers:
                failing = target
                staged.append(temporary_path(target))
                write(staged[-1])
            failing = _renamed_into_place(writers, staged)
            for folder in dict.fromkeys(os.path.dirname(target) for target, _ in writers):
                sync_folder(folder or os.curdir)
    except OSError as error:
        raise about(failing, error) from error
    finally:
        for path in staged:
            _remove(path)
    return bool(held)


def _renamed_into_place(
    writers: Sequence[tuple[str, Callable[[str], object]]], staged: list[str]
) -> str:
    """Rename each staged file over its target, the earlier files of all but the last kept under
    a second name; when a rename fails, put back what was renamed before it. The last target."""
    renamed: list[tuple[str, str | None]] = []
    target = ""
    try:
        for index, (target, _) in enumerate(writers):
            last = index == len(writers) - 1
            earlier = None if last else _second_name(target, staged)
            os.replace(staged[index], target)
            renamed.append((target, earlier))
    except OSError as error:
        _put_back(renamed)
        raise about(target, error) from error
    except BaseException:
        _put_back(renamed)
        raise
    return target


def _put_back(renamed: list[tuple[str, str | None]]) -> None:
    """Give each renamed target its earlier file back (or none), the last renamed first."""
    for target, earlier in reversed(renamed):
        if earlier is None:
            os.unlink(target)
        else:
            os.replace(earlier, target)


def _second_name(path: str, made: list[str]) -> str | None:
    """A second name (a hard link, or a copy) for the file at ``path``, noted in ``made``."""
    if not os.path.isfile(path):
        return None
    made.append(temporary_path(path))
    try:
        os.link(path, made[-1])
    except OSError:
        import shutil  # rarely needed: loaded then

        shutil.copy2(path, made[-1])
    return made[-1]


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """Hold Ctrl-C back inside the block (in the main thread); the list holds those that came."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)


def sync_folder(folder: str | os.PathLike[str]) -> None:
    """``fsync`` a folder, so that renames into it last (where the system can)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def write_output(path: str, data: bytes) -> None:
    """Write a file a command produces: replaced whole or not at all (:func:`replace_file`); a
    path that is no regular file (a device such as ``/dev/stdout``) or whose folder takes no new
    file (``/proc/version``) is written in place, checked by :func:`writable_path`.

    Raises:
        OSError: about ``path`` (:func:`about`), never its temporary.
    """
    try:
        if os.path.isfile(path) or not os.path.exists(path):
            replace_file(path, [memoryview(data)])
            return
    except FileNotFoundError as error:  # for a file that exists: its folder refused a new one
        if not os.path.exists(path):
            raise about(path, error) from error
    except OSError as error:
        raise about(path, error) from error
    try:
        writable_path(path)
        with open(path, "wb") as stream:
            stream.write(data)
    except OSError as error:
        raise about(path, error) from error


def about(path: str, error: OSError) -> OSError:
    """A new error about the file ``path`` for the system's ``error`` (or the first ``OSError``
    with an ``errno`` among its causes): that ``errno`` and reason, of the class the ``errno``
    gives, ``path`` as its file name; raise it ``from error``.

    >>> error = about("out/table.safetensors", OSError(28, "No space left on device"))
    >>> print(error)
    [Errno 28] No space left on device: 'out/table.safetensors'
    """
    found: BaseException | None = error
    while isinstance(found, OSError) and found.errno is None and found.__cause__ is not None:
        found = found.__cause__
    if not isinstance(found, OSError) or found.errno is None:
        return OSError(None, str(error) or type(error).__name__, path)
    return OSError(found.errno, found.strerror or os.strerror(found.errno), path)


# Text -------------------------------------------------------------------------------------------


def check_text(text: str) -> str:
    """``text``, once UTF-8 can encode it.

    Raises:
        ValueError: it holds a lone surrogate (``"\\udcff"`` of a byte that is not UTF-8).

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
    """``text`` with every character that is not printable (line breaks, control characters,
    lone surrogates, U+2028) escaped as in a Python string literal: one line.

    >>> print(one_line("no\\nsuch\\udcff.safetensors"))
    no\\nsuch\\udcff.safetensors
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


# Memory -----------------------------------------------------------------------------------------


def machine_memory_bytes() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def resident_memory_bytes() -> int:
    """The memory this process holds now (its resident set) in bytes; its peak where
    ``/proc`` is missing."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return peak_memory_bytes()


def peak_memory_bytes(maxrss: int | None = None) -> int:
    """The most memory a process has held at once (its peak resident set) in bytes: this
    process's, or the one whose ``ru_maxrss`` is given (as ``os.wait4`` reports of a child); 0
    where the system does not say."""
    if maxrss is None:
        try:
            import resource
        except ImportError:  # pragma: no cover - not POSIX
            return 0
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024  # Linux counts KiB


# JSON -------------------------------------------------------------------------------------------


def load_json(text: str) -> object:
    """The value of a strict JSON text: integers exact (``int``), other numbers ``float``
    (``1e400`` is ``inf``).

    Raises:
        ValueError: text that is not JSON (the decoder's message, with line and column),
            ``NaN`` or ``Infinity``, an integer of more than :data:`JSON_INTEGER_DIGITS`
            digits, a key twice in one object, a lone surrogate, or nesting too deep.

    >>> load_json('{"1": [30, 31.5], "8": false}')
    {'1': [30, 31.5], '8': False}
    """
    import json  # the demo reads no JSON: loaded on first use

    try:
        value = json.loads(
            text, parse_int=_integer, parse_constant=_constant, object_pairs_hook=_object
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
