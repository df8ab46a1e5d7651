"""The grammar of the trace ``token-embeddings-v1`` (its lines, records and fields in order:
``docs/spec/ch18-token-embeddings.md``, section 7), shared by its writer and its reader.

Lexemes: an integer is a safe non-negative integer (at most ``2**53 - 1``, no sign, no leading
zero); a float is a canonical ``%.12f`` lexeme (``-0.000000000000`` is not canonical); a list
joins its items by ``,`` and is ``none`` when empty; contribution vectors are joined by ``|``; a
shape is its extents joined by ``x``, ``none`` for rank zero. v1 names at most one repeated ID.

>>> shape_text(()), shape_text((1, 3, 2)), ints_text(()), floats_text((4.0, -0.5))
('none', '1x3x2', 'none', '4.000000000000,-0.500000000000')
>>> record_line(TABLE, {"row": "1", "uses": "1", "state": state_for(1), "values": "20.0"})
'TABLE row=1 uses=1 state=selected-once values=20.0'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from llm_from_scratch.errors import FormatError

TRACE_VERSION: Final = "token-embeddings-v1"
BEGIN: Final = "BEGIN"
END: Final = "END"
NONE: Final = "none"
ACCUMULATION: Final = "scatter-add"

FIXTURE: Final = "FIXTURE"
IDS: Final = "IDS"
TABLE: Final = "TABLE"
LOOKUP: Final = "LOOKUP"
ROW_GRADIENT: Final = "ROW-GRADIENT"

#: Every record between the markers and its fields, in the order they appear.
RECORD_FIELDS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    FIXTURE: ("name", "parameter", "vocabulary", "width", "table-shape", "id-shape",
              "output-shape", "upstream-shape", "gradient-shape", "accumulation"),
    IDS: ("values", "repeated-id", "repeated-flat-positions"),
    TABLE: ("row", "uses", "state", "values"),
    LOOKUP: ("flat", "coordinate", "id", "sharing", "one-hot", "selected-row", "output",
             "upstream"),
    ROW_GRADIENT: ("row", "flat-positions", "contributions", "rule", "accumulated"),
})  # fmt: skip

#: Fields that list vectors, joined by ``|`` (their vectors join numbers by ``,``).
VECTOR_LIST_FIELDS: Final = ("contributions",)

#: A TABLE row's state and its ROW-GRADIENT rule, by how many positions select the row: 0, 1, more.
STATES: Final = ("unused", "selected-once", "selected-repeated")
RULES: Final = ("unused-zero", "single-copy", "repeated-sum")
RULE_STATES: Final[Mapping[str, str]] = MappingProxyType(dict(zip(RULES, STATES, strict=True)))
#: A LOOKUP's sharing: whether its ID occurs once or more than once.
SHARINGS: Final = ("single-row", "repeated-row")

MAX_SAFE_INTEGER: Final = 2**53 - 1
SAFE_INTEGER: Final = re.compile(r"0|[1-9][0-9]{0,15}")
CANONICAL_FLOAT: Final = re.compile(r"(-?)(0|[1-9][0-9]{0,308})\.([0-9]{12})")
FIXTURE_NAME: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
PARAMETER_NAME: Final = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")


def trace_error(record: str, field: str, detail: str) -> FormatError:
    """``trace.format`` at ``record`` (``TABLE 2``) and ``field`` (``output 0``); errors is
    imported only here, so that a good trace loads nothing else of the package."""
    from llm_from_scratch.errors import FormatError

    return FormatError("trace.format", record=record, field=field, detail=detail)


def state_for(uses: int) -> str:
    """The TABLE state of a row that ``uses`` positions select."""
    return STATES[min(uses, 2)]


def rule_for(uses: int) -> str:
    """The ROW-GRADIENT rule of a row that ``uses`` positions select."""
    return RULES[min(uses, 2)]


def sharing_for(uses: int) -> str:
    """The LOOKUP sharing of a position whose ID occurs ``uses`` times."""
    return SHARINGS[uses > 1]


def repeated_id_text(repeated: Sequence[int | str]) -> str:
    """The ``repeated-id`` lexeme of the IDs that occur more than once, in ascending order.

    Raises:
        FormatError: ``trace.format``, for two or more repeated IDs, which v1 cannot name.
    """
    if len(repeated) > 1:
        found = ", ".join(str(row) for row in repeated)
        detail = f"expected at most one repeated ID (v1 names one), found IDs {found}"
        raise trace_error(IDS, "repeated-id", detail)
    return list_text(repeated)


def list_text(items: Iterable[int | str]) -> str:
    """Items joined by ``,``; ``none`` for no items."""
    return ",".join(str(item) for item in items) or NONE


def ints_text(values: Iterable[int]) -> str:
    """Integers joined by ``,``; ``none`` for an empty list."""
    return list_text(values)


def floats_text(values: Iterable[float]) -> str:
    """Floats with twelve decimals (``%.12f``) joined by ``,``; ``none`` for an empty list."""
    return list_text(f"{value:.12f}" for value in values)


def vectors_text(vectors: Iterable[Iterable[float]]) -> str:
    """Vectors joined by ``|``; ``none`` for no vectors."""
    return "|".join(floats_text(vector) for vector in vectors) or NONE


def shape_text(extents: Iterable[int | str]) -> str:
    """Extents joined by ``x``; ``none`` for the rank-zero shape ``()``."""
    return "x".join(str(extent) for extent in extents) or NONE


def marker_line(which: str) -> str:
    """The ``TRACE`` line that opens (``BEGIN``) or closes (``END``) a trace."""
    return f"TRACE {TRACE_VERSION} {which}"


def record_line(record: str, fields: Mapping[str, str]) -> str:
    """One record's line: its name, then ``field=value`` in the grammar's order.

    Raises:
        ValueError: when ``fields`` does not name exactly the record's fields in order.
    """
    names = RECORD_FIELDS[record]
    if tuple(fields) != names:
        raise ValueError(f"a {record} record has the fields {', '.join(names)}")
    return " ".join((record, *(f"{name}={fields[name]}" for name in names)))
