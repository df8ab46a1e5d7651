"""The command ``llm-from-scratch ch18 figure``: draw a trace as the token-embedding figure (its
options are declared in :mod:`llm_from_scratch.cli`; the parser and renderer of the trace are
imported inside :func:`run`, as the command line imports this module)."""

from __future__ import annotations

import argparse
import sys
from typing import Final

from llm_from_scratch.files import (
    FILE_BYTE_LIMIT,
    about,
    is_too_large,
    read_file,
    read_stream,
)

TRACE_BYTE_LIMIT: Final = FILE_BYTE_LIMIT
"""The most bytes read from a saved trace (1 MiB; the chapter's is about 2 KB)."""


def language(args: argparse.Namespace) -> str:
    """The ``--lang`` of parsed arguments (declared in :mod:`llm_from_scratch.cli`), ``en`` when
    not given."""
    lang: str = getattr(args, "lang", "en")
    return lang


def run(args: argparse.Namespace, fresh_trace: str | None = None) -> int:
    """Draw ``args.trace`` (else ``fresh_trace``) to ``args.output`` (else standard output): 0.

    Raises:
        OptionError: ``figure.no-trace``, neither a trace file nor a fresh trace.
        FormatError: ``trace.format``, a trace that breaks its grammar, is not UTF-8 or is over
            :data:`TRACE_BYTE_LIMIT` bytes.
        OSError: the trace cannot be read or the page written, about that file.
    """
    from llm_from_scratch.errors import OptionError
    from llm_from_scratch.figures.render import render_figure, write_page
    from llm_from_scratch.figures.trace_parser import parse_trace

    if args.trace is None:
        if fresh_trace is None:
            raise OptionError("figure.no-trace")
        text = fresh_trace
    else:
        text = _read_trace(args.trace)
    write_page(render_figure(parse_trace(text), language(args)), args.output)
    return 0


def _read_trace(source: str) -> str:
    """The trace text (``-``: standard input), at most :data:`TRACE_BYTE_LIMIT` bytes of UTF-8."""
    from llm_from_scratch.traces.token_embeddings_v1 import trace_error

    where = "standard input" if source == "-" else source
    try:
        if source == "-":
            data = read_stream(sys.stdin.buffer, TRACE_BYTE_LIMIT)
        else:
            data = read_file(source, TRACE_BYTE_LIMIT)
    except OSError as error:
        if not is_too_large(error):
            raise about(where, error) from error
        detail = f"at most {TRACE_BYTE_LIMIT} bytes, found more in {where}"
        raise trace_error("TRACE", "size", detail) from error
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise trace_error("TRACE", "encoding", f"{where} is not UTF-8: {error}") from error
