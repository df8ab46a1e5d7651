"""How a command of ``llm-from-scratch`` ends: an exit status and at most one line on standard
error, never a traceback. :func:`run_command` runs a command and is the one place that writes
``error: ...`` (escaped by :func:`llm_from_scratch.files.one_line`), with the status
:func:`status_of` gives: 2 a refused input, 1 a failed run or a fault of the program (its
traceback in a log file), 130 Ctrl-C (docs/errors.md, "What a command raises", "Signals").
``SystemExit`` passes through (argparse's ``--help`` and usage errors).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Final, TextIO

from llm_from_scratch.errors import REFUSING_RULES, LlmError, WordedError
from llm_from_scratch.files import one_line

__all__ = ["FAILED", "INTERRUPTED", "REFUSED", "run_command", "status_of"]

#: Exit statuses: a refused input, a failed run, an interrupted one (128 + SIGINT).
REFUSED: Final = 2
FAILED: Final = 1
INTERRUPTED: Final = 130
#: The built-in classes whose errors of ours are a refused input, unless also one of FAILING.
REFUSING: Final = (ValueError, TypeError, LookupError, ImportError)
FAILING: Final = (OSError, MemoryError, ArithmeticError)
#: The ``errno`` of an ``OSError`` (the system's, or the cause of ours) for a path that names
#: nothing a command could use: a refused input, where any other (permission, an I/O error, a
#: full disk) is a failed run.
UNUSABLE_PATH: Final = frozenset(
    {errno.EINVAL, errno.EILSEQ, errno.ENAMETOOLONG, errno.EISDIR, errno.ENOENT, errno.ENOTDIR}
)
#: How long after a Ctrl-C was lost in a callback or a destructor it is raised again.
RESIGNAL_SECONDS: Final = 0.01
#: The most characters of an unexpected error's text its line repeats.
SUMMARY_LENGTH: Final = 200
#: The name of the log files of unexpected errors, in the temporary folder.
LOG_PREFIX: Final = "llm-from-scratch-error-"


def status_of(error: BaseException) -> int:
    """The exit status :func:`run_command` gives for ``error``: an error of ours that is a
    ``ValueError``, ``TypeError``, ``LookupError`` or ``ImportError``, a refused input, is 2, but
    one also an ``OSError``, ``MemoryError`` or ``ArithmeticError`` is 1, unless its rule is one of
    :data:`~llm_from_scratch.errors.REFUSING_RULES`; a :class:`~llm_from_scratch.errors.WordedError`
    has the status of the error it words; an ``OSError`` is 1, but 2 for a path that names nothing
    a command could use (:data:`UNUSABLE_PATH`); Ctrl-C is 130; anything else 1.

    Example:
        >>> from llm_from_scratch.errors import NonFiniteError, TableError
        >>> refused = TableError("seed.range", seed=2**80)
        >>> diverged = NonFiniteError("gradient.non-finite", operation="add", value=1e999, index=0)
        >>> overflowing = NonFiniteError("tensor.overflow", value=10**400, position=0, dtype="f8")
        >>> status_of(refused), status_of(diverged), status_of(OSError(28, "No space left"))
        (2, 1, 1)
        >>> status_of(overflowing), status_of(WordedError("прервано", KeyboardInterrupt()))
        (2, 130)
        >>> status_of(FileNotFoundError(2, "No such file", "t.txt")), status_of(OSError(5, "EIO"))
        (2, 1)
    """
    if isinstance(error, WordedError):
        return status_of(error.error)
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(error, LlmError) and error.rule in REFUSING_RULES:
        return REFUSED
    if isinstance(error, OSError) and _errno_of(error) in UNUSABLE_PATH:
        return REFUSED
    if isinstance(error, LlmError) and isinstance(error, REFUSING):
        return FAILED if isinstance(error, FAILING) else REFUSED
    return FAILED


def _errno_of(error: OSError) -> int | None:
    """The ``errno`` of ``error``, or of the first ``OSError`` among its causes that has one."""
    found: object = error
    while isinstance(found, OSError):
        if found.errno is not None:
            return found.errno
        found = found.__cause__ or getattr(found, "cause", None)
    return None


def run_command(
    command: Callable[[], int], *, debug: bool = False, words: Sequence[str] = ()
) -> int:
    """Run ``command`` and return its status, or report what it raised as one line and return
    :func:`status_of` it; ``SystemExit`` passes through. An error raised after a Ctrl-C is
    reported as the interruption it is (NumPy interrupted while it imports raises an
    ``ImportError``). ``debug`` prints a reported error's traceback above its line; ``words``,
    the command line, go into the log file of an unexpected error."""
    ending = _Ending()
    with _interrupts_raised_once(ending):
        try:
            try:
                status = command()
                sys.stdout.flush()  # a write that fails at the end is the command's error too
            except SystemExit:
                raise
            except BaseException as error:
                ending.ended = True
                return _report(error, _reported(error, ending.interruption), debug, words)
            ending.ended = True
            return status
        except KeyboardInterrupt as interruption:  # one that came as the command ended
            return _report(interruption, interruption, debug, words)


def _reported(error: BaseException, interruption: KeyboardInterrupt | None) -> BaseException:
    """The interruption, if a Ctrl-C came and the command did not word it; else ``error``."""
    if interruption is None:
        return error
    worded = isinstance(error, WordedError) and isinstance(error.error, KeyboardInterrupt)
    return error if worded else interruption


class _Ending:
    """Whether the command has ended, and the interruption a Ctrl-C raised, if one did."""

    ended = False
    interruption: KeyboardInterrupt | None = None
    resignal: threading.Timer | None = None


@contextlib.contextmanager
def _interrupts_raised_once(ending: _Ending) -> Iterator[None]:
    """Inside the block, the first Ctrl-C raises ``KeyboardInterrupt`` if the command has not
    ended, and every other one is ignored; one lost in a callback from C code or a destructor
    (``sys.unraisablehook``) is raised again :data:`RESIGNAL_SECONDS` later. Only in the main
    thread, and only when Ctrl-C is not ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if not ending.ended:
            ending.ended = True
            ending.interruption = KeyboardInterrupt()
            raise ending.interruption

    reporter = sys.unraisablehook

    def unraisable(lost: sys.UnraisableHookArgs) -> None:
        if ending.interruption is None or lost.exc_value is not ending.interruption:
            reporter(lost)
            return
        ending.ended, ending.interruption = False, None
        # Signalled again a moment later from another thread, once this hook has returned: from
        # here, the handler would run inside the hook and the interruption be lost again.
        ending.resignal = threading.Timer(RESIGNAL_SECONDS, _signal_main_thread)
        ending.resignal.start()

    signal.signal(signal.SIGINT, interrupt)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        if ending.resignal is not None:  # not after the block, where another handler is
            ending.resignal.cancel()
        sys.unraisablehook = reporter
        signal.signal(signal.SIGINT, previous)


def _signal_main_thread() -> None:
    """Ctrl-C to the main thread itself, which wakes it from a wait (a sleep, a read)."""
    main = threading.main_thread().ident
    if main is not None:
        signal.pthread_kill(main, signal.SIGINT)


def _report(
    raised: BaseException, reported: BaseException, debug: bool, words: Sequence[str]
) -> int:
    """Write the line of ``reported`` (with ``debug``, ``raised``'s traceback above); its status."""
    if debug:
        _write(sys.stderr, _traceback(raised))
    _write(sys.stderr, f"error: {one_line(_message(reported, debug, words))}\n")
    return status_of(reported)


def _message(error: BaseException, debug: bool, words: Sequence[str]) -> str:
    """The line that reports ``error`` (after ``error:``)."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, LlmError | WordedError):
        return str(error)
    if isinstance(error, OSError):
        reason = error.strerror or str(error) or type(error).__name__
        return reason if error.filename is None else f"{error.filename}: {reason}"
    if isinstance(error, MemoryError):
        return f"out of memory: {error}" if str(error) else "out of memory"
    fault = f"unexpected {type(error).__name__}: {_summary(error)}; this is a fault of "
    fault += "llm-from-scratch"
    if debug:
        return f"{fault} (its traceback is above)"
    try:
        log = _write_log(error, words)
    except OSError as log_error:
        reason = log_error.strerror or str(log_error)
        where = f"its traceback could not be written to a log file ({reason})"
    else:
        where = f"its traceback is in {log}"
    return f"{fault}; {where}; put --debug first (llm-from-scratch --debug ...) to print it here"


def _summary(error: BaseException) -> str:
    """The error's first line that is not blank, at most :data:`SUMMARY_LENGTH` characters."""
    try:
        text = str(error)
    except Exception:  # a message that cannot even be made: the log file has the traceback
        text = ""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= SUMMARY_LENGTH else f"{line[: SUMMARY_LENGTH - 3]}..."


def _write_log(error: BaseException, words: Sequence[str]) -> str:
    """A new log file in the temporary folder: the command line and the traceback."""
    import tempfile  # only an unexpected error needs it

    from llm_from_scratch import __version__

    descriptor, path = tempfile.mkstemp(prefix=LOG_PREFIX, suffix=".log")
    with os.fdopen(descriptor, "w", encoding="utf-8", errors="backslashreplace") as log:
        log.write(f"llm-from-scratch {__version__}, Python {sys.version.split()[0]}\n")
        shown = " ".join(["llm-from-scratch", *map(str, words)])
        log.write(f"command line: {shown}\n\n")
        log.write(_traceback(error))
    return path


def _write(stream: TextIO, text: str) -> None:
    """Write and flush; a stream that cannot be written (closed, a reader gone) is left so."""
    with contextlib.suppress(OSError, ValueError):
        stream.write(text)
        stream.flush()


def _traceback(error: BaseException) -> str:
    import traceback  # only an unexpected error shows one: not loaded before

    return "".join(traceback.format_exception(error))
