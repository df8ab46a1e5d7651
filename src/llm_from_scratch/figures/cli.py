"""The command ``llm-from-scratch ch18 figure``: draw a trace as the token-embedding figure (the
parser and renderer are imported inside :func:`run`, as the command line imports this module)."""

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

TRACE_BYTE_LIMIT: Final = FILE_BYTE_LIMIT
"""The most bytes read from a saved trace (1 MiB; the chapter's is about 2 KB)."""


def add_language(parser: argparse.ArgumentParser) -> None:
    """Add ``--lang``, the language of what a ``ch18`` command prints or draws (absent unless
    given, so that ``ch18 --lang ru VIEW`` and ``ch18 VIEW --lang ru`` both work: read it with
    :func:`language`)."""
    parser.add_argument(
        "--lang",
        choices=("en", "ru"),
        default=argparse.SUPPRESS,
        help="language of the text (default: en)",
    )


def language(args: argparse.Namespace) -> str:
    """The ``--lang`` of parsed arguments, ``en`` when not given."""
    lang: str = getattr(args, "lang", "en")
    return lang


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add ``--lang``, ``--output`` and ``--trace`` to the ``ch18 figure`` parser."""
    add_language(parser)
    parser.add_argument(
        "--output",
        metavar="PATH",
        type=Path,
        default=None,
        help="write the HTML page to PATH instead of standard output",
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
    """Draw ``args.trace`` (else ``fresh_trace``) to ``args.output``: 0, or 2 and an error line."""
    from llm_from_scratch.errors import FormatError
    from llm_from_scratch.figures.render import render_figure
    from llm_from_scratch.figures.trace_parser import parse_trace

    if args.trace is None:
        if fresh_trace is None:
            return _fail("no trace to draw: pass --trace FILE")
        text = fresh_trace
    else:
        try:
            text = _read_trace(args.trace)
        except (OSError, ValueError) as error:  # FormatError and UnicodeDecodeError too
            return _fail(f"cannot read trace file {args.trace}: {error}")
    try:
        html = render_figure(parse_trace(text), language(args))
    except FormatError as error:
        return _fail(str(error))
    try:
        _write(html, args.output)
    except OSError as error:
        where = "standard output" if args.output is None else args.output
        return _fail(f"cannot write {where}: {error}")
    return 0


def _read_trace(source: str) -> str:
    """The trace text (``-``: standard input), at most :data:`TRACE_BYTE_LIMIT` bytes of UTF-8."""
    from llm_from_scratch.traces.token_embeddings_v1 import trace_error

    try:
        if source == "-":
            data = read_stream(sys.stdin.buffer, TRACE_BYTE_LIMIT)
        else:
            data = read_file(source, TRACE_BYTE_LIMIT)
    except OSError as error:
        if not is_too_large(error):
            raise
        detail = f"at most {TRACE_BYTE_LIMIT} bytes, found more"
        raise trace_error("TRACE", "size", detail) from error
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
