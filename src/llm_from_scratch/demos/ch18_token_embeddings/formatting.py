"""The chapter's number formats, shared with the trace grammar.

Shapes print as ``4x2`` (``none`` for the scalar shape), floats as ``%.12f``, lists joined by
``,`` (``none`` when empty). The lexemes are the ones of
:mod:`llm_from_scratch.traces.token_embeddings_v1`, so the demo and the trace print a number the
same way.
"""

from __future__ import annotations

from llm_from_scratch.traces.token_embeddings_v1 import (
    NONE,
    float_text,
    floats_text,
    ints_text,
    shape_text,
)

__all__ = ["bool_text", "float_text", "floats_text", "ints_text", "list_or_none", "shape_text"]


def bool_text(value: bool) -> str:
    """``true`` or ``false``."""
    return "true" if value else "false"


def list_or_none(text: str) -> str:
    """``none`` for an empty list's text."""
    return text or NONE
