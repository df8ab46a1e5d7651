"""The one path reader (``llm_from_scratch.files``): what the system cannot take is an
``OSError`` naming the fault before anything is opened or created, whatever ``open`` itself
would have raised (a raw ``ValueError`` for a NUL, ``UnicodeEncodeError`` for a lone surrogate);
temporary names are bounded in bytes.

The property tests take their oracle from the system: the same name is created with plain
``open(..., "xb")`` in a folder of its own, and the reader must accept exactly the names the
system accepts.
"""

from __future__ import annotations

import errno
import os
import pathlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given

from llm_from_scratch.files import (
    NAME_BYTE_LIMIT,
    PATH_BYTE_LIMIT,
    TEMPORARY_MARK,
    TEMPORARY_STEM_BYTES,
    os_path,
    path_text,
    replace_file,
    temporary_path,
    writable_path,
)

from checks import system_creates
from strategies import path_names

EMOJI_NAME = "😀" * 60  # 240 bytes: a valid name that open() creates


@given(path_names())
def test_the_reader_accepts_exactly_the_names_the_system_creates(name: str) -> None:
    with tempfile.TemporaryDirectory() as oracle, tempfile.TemporaryDirectory() as folder:
        expected = system_creates(oracle, name)
        path = f"{folder}/{name}"  # not os.path.join, which would drop the folder before a "/"
        try:
            replace_file(path, [memoryview(b"data")])
        except OSError as error:
            event(f"refused {errno.errorcode.get(error.errno or 0, type(error).__name__)}")
            assert not expected
            assert os.listdir(folder) == []  # nothing created
            return
        event("written")
        assert expected
        with open(path, "rb") as stream:
            assert stream.read() == b"data"
        assert os.listdir(folder) == [os.listdir(oracle)[0]]  # one file, named as plain open's


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("model\0.safetensors", errno.EINVAL),
        ("\ud800.safetensors", errno.EILSEQ),
        ("models/\udfff/model.safetensors", errno.EILSEQ),
        ("😀" * 64, errno.ENAMETOOLONG),
        ("a/" * 2048, errno.ENAMETOOLONG),
    ],
)
def test_a_path_the_system_cannot_take_is_an_os_error_naming_the_fault(
    path: str, code: int
) -> None:
    with pytest.raises(OSError) as caught:
        os_path(path)
    assert caught.value.errno == code
    assert "\n" not in str(caught.value)


def test_long_names_are_counted_in_bytes_not_characters() -> None:
    assert len(os.fsencode(EMOJI_NAME)) == 240
    assert os_path(EMOJI_NAME) == EMOJI_NAME
    assert os_path("a" * NAME_BYTE_LIMIT) == "a" * NAME_BYTE_LIMIT
    assert os_path("/".join(["a" * 200] * 20)[:PATH_BYTE_LIMIT]) is not None
    with pytest.raises(OSError, match="takes 256 bytes"):
        os_path("é" * 128)


def test_bytes_that_are_not_utf8_are_a_name_the_system_takes(tmp_path: Path) -> None:
    name = os.fsdecode(b"\xff.json")  # as Python decodes such a name from a folder or argv
    replace_file(str(tmp_path / name), [memoryview(b"{}")])
    assert os.listdir(os.fsencode(tmp_path)) == [b"\xff.json"]


@pytest.mark.parametrize("name", [EMOJI_NAME, "a" * 255, "é" * 127, "model.safetensors"])
def test_a_temporary_name_is_bounded_in_bytes_whatever_the_target(name: str) -> None:
    temporary = os.path.basename(temporary_path(os.path.join("folder", name)))
    # ".", the stem, ".", the mark, "-", a process ID of at most 10 digits, "-", 12 hex, ".tmp"
    assert len(os.fsencode(temporary)) <= TEMPORARY_STEM_BYTES + len(TEMPORARY_MARK) + 30 == 110
    assert temporary.startswith(".") and temporary.endswith(".tmp")
    assert f".{TEMPORARY_MARK}-{os.getpid()}-" in temporary


def test_a_240_byte_name_is_written_through_its_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / EMOJI_NAME
    replace_file(str(target), [memoryview(b"one"), memoryview(b"two")])
    assert target.read_bytes() == b"onetwo"
    assert os.listdir(tmp_path) == [EMOJI_NAME]


@pytest.mark.parametrize(
    ("relative", "error"),
    [
        ("", FileNotFoundError),
        ("folder", IsADirectoryError),
        ("folder/", IsADirectoryError),
        ("missing/new.bin", FileNotFoundError),
        ("file/new.bin", NotADirectoryError),
    ],
)
def test_a_path_to_write_names_a_file_in_a_folder_that_exists(
    tmp_path: Path, relative: str, error: type[OSError]
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_bytes(b"kept")
    path = "" if not relative else os.path.join(tmp_path, relative)
    with pytest.raises(error):
        writable_path(path)
    with pytest.raises(error):
        replace_file(path, [memoryview(b"new")])
    assert sorted(os.listdir(tmp_path)) == ["file", "folder"]
    assert os.listdir(tmp_path / "folder") == []
    assert (tmp_path / "file").read_bytes() == b"kept"


class FailingPath(os.PathLike[str]):
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def __fspath__(self) -> str:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[return-value]


class Text(str):
    def __str__(self) -> str:
        return "another"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.json", "a.json"),
        (pathlib.PurePosixPath("a/b.json"), "a/b.json"),
        (Text("plain"), "plain"),
        (FailingPath("given"), "given"),
        (b"a.json", None),
        (FailingPath(b"a.json"), None),
        (FailingPath(ValueError("no path")), None),
        (FailingPath(TypeError("no path")), None),
        (None, None),
        (3, None),
    ],
)
def test_a_path_is_a_str_or_a_path_like_giving_one(path: object, expected: str | None) -> None:
    found = path_text(path)
    assert found == expected
    assert found is None or type(found) is str
