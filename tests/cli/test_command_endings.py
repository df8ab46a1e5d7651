"""Every command ends in an exit status and at most one line on standard error, never a
traceback: what a command raises is reported by one handler (``llm_from_scratch.exits``), an
error of ours as its message (status 2 for a refused input, 1 for a failed run), Ctrl-C as
``interrupted`` (130), and an unexpected exception as one line that says where its traceback was
written (or, with ``--debug``, below its traceback)."""

from __future__ import annotations

import ast
import errno
import os
import pickle
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import llm_from_scratch
import llm_from_scratch.demos.ch18_token_embeddings as chapter
import llm_from_scratch.demos.ch18_token_embeddings.exercise_session as exercise_session
from llm_from_scratch.cli import run as command_line
from llm_from_scratch.errors import (
    REFUSING_RULES,
    RULES,
    AllocationError,
    CorpusError,
    FileAccessError,
    NonFiniteError,
    TableError,
    WordedError,
    WordError,
)
from llm_from_scratch.exits import FAILED, INTERRUPTED, REFUSED, status_of

from checks import raises_rule
from cli_support import run_cli

UNEXPECTED = re.compile(
    r"error: unexpected ZeroDivisionError: division by zero; this is a fault of "
    r"llm-from-scratch; its traceback is in (?P<log>\S+); put --debug first "
    r"\(llm-from-scratch --debug \.\.\.\) to print it here\n"
)


def the_demo_does(monkeypatch: pytest.MonkeyPatch, action: Callable[..., Any]) -> None:
    """Make ``llm-from-scratch ch18`` (the demo) run ``action`` instead."""
    monkeypatch.setattr(chapter, "render_demo", action)


def the_exercises_do(monkeypatch: pytest.MonkeyPatch, action: Callable[..., Any]) -> None:
    """Make ``llm-from-scratch ch18 exercises`` run ``action`` instead: a command that reports
    nothing itself, unlike the demo, which prints the errors of the layer as a refused input."""
    monkeypatch.setattr(exercise_session, "run_exercises", action)


def raising(error: BaseException) -> Callable[..., Any]:
    def action(*args: object) -> str:
        raise error

    return action


def divide_by_zero(*args: object) -> str:
    return str(1 / (len(args) - len(args)))


@pytest.fixture
def log_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder, where the log files go, for this test alone."""
    folder = tmp_path / "temporary"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# Errors of ours and of the system --------------------------------------------------------------

NO_SPACE = OSError(errno.ENOSPC, "No space left on device")
CASES = [
    pytest.param(TableError("seed.range", seed=2**80), REFUSED, id="a refused seed"),
    pytest.param(CorpusError("corpus.missing", path="corpus.txt"), REFUSED, id="a missing corpus"),
    pytest.param(
        FileAccessError("checkpoint.write", path="t.safetensors", cause=NO_SPACE),
        FAILED,
        id="a full disk",
    ),
    pytest.param(
        AllocationError("output.allocation", elements=10**15, operation="add"),
        FAILED,
        id="an allocation of ours",
    ),
    pytest.param(
        NonFiniteError("gradient.non-finite", operation="add", value=float("inf"), index=1),
        FAILED,
        id="a diverged run, though also a ValueError",
    ),
]


@pytest.mark.parametrize(("error", "status"), CASES)
def test_an_error_of_ours_is_its_message_on_one_line_with_the_status_of_its_family(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: BaseException,
    status: int,
) -> None:
    the_exercises_do(monkeypatch, raising(error))
    assert run_cli(capsys, "ch18", "exercises") == (status, "", f"error: {error}\n")
    assert status_of(error) == status


DENIED = PermissionError(errno.EACCES, "Permission denied", "out.html")
NUMPY_MEMORY = MemoryError("Unable to allocate 8.00 GiB for an array")


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (DENIED, "out.html: Permission denied"),
        (NO_SPACE, "No space left on device"),
        (NUMPY_MEMORY, "out of memory: Unable to allocate 8.00 GiB for an array"),
        (MemoryError(), "out of memory"),
    ],
)
def test_a_system_error_is_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, error: Exception, line: str
) -> None:
    the_demo_does(monkeypatch, raising(error))
    assert run_cli(capsys, "ch18") == (FAILED, "", f"error: {line}\n")


def test_what_a_message_echoes_stays_on_its_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    the_demo_does(monkeypatch, raising(CorpusError("corpus.missing", path="two\nlines.txt")))
    status, _, err = run_cli(capsys, "ch18")
    assert (status, err.count("\n")) == (REFUSED, 1)
    assert "two\\nlines.txt" in err


def test_a_usage_error_and_help_pass_through_as_argparse_ends_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run_cli(capsys, "ch18", "--no-such-option")
    assert status == 2 and err.splitlines()[-1].startswith("llm-from-scratch: error: ")
    status, out, _ = run_cli(capsys, "--help")
    assert status == 0 and "--debug" in out


# Unexpected exceptions ------------------------------------------------------------------------


def test_an_unexpected_exception_is_one_line_naming_a_log_file_that_holds_its_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, log_folder: Path
) -> None:
    the_demo_does(monkeypatch, divide_by_zero)
    status, out, err = run_cli(capsys, "ch18", "--ids", "2")
    found = UNEXPECTED.fullmatch(err)
    assert (status, out) == (FAILED, "") and found is not None, err
    log = Path(found["log"])
    assert log.parent == log_folder and log.name.startswith("llm-from-scratch-error-")
    text = log.read_text(encoding="utf-8")
    assert "command line: llm-from-scratch ch18 --ids 2\n" in text
    assert "Traceback (most recent call last):" in text
    assert "in divide_by_zero" in text and text.endswith("ZeroDivisionError: division by zero\n")


def test_with_debug_the_traceback_is_printed_above_the_line_and_no_log_is_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, log_folder: Path
) -> None:
    the_demo_does(monkeypatch, divide_by_zero)
    status, _, err = run_cli(capsys, "--debug", "ch18")
    lines = err.splitlines()
    assert status == FAILED and lines[0] == "Traceback (most recent call last):"
    assert lines[-2] == "ZeroDivisionError: division by zero"
    assert lines[-1] == (
        "error: unexpected ZeroDivisionError: division by zero; this is a fault of "
        "llm-from-scratch (its traceback is above)"
    )
    assert list(log_folder.iterdir()) == []


def test_debug_shows_the_traceback_of_an_error_of_ours_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    error = TableError("seed.range", seed=2**80)
    the_demo_does(monkeypatch, raising(error))
    status, _, err = run_cli(capsys, "--debug", "ch18")
    assert status == REFUSED and err.startswith("Traceback (most recent call last):")
    assert err.endswith(f"\nerror: {error}\n")


def test_debug_is_an_option_before_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, log_folder: Path
) -> None:
    the_demo_does(monkeypatch, divide_by_zero)
    status, _, err = run_cli(capsys, "ch18", "--debug")
    assert status == 2 and "unrecognized arguments: --debug" in err
    assert list(log_folder.iterdir()) == []


def test_an_unexpected_error_of_many_lines_is_summed_up_by_its_first_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, log_folder: Path
) -> None:
    text = "\n\nIMPORTANT: PLEASE READ THIS\n" + "advice " * 100
    the_exercises_do(monkeypatch, raising(RuntimeError(text)))
    status, _, err = run_cli(capsys, "ch18", "exercises")
    assert status == FAILED and err.count("\n") == 1
    assert err.startswith("error: unexpected RuntimeError: IMPORTANT: PLEASE READ THIS; this is ")
    (log,) = log_folder.iterdir()
    assert "advice " * 100 in log.read_text(encoding="utf-8")
    long = "x" * 500
    the_exercises_do(monkeypatch, raising(RuntimeError(long)))
    _, _, err = run_cli(capsys, "ch18", "exercises")
    assert f"unexpected RuntimeError: {'x' * 197}...; this is a fault" in err


def test_a_log_file_that_cannot_be_written_is_said_on_the_same_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    the_demo_does(monkeypatch, divide_by_zero)
    status, _, err = run_cli(capsys, "ch18")
    assert status == FAILED and err.count("\n") == 1
    assert "its traceback could not be written to a log file (No such file or directory)" in err
    assert err.endswith("; put --debug first (llm-from-scratch --debug ...) to print it here\n")


# Ctrl-C inside the process ----------------------------------------------------------------------


def ctrl_c() -> None:
    """Send this process Ctrl-C and give its handler the next statements to run in."""
    os.kill(os.getpid(), signal.SIGINT)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.001)
    pytest.fail("the Ctrl-C was not delivered")


def test_ctrl_c_during_a_command_is_one_line_and_status_130_and_the_handler_comes_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    the_demo_does(monkeypatch, lambda *args: ctrl_c())
    hook = sys.unraisablehook
    assert run_cli(capsys, "ch18") == (INTERRUPTED, "", "error: interrupted\n")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook


def test_an_error_a_library_makes_of_the_interruption_is_reported_as_the_interruption(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted_import(*args: object) -> str:
        try:
            ctrl_c()
        except KeyboardInterrupt as interruption:  # as NumPy does when its import is cut
            raise ImportError("Importing the numpy C-extensions failed.") from interruption
        return ""

    the_demo_does(monkeypatch, interrupted_import)
    assert run_cli(capsys, "ch18") == (INTERRUPTED, "", "error: interrupted\n")


def test_a_second_ctrl_c_while_the_command_cleans_up_is_ignored(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cleaned = []

    def cleaning_up(*args: object) -> str:
        try:
            ctrl_c()
        finally:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the second Ctrl-C arrives here and must not cut the clean-up
            cleaned.append(True)
        return ""

    the_demo_does(monkeypatch, cleaning_up)
    assert run_cli(capsys, "ch18") == (INTERRUPTED, "", "error: interrupted\n")
    assert cleaned == [True]


class RaisesCtrlCWhenCollected:
    """An object whose destructor takes Ctrl-C: Python cannot raise out of a destructor."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):  # statements for the handler to run in, inside the destructor
            pass


def test_an_interruption_lost_in_a_destructor_is_raised_again_after_it_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = []

    def collecting(*args: object) -> str:
        RaisesCtrlCWhenCollected()  # collected at once: Ctrl-C inside __del__
        steps.append("after the destructor")  # which swallowed the first interruption
        time.sleep(60)  # the interruption raised again wakes this wait
        steps.append("slept")
        return "not interrupted\n"

    the_demo_does(monkeypatch, collecting)
    assert run_cli(capsys, "ch18") == (INTERRUPTED, "", "error: interrupted\n")
    assert steps == ["after the destructor"]


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def ignored(*args: object) -> str:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        return "done\n"

    the_demo_does(monkeypatch, ignored)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert run_cli(capsys, "ch18") == (0, "done\n", "")
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


# One meaning per status, one place that prints -------------------------------------------------

SOURCE = Path(llm_from_scratch.__file__).parent


def modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(SOURCE)), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(SOURCE.rglob("*.py"))
    ]


def test_each_status_is_one_constant_declared_once_in_exits() -> None:
    declared = [
        (name, target.id)
        for name, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id in {"REFUSED", "FAILED", "INTERRUPTED"}
    ]
    assert sorted(declared) == [
        ("exits.py", "FAILED"), ("exits.py", "INTERRUPTED"), ("exits.py", "REFUSED"),
    ]  # fmt: skip
    assert (REFUSED, FAILED, INTERRUPTED) == (2, 1, 130)


def test_no_command_prints_an_error_line_of_its_own() -> None:
    """Only ``exits`` writes ``error: ...``; besides, the process before the command line is
    imported (Ctrl-C then)."""

    def starts_an_error_line(node: ast.AST) -> bool:
        first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
        text = first.value if isinstance(first, ast.Constant) else None
        return isinstance(text, str) and text.startswith("error: ")

    printing = sorted(
        {name for name, tree in modules() for node in ast.walk(tree) if starts_an_error_line(node)}
    )
    assert printing == ["__main__.py", "exits.py"]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (NonFiniteError("tensor.overflow", value=10**4000, position=0, dtype="float64"), REFUSED),
        (NonFiniteError("seed.non-finite", value=float("nan"), index=0), REFUSED),
        (NonFiniteError("gradient.non-finite", operation="add", value=1e999, index=0), FAILED),
        (
            FileAccessError("pretrained.missing-file", role="table", path="t", install="make"),
            REFUSED,
        ),
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "t.txt"), REFUSED),
        (IsADirectoryError(errno.EISDIR, "Is a directory", "out"), REFUSED),
        (OSError(errno.EIO, "Input/output error", "/proc/version"), FAILED),
        (PermissionError(errno.EACCES, "Permission denied", "out.html"), FAILED),
        (FileAccessError("checkpoint.write", path="t", cause=NO_SPACE), FAILED),
        (FileAccessError("checkpoint.read", path="t", cause=FileNotFoundError(2, "No")), REFUSED),
        (WordedError("прервано", KeyboardInterrupt()), INTERRUPTED),
        (WordedError("слово", WordError("word.empty", word=" ")), REFUSED),
    ],
    ids=lambda value: getattr(value, "rule", type(value).__name__),
)
def test_the_status_of_an_error_is_the_one_docs_errors_md_gives(
    error: BaseException, status: int
) -> None:
    assert status_of(error) == status
    assert all(rule in RULES for rule in REFUSING_RULES)


@pytest.mark.parametrize(("digits", "option"), [("9" * 4000, "--upstream"), ("9" * 4000, "--ids")])
def test_an_input_value_that_overflows_is_a_refused_input(
    capsys: pytest.CaptureFixture[str], digits: str, option: str
) -> None:
    value = f"[[1,{digits}]]" if option == "--upstream" else digits
    ids = ["--ids", "[1]"] if option == "--upstream" else []
    status, out, err = run_cli(capsys, "ch18", "trace", *ids, option, value)
    assert (status, out) == (REFUSED, "") and err.count("\n") == 1 and err.startswith("error: ")


def test_a_figure_the_system_fails_to_write_is_a_failed_run_that_names_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    written = [path for path in ("/proc/version", "/dev/full") if os.path.exists(path)]
    if not written:
        pytest.skip("needs /proc/version or /dev/full")
    for path in written:
        status, out, err = run_cli(capsys, "ch18", "figure", "--output", path)
        assert (status, out) == (FAILED, "") and err.startswith(f"error: {path}: "), err
        assert err.count("\n") == 1


def test_a_figure_whose_folder_is_missing_is_a_refused_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    output = tmp_path / "missing" / "figure.html"
    status, _, err = run_cli(capsys, "ch18", "figure", "--output", str(output))
    assert (status, err) == (REFUSED, f"error: {output}: no folder {str(output.parent)!r}\n")


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_command_worded_in_its_language_ends_with_the_status_of_what_it_words(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lang: str
) -> None:
    table, tokenizer = tmp_path / "no.safetensors", tmp_path / "tokenizer.json"
    args = ["ch18", "neighbours", "king", "--table", str(table), "--tokenizer", str(tokenizer)]
    status, out, err = run_cli(capsys, *args, "--lang", lang)
    assert (status, out) == (REFUSED, "") and err.count("\n") == 1 and str(table) in err
    with raises_rule(FileAccessError, "pretrained.missing-file", role="table", path=str(table)):
        command_line(args)  # English: the error itself, for the one printer to word
    with pytest.raises(WordedError) as caught:
        command_line([*args, "--lang", "ru"])
    assert caught.value.error.rule == "pretrained.missing-file"
    assert err == f"error: {caught.value if lang == 'ru' else caught.value.error}\n"


def test_a_worded_error_pickles_with_the_error_it_words() -> None:
    worded = WordedError("прервано", WordError("word.empty", word=" "))
    again = pickle.loads(pickle.dumps(worded))
    assert (str(again), again.error.rule, again.__cause__ is again.error) == (
        "прервано", "word.empty", True,
    )  # fmt: skip
