"""The token-embedding figure: parse a ``token-embeddings-v1`` trace and draw it.

This module gathers the public names of :mod:`~llm_from_scratch.figures.trace_parser`,
:mod:`~llm_from_scratch.figures.labels` and :mod:`~llm_from_scratch.figures.render`:

- :func:`parse_trace` turns the trace text into a frozen :class:`Trace`, or raises
  :class:`TraceFormatError` naming the record and field at fault.
- :func:`render_figure` turns a :class:`Trace` into one self-contained HTML document in
  English (``"en"``) or Russian (``"ru"``); a bad label table raises :class:`LabelError`.
"""

from __future__ import annotations

from llm_from_scratch.figures.labels import LANGUAGES, LabelError, load_labels
from llm_from_scratch.figures.render import render_figure
from llm_from_scratch.figures.trace_parser import (
    TRACE_VERSION,
    Fixture,
    IdRecord,
    Lookup,
    RowGradient,
    TableRow,
    Trace,
    TraceFormatError,
    parse_trace,
)

__all__ = [
    "LANGUAGES",
    "TRACE_VERSION",
    "Fixture",
    "IdRecord",
    "LabelError",
    "Lookup",
    "RowGradient",
    "TableRow",
    "Trace",
    "TraceFormatError",
    "load_labels",
    "parse_trace",
    "render_figure",
]
