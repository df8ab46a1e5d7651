"""``llm-from-scratch ARGV`` in a process that kills itself (SIGKILL) just before the MOMENT-th
call of ``llm_from_scratch.files`` into the file system (``os.open``, ``write``, ``fsync``,
``close``, ``replace``, ``link``, ``unlink``), as a power cut or the OOM killer would; MOMENT 0
never. Each call is first logged to LOG, one line ``function name`` (the base name of the path,
or the descriptor's number), so that a run with MOMENT 0 lists every moment there is.

Usage: ``python tests/train/killed_at_moment.py MOMENT LOG ARGV...``
(for ``tests/train/test_killed_runs.py``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import llm_from_scratch.files as files
from llm_from_scratch.cli import main

WATCHED = ("open", "write", "fsync", "close", "replace", "link", "unlink")


class KilledAtMoment:
    """``os``, as ``llm_from_scratch.files`` sees it: the watched functions log, then count."""

    def __init__(self, moment: int, log: int) -> None:
        self.moment, self.log, self.calls = moment, log, 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        return self.watched(name, real) if name in WATCHED else real

    def watched(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else ""
            shown = first if isinstance(first, int) else os.path.basename(str(first))
            os.write(self.log, f"{name} {shown}\n".encode("utf-8", "backslashreplace"))
            self.calls += 1
            if self.calls == self.moment:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return call


if __name__ == "__main__":
    moment, log_path, *argv = sys.argv[1:]
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    files.os = KilledAtMoment(int(moment), log)  # type: ignore[assignment]
    raise SystemExit(main(argv))
