"""``ch18 figure --trace`` reads a bounded number of bytes: a trace is small, so an input of more
than ``TRACE_BYTE_LIMIT`` bytes is refused on one line with exit status 2, after reading at most
one byte past the limit."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from llm_from_scratch.cli import main
from llm_from_scratch.figures.cli import TRACE_BYTE_LIMIT

from checks import within_seconds
from conftest import GOLDEN, unavailable

SPEC_TRACE = (GOLDEN / "ch18_trace.txt").read_bytes()


class EndlessZeros(io.RawIOBase):
    """A byte stream that never ends and counts the bytes handed out."""

    def __init__(self) -> None:
        self.handed_out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        buffer[:] = bytes(len(buffer))
        self.handed_out += len(buffer)
        return len(buffer)


class StandardInput:
    def __init__(self, raw: io.RawIOBase) -> None:
        self.buffer = raw


def test_an_endless_standard_input_is_refused_after_one_byte_past_the_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = EndlessZeros()
    monkeypatch.setattr("sys.stdin", StandardInput(stream))
    with within_seconds(1.0):
        status = main(["ch18", "figure", "--trace", "-"])
    err = capsys.readouterr().err
    assert status == 2
    assert err == (
        f"error: TRACE size: at most {TRACE_BYTE_LIMIT} bytes, found more in standard input\n"
    )
    assert stream.handed_out == TRACE_BYTE_LIMIT + 1


def test_dev_zero_is_refused_at_once_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/zero"):
        unavailable("needs a /dev/zero device", ci_provides=True)
    with within_seconds(1.0):
        status = main(["ch18", "figure", "--trace", "/dev/zero"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "TRACE size" in err


def test_a_file_just_over_the_limit_is_refused_and_the_spec_trace_is_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    too_long = tmp_path / "long.txt"
    too_long.write_bytes(SPEC_TRACE + b"\n" * (TRACE_BYTE_LIMIT + 1 - len(SPEC_TRACE)))
    assert main(["ch18", "figure", "--trace", str(too_long)]) == 2
    assert "TRACE size" in capsys.readouterr().err
    spec = tmp_path / "spec.txt"
    spec.write_bytes(SPEC_TRACE)
    assert main(["ch18", "figure", "--trace", str(spec)]) == 0
    assert len(SPEC_TRACE) < TRACE_BYTE_LIMIT
