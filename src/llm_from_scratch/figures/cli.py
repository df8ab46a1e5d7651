"""The command ``llm-from-scratch ch18 figure``: write the token-embedding figure.

The top-level parser imports this module while it is being built, so it imports nothing
heavy at module level: the parser and renderer are imported inside :func:`run`. A fresh trace
is computed by the caller (the chapter demo) and handed in as text; the figure reads nothing
else. A saved trace is read by the bounded reader of :mod:`llm_from_scratch.files`, the figure
written by its path rules; every error is one line on standard error with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

from llm_from_scratch.files import (
    FILE_BYTE_LIMIT,
    is_too_large,
    one_line,
    read_file,
    read_stream,
    write_file,
)

__all__ = ["TRACE_BYTE_LIMIT", "configure_parser", "run"]

TRACE_BYTE_LIMIT: Final = FILE_BYTE_LIMIT
"""The most bytes read from a saved trace, :data:`~llm_from_scratch.files.FILE_BYTE_LIMIT`
(1 MiB; the chapter's trace is about 2 KB); one more byte makes the file too large."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the figure options to the ``ch18 figure`` subparser.

    Args:
        parser: the subparser to extend with ``--lang``, ``--output`` and ``--trace``.
    """
    parser.add_argument(
        "--lang",
        choices=("en", "ru"),
        default="en",
        help="language of every label in the figure (default: en)",
    )
    parser.add_argument(
        "--output",
        metavar="PATH",
        type=Path,
        default=None,
        help="write the HTML document to PATH instead of standard output",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        default=None,
        help=(
            "draw a saved token-embeddings-v1 trace (as printed by 'llm-from-scratch ch18 "
            "trace'; '-' reads standard input) instead of computing a fresh one"
        ),
    )


def run(args: argparse.Namespace, fresh_trace: str | None = None) -> int:
    """Render the figure as the parsed arguments ask.

    Args:
        args: the namespace with ``lang``, ``output`` and ``trace`` from
            :func:`configure_parser`.
        fresh_trace: the trace text to draw when ``args.trace`` is not given.

    Returns:
        0 on success; 2 when there is no trace, the trace file cannot be read or is not a
        valid trace, or the output cannot be written (the reason goes to standard error as
        one line, ``error: ...``).
    """
    from llm_from_scratch.figures.token_embeddings import (
        LabelError,
        TraceFormatError,
        parse_trace,
        render_figure,
    )

    if args.trace is None:
        if fresh_trace is None:
            return _fail("no trace to draw: pass --trace FILE")
        text = fresh_trace
    else:
        try:
            text = _read_trace(args.trace)
        except (OSError, ValueError) as error:  # TraceFormatError and UnicodeDecodeError too
            return _fail(f"cannot read trace file {args.trace}: {error}")
    try:
        html = render_figure(parse_trace(text), args.lang)
    except (TraceFormatError, LabelError) as error:
        return _fail(str(error))
    try:
        _write(html, args.output)
    except OSError as error:
        where = "standard output" if args.output is None else args.output
        return _fail(f"cannot write {where}: {error}")
    return 0


def _read_trace(source: str) -> str:
    """Return the trace text, bytes decoded as UTF-8 with line endings untouched.

    At most ``TRACE_BYTE_LIMIT + 1`` bytes are read (:func:`~llm_from_scratch.files.read_file`,
    or standard input for ``-``); a longer input is a ``TraceFormatError`` (record ``TRACE``,
    field ``size``).
    """
    from llm_from_scratch.figures.trace_parser import TraceFormatError

    try:
        if source == "-":
            data = read_stream(sys.stdin.buffer, TRACE_BYTE_LIMIT)
        else:
            data = read_file(source, TRACE_BYTE_LIMIT)
    except OSError as error:
        if not is_too_large(error):
            raise
        detail = f"at most {TRACE_BYTE_LIMIT} bytes, found more"
        raise TraceFormatError("TRACE", "size", detail) from error
    return data.decode("utf-8")


def _write(html: str, output: Path | None) -> None:
    data = html.encode("utf-8")
    if output is not None:
        write_file(str(output), data)
        return
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _fail(message: str) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return 2
