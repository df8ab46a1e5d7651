"""The one bounded reader (``llm_from_scratch.files``): a file read whole is at most its limit,
found after reading at most one byte more, so an endless file fails at once; a FIFO that no one
writes does not block; a folder is refused."""

from __future__ import annotations

import errno
import io
import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from llm_from_scratch.files import (
    FILE_BYTE_LIMIT,
    TOO_LARGE,
    is_too_large,
    open_file,
    read_file,
    read_line,
    read_stream,
)

from checks import within_seconds
from conftest import unavailable


class Chunks(io.RawIOBase):
    """A stream that hands out its bytes in the given chunk sizes (then forever zeros when
    ``endless``), and counts what it handed out."""

    def __init__(self, data: bytes, sizes: list[int], endless: bool = False) -> None:
        self.data, self.sizes, self.endless = data, sizes, endless
        self.handed_out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        size = self.sizes[self.handed_out % len(self.sizes)] if self.sizes else len(buffer)
        size = min(size, len(buffer))
        if self.handed_out < len(self.data):
            part = self.data[self.handed_out : self.handed_out + size]
        elif self.endless:
            part = bytes(size)
        else:
            return 0
        buffer[: len(part)] = part
        self.handed_out += len(part)
        return len(part)


@given(
    st.binary(max_size=80),
    st.integers(0, 64),
    st.lists(st.integers(1, 9), max_size=4),
    st.booleans(),
)
def test_a_stream_is_read_whole_up_to_its_limit_and_one_byte_past_it_at_most(
    data: bytes, limit: int, sizes: list[int], endless: bool
) -> None:
    stream = Chunks(data, sizes, endless)
    try:
        read = read_stream(stream, limit)
    except OSError as error:
        event("too large")
        assert is_too_large(error) and error.errno == TOO_LARGE == errno.EFBIG
        assert endless or len(data) > limit
        assert stream.handed_out == limit + 1
        return
    event("read")
    assert not endless and read == data and len(data) <= limit


@given(st.binary(max_size=300), st.integers(0, 256))
def test_a_file_is_read_whole_up_to_its_limit(data: bytes, limit: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.json"
        path.write_bytes(data)
        try:
            read = read_file(path, limit)
        except OSError as error:
            event("too large")
            assert is_too_large(error) and len(data) > limit
            return
        event("read")
        assert read == data and len(data) <= limit


def test_dev_zero_is_too_large_at_once() -> None:
    if not os.path.exists("/dev/zero"):
        unavailable("needs a /dev/zero device", ci_provides=True)
    with within_seconds(1.0), pytest.raises(OSError) as caught:
        read_file("/dev/zero", FILE_BYTE_LIMIT)
    assert is_too_large(caught.value)
    assert caught.value.strerror == (
        f"more than {FILE_BYTE_LIMIT} bytes, the most read from such a file"
    )
    assert caught.value.filename == "/dev/zero"  # every reader's error names its file


def test_a_fifo_that_no_one_writes_reads_as_empty_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with within_seconds(5.0):
        assert read_file(fifo, 16) == b""


def test_a_fifo_is_read_until_its_writer_closes_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    keeper = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer need not wait
    writer = os.open(fifo, os.O_WRONLY)
    os.write(writer, b"[1, ")

    def finish() -> None:
        time.sleep(0.2)  # while read_file waits for more
        os.write(writer, b"2]")
        os.close(writer)

    thread = threading.Thread(target=finish)
    thread.start()
    try:
        with within_seconds(5.0):
            data = read_file(fifo, 16)
    finally:
        thread.join(5.0)
        os.close(keeper)
    assert data == b"[1, 2]"


def test_a_folder_and_a_device_are_refused_by_the_checkpoint_opener(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_file(tmp_path, 16)
    with pytest.raises(IsADirectoryError):
        open_file(str(tmp_path))
    if not os.path.exists("/dev/null"):
        unavailable("needs a /dev/null device", ci_provides=True)
    with pytest.raises(OSError) as caught:
        open_file("/dev/null", regular=True)
    assert caught.value.errno == errno.EINVAL
    assert read_file("/dev/null", 16) == b""


@pytest.mark.parametrize("path", ["a\0b.json", "\ud800.json", "😀" * 64])
def test_a_path_the_system_cannot_take_is_refused_before_opening(path: str) -> None:
    with pytest.raises(OSError) as caught:
        read_file(path, 16)
    assert caught.value.errno in (errno.EINVAL, errno.EILSEQ, errno.ENAMETOOLONG)


def test_a_resource_of_the_package_is_read_through_the_same_bound() -> None:
    from importlib import resources

    source = resources.files("llm_from_scratch.labels").joinpath("en.json")
    assert read_file(source, FILE_BYTE_LIMIT).startswith(b"{")
    with pytest.raises(OSError) as caught:
        read_file(source, 8)
    assert is_too_large(caught.value)


def test_a_line_is_read_up_to_its_limit() -> None:
    assert read_line(io.StringIO("12345\nrest"), 6) == "12345\n"
    assert read_line(io.StringIO(""), 6) == ""
    endless = io.StringIO("x" * 100)
    with pytest.raises(OSError) as caught:
        read_line(endless, 6)
    assert is_too_large(caught.value) and endless.tell() == 7


def test_a_path_that_is_no_path_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        read_file(b"a.json", 16)  # type: ignore[arg-type]
