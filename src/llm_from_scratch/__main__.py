"""The process of the command line: ``python -m llm_from_scratch`` and the console script
``llm-from-scratch`` (:func:`main`). Ctrl-C is handled from the first statement to the exit:
``error: interrupted`` and status 130 until the command runs, then
:func:`llm_from_scratch.exits.run_command`'s handling; once the command has ended it is ignored
and standard output is flushed (the rest dropped quietly when its reader went away, ``| head``).
"""

# The C module under `signal`, which the interpreter loads before any module of ours: installing
# from it imports nothing (`signal` imports `enum`), so Ctrl-C is handled from this statement on.
import _signal  # type: ignore[import-not-found]
import sys


def _interrupted_at_start(signum: int, frame: object) -> None:
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    try:
        sys.stderr.write("error: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # standard error is closed: the status says it alone
        pass
    raise SystemExit(130)


if _signal.getsignal(_signal.SIGINT) != _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _interrupted_at_start)

# Only now the command line, and through it everything else.
import contextlib  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402

from llm_from_scratch.cli import main as command_line  # noqa: E402


def main() -> int:
    """Run the command line on ``sys.argv`` and return its exit status, with Ctrl-C ignored and
    standard output flushed once the command has ended (``SystemExit`` from ``--help`` or a
    usage error too)."""
    try:
        return command_line()
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        _flush_standard_output()


def _flush_standard_output() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # the reader closed the pipe: leave nothing for the
        with contextlib.suppress(OSError, ValueError):  # interpreter's last flush to fail on
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
