"""File access for checkpoints: checked paths, exact reads into buffers, and atomic writes.

Every ``OSError`` becomes a :class:`CheckpointReadError` or :class:`CheckpointWriteError` that
names the file. Writes go to a new temporary file in the target's folder, which is flushed to
disk and then renamed over the target, so that a crash, a full disk or any other failure leaves
an earlier file at the target as it was, and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
from collections.abc import Callable, Iterator
from typing import Final

from llm_from_scratch.nn.checkpoint.errors import (
    CheckpointPathTypeError,
    CheckpointReadError,
    CheckpointWriteError,
    TruncatedCheckpointError,
)

IO_CHUNK: Final = 1 << 26
"""The most bytes one read or write call moves (64 MiB), so that each system call is short."""

_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def checked_path(path: object) -> str:
    """``path`` as a ``str``; raises :class:`CheckpointPathTypeError` for anything but a ``str``
    or an ``os.PathLike`` of ``str``."""
    if isinstance(path, str | os.PathLike):
        resolved = os.fspath(path)
        if isinstance(resolved, str):
            return resolved
    raise CheckpointPathTypeError(type(path).__name__)


@contextlib.contextmanager
def opened_for_reading(path: str) -> Iterator[io.FileIO]:
    """The file, unbuffered; failing to open it is a :class:`CheckpointReadError`."""
    try:
        file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed below)
    except OSError as error:
        raise CheckpointReadError(path, error) from error
    with file:
        yield file


def file_size(path: str, file: io.FileIO) -> int:
    """The size of the open file in bytes."""
    try:
        return os.fstat(file.fileno()).st_size
    except OSError as error:
        raise CheckpointReadError(path, error) from error


def read_exactly(path: str, file: io.FileIO, offset: int, buffer: memoryview) -> None:
    """Fill ``buffer`` (bytes) from ``offset``; a file that ends first is truncated."""
    filled = 0
    try:
        file.seek(offset)
        while filled < len(buffer):
            count = file.readinto(buffer[filled : filled + IO_CHUNK])
            if not count:
                raise TruncatedCheckpointError(path, offset + len(buffer), offset + filled)
            filled += count
    except OSError as error:
        raise CheckpointReadError(path, error) from error


def read_bytes(path: str, file: io.FileIO, offset: int, count: int) -> bytes:
    """``count`` bytes from ``offset`` (for the header)."""
    buffer = bytearray(count)
    read_exactly(path, file, offset, memoryview(buffer))
    return bytes(buffer)


def replace_atomically(path: str, write: Callable[[Callable[[memoryview], None]], None]) -> None:
    """Create the file at ``path`` (or replace it) with the bytes ``write`` hands to its argument.

    The bytes go to a new temporary file beside ``path``, which is flushed to disk and renamed
    over ``path``. If anything fails, the temporary file is removed and ``path`` is untouched.

    Raises:
        CheckpointWriteError: an ``OSError`` while creating, writing, flushing or renaming.
    """
    temporary, descriptor = _new_temporary(path)
    try:
        with os.fdopen(descriptor, "wb", buffering=0) as file:
            write(lambda data: _write_all(file.fileno(), data))
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise CheckpointWriteError(path, error) from error
        raise
    _sync_folder(os.path.dirname(os.path.abspath(path)))


def _new_temporary(path: str) -> tuple[str, int]:
    folder, base = os.path.split(os.path.abspath(path))
    for _ in range(100):
        temporary = os.path.join(folder, f".{base[:64]}.{os.urandom(6).hex()}.tmp")
        try:
            return temporary, os.open(temporary, _CREATE, 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise CheckpointWriteError(path, error) from error
    raise CheckpointWriteError(path, FileExistsError(f"no free temporary name in {folder}"))


def _write_all(descriptor: int, data: memoryview) -> None:
    written = 0
    while written < len(data):
        count = os.write(descriptor, data[written : written + IO_CHUNK])
        if count <= 0:
            raise OSError(errno.EIO, "the system wrote no bytes")
        written += count


def _sync_folder(folder: str) -> None:
    """Flush the rename itself to disk where the system allows it (POSIX; not Windows)."""
    # The new file is in place whatever happens here, so a failure is not reported as one.
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
