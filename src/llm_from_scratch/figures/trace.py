"""The parsed trace ``token-embeddings-v1``: frozen records whose numbers stay lexemes.

:func:`~llm_from_scratch.figures.trace_parser.parse_trace` builds them from the trace text
after checking every record against the others; the renderer only arranges them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fixture", "IdRecord", "Lookup", "RowGradient", "TableRow", "Trace"]


@dataclass(frozen=True)
class Fixture:
    """The FIXTURE record; the ID shape also as extents (``("1", "3")``)."""

    name: str
    parameter: str
    vocabulary: str
    width: str
    table_shape: str
    id_shape: str
    id_extents: tuple[str, ...]
    output_shape: str
    upstream_shape: str
    gradient_shape: str
    accumulation: str


@dataclass(frozen=True)
class IdRecord:
    """The IDS record: the flat IDs and the one repeated ID with its flat positions."""

    values: tuple[str, ...]
    repeated_id: str | None
    repeated_flat_positions: tuple[str, ...]


@dataclass(frozen=True)
class TableRow:
    """One TABLE record: a row of the embedding table, its use count and state."""

    row: str
    uses: str
    state: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Lookup:
    """One LOOKUP record: the forward copy of one ID's row and the upstream it receives."""

    flat: str
    coordinate: tuple[str, ...]
    id: str
    sharing: str
    one_hot: tuple[str, ...]
    selected_row: str
    output: tuple[str, ...]
    upstream: tuple[str, ...]


@dataclass(frozen=True)
class RowGradient:
    """One ROW-GRADIENT record: the contributions into one table row and their sum."""

    row: str
    flat_positions: tuple[str, ...]
    contributions: tuple[tuple[str, ...], ...]
    rule: str
    accumulated: tuple[str, ...]


@dataclass(frozen=True)
class Trace:
    """A parsed, cross-checked ``token-embeddings-v1`` trace."""

    version: str
    fixture: Fixture
    ids: IdRecord
    table_rows: tuple[TableRow, ...]
    lookups: tuple[Lookup, ...]
    row_gradients: tuple[RowGradient, ...]
