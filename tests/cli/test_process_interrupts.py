"""Ctrl-C and faults in a real process of ``llm-from-scratch`` (the console script) and of
``python -m llm_from_scratch``: from the first statement of ``llm_from_scratch.__main__`` to the
exit, Ctrl-C is one line, ``error: interrupted``, with status 130, whether it comes while the
command line is imported, while NumPy is, or in the middle of a command; an unexpected exception
is one line that names the log file holding its traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import require_pretrained

SCRIPT = Path(sys.executable).with_name("llm-from-scratch")
ENTRIES = {
    "console script": [str(SCRIPT)],
    "python -m": [sys.executable, "-m", "llm_from_scratch"],
}
INTERRUPTED = (130, "error: interrupted\n")


def entry(name: str) -> list[str]:
    if name == "console script" and not SCRIPT.exists():
        pytest.skip(f"no console script beside {sys.executable}: pip install -e .")
    return ENTRIES[name]


@contextmanager
def started(command: list[str], **options: object) -> Iterator[subprocess.Popen[bytes]]:
    """The process, with standard input held open (so that the exercises wait on it), killed
    if the test leaves it running."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,  # type: ignore[call-overload]
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def ended(process: subprocess.Popen[bytes], given: bytes | None = None) -> tuple[int, str, str]:
    out, err = process.communicate(given, timeout=120)
    return process.returncode, out.decode(), err.decode()


def before_our_first_statement(status: int, err: str) -> bool:
    """The interpreter's own Ctrl-C, before the first statement of ``llm_from_scratch.__main__``:
    the process ended by the signal or by the interpreter's traceback, which runs through none
    of the package's files (only the console script's import line and the import system)."""
    return status in (-signal.SIGINT, 1) and "llm_from_scratch/" not in err.replace("\\", "/")


@pytest.mark.parametrize("name", ENTRIES)
@pytest.mark.parametrize("delay", [0.0, 0.005, 0.02, 0.05])
def test_ctrl_c_right_after_launch_is_one_line_and_130_once_our_first_statement_runs(
    name: str, delay: float
) -> None:
    with started([*entry(name), "ch18", "exercises"]) as process:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        status, out, err = ended(process)
    assert (status, err) == INTERRUPTED or before_our_first_statement(status, err), (status, err)
    assert out == ""


@pytest.mark.parametrize("name", ENTRIES)
def test_ctrl_c_a_tenth_of_a_second_after_launch_is_one_line_and_130(name: str) -> None:
    with started([*entry(name), "ch18", "exercises"]) as process:
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        status, _, err = ended(process)
    assert (status, err) == INTERRUPTED


def mapped(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # the process has ended
        return True


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/PID/maps (Linux)")
@pytest.mark.parametrize("name", ENTRIES)
def test_ctrl_c_while_numpy_is_imported_is_one_line_and_130(name: str) -> None:
    with started([*entry(name), "ch18", "exercises"]) as process:
        deadline = time.monotonic() + 60
        while not mapped(process.pid, "_multiarray_umath") and time.monotonic() < deadline:
            time.sleep(0.0005)
        process.send_signal(signal.SIGINT)  # NumPy's extension is loaded, its import goes on
        status, _, err = ended(process)
    assert (status, err) == INTERRUPTED


def test_ctrl_c_while_a_command_waits_is_one_line_and_130() -> None:
    with started([*entry("console script"), "ch18", "exercises"]) as process:
        assert process.stdout is not None
        first = process.stdout.readline()  # the session has begun: it asks, then waits
        process.send_signal(signal.SIGINT)
        status, out, err = ended(process)
    assert first == b"Chapter 18: predict, then check\n"
    assert (status, err) == INTERRUPTED
    assert "Traceback" not in out


@pytest.mark.parametrize("delay", [0.1, 0.3, 0.5])
def test_ctrl_c_while_the_neighbours_load_the_table_is_one_line_and_130(delay: float) -> None:
    require_pretrained()
    with started([*entry("console script"), "ch18", "neighbours", "king"]) as process:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        status, out, err = ended(process)
    if status == 0:  # done before the signal came: the whole answer, nothing on standard error
        assert err == "" and out.startswith("Table ")
    else:
        assert (status, err, out) == (*INTERRUPTED, "")


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it() -> None:
    def ignore_ctrl_c() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with started([*entry("console script"), "ch18", "exercises"], preexec_fn=ignore_ctrl_c) as p:
        assert p.stdout is not None
        p.stdout.readline()
        p.send_signal(signal.SIGINT)
        time.sleep(0.2)
        assert p.poll() is None  # still waiting for an answer
        status, _, err = ended(p, b"")  # the end of the input ends the session
    assert status == 1 and err == ""  # no answer given: not every answer is right


FAULTY = (
    "import sys, llm_from_scratch.demos.ch18_token_embeddings as chapter\n"
    "def faulty(*args):\n"
    "    return str(1 / 0)\n"
    "chapter.render_demo = faulty\n"
    "from llm_from_scratch.__main__ import main\n"
    "sys.argv[1:] = {words!r}\n"
    "sys.exit(main())\n"
)


def test_an_unexpected_exception_in_the_process_is_one_line_and_a_log_file(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FAULTY.format(words=["ch18"])],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    found = re.fullmatch(
        r"error: unexpected ZeroDivisionError: division by zero; this is a fault of "
        r"llm-from-scratch; its traceback is in (\S+); put --debug first "
        r"\(llm-from-scratch --debug \.\.\.\) to print it here\n",
        result.stderr,
    )
    assert found is not None, result.stderr
    log = Path(found[1])
    assert log.parent == tmp_path
    assert "ZeroDivisionError: division by zero" in log.read_text(encoding="utf-8")


def test_with_debug_the_process_prints_the_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FAULTY.format(words=["--debug", "ch18"])],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert result.stderr.splitlines()[-1].endswith("(its traceback is above)")
    assert list(tmp_path.iterdir()) == []


def test_a_reader_that_goes_away_is_one_line_and_no_traceback() -> None:
    with started([*entry("console script"), "ch18", "trace"]) as process:
        assert process.stdout is not None
        process.stdout.close()  # before anything was written
        status, _, err = ended(process)
    assert (status, err) == (1, "error: Broken pipe\n")
