"""The strict parser of the trace ``token-embeddings-v1`` (``docs/spec``, section 8), into frozen
records whose numbers stay lexemes. Only what cannot be derived is a fact (names, sizes, ID
shape, IDs, table values, upstream vectors); every other field must equal the lexeme derived from
them, an error naming the record, the field and the item (``LOOKUP 1 output 0``). A LOOKUP whose
upstream disagrees with its contribution is blamed if the contributions still add up (sums are
exact integer counts of 1e-12).

>>> parse_trace("TRACE token-embeddings-v2 BEGIN\\n")
Traceback (most recent call last):
...
llm_from_scratch.errors.FormatError: TRACE BEGIN version: expected token-embeddings-v1, found \
token-embeddings-v2
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from llm_from_scratch.traces import token_embeddings_v1 as v1
from llm_from_scratch.traces.token_embeddings_v1 import TRACE_VERSION, trace_error

# The records: numbers stay lexemes --------------------------------------------------------


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


_SCALE: Final = 10**12
_SHOWN: Final = 48
_REORDERED: Final = "(a missing, extra or reordered record)"


def parse_trace(text: str) -> Trace:
    """Parse and cross-check one ``token-embeddings-v1`` trace.

    Args:
        text: the whole trace, LF line endings, exactly one final LF.

    Returns:
        The trace as a frozen tree of records whose numbers are the original lexemes.

    Raises:
        FormatError: ``trace.format``, at the first problem, naming its record and field.
    """
    lines = _Lines(text)
    lines.marker(v1.BEGIN)
    fixture = _fixture(lines.record(v1.FIXTURE))
    ids, facts = _ids(lines.record(v1.IDS), fixture)
    # One record at a time, so that a huge vocabulary fails at its first missing row.
    rows = range(int(fixture.vocabulary))
    table = tuple(_table_row(lines.record(v1.TABLE, row), row, facts) for row in rows)
    lookups = tuple(
        _lookup(lines.record(v1.LOOKUP, flat), flat, facts, table)
        for flat in range(len(ids.values))
    )
    gradients = tuple(
        _row_gradient(lines.record(v1.ROW_GRADIENT, row), row, facts, lookups) for row in rows
    )
    lines.marker(v1.END)
    lines.finish()
    return Trace(TRACE_VERSION, fixture, ids, table, lookups, gradients)


# What a field must hold ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Lexeme:
    """A fact: any text that ``accepts`` takes, described as ``what``."""

    accepts: Callable[[str], object]
    what: str


@dataclass(frozen=True)
class _Each:
    """``count`` items that each meet ``item``, never built out however long."""

    item: _Expected
    count: int

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[_Expected]:
        return itertools.repeat(self.item, self.count)


#: A derived lexeme, a fact, or a list of these.
_Expected: TypeAlias = "str | _Lexeme | _Each | tuple[_Expected, ...]"
#: What each named field must hold, and why (said in the error).
_Rules: TypeAlias = dict[str, tuple[_Expected, str]]


def _is_safe_integer(text: str) -> bool:
    return v1.SAFE_INTEGER.fullmatch(text) is not None and int(text) <= v1.MAX_SAFE_INTEGER


_FLOAT: Final = _Lexeme(v1.CANONICAL_FLOAT.fullmatch, "a canonical twelve-decimal number")
_POSITIVE: Final = _Lexeme(
    lambda text: _is_safe_integer(text) and text != "0", "a safe integer from 1 to 2**53 - 1"
)
_SHAPE: Final = _Lexeme(
    lambda text: all(map(_is_safe_integer, _items(text, "x"))),
    f"safe integer extents joined by x, or {v1.NONE}",
)
_NAME: Final = _Lexeme(v1.FIXTURE_NAME.fullmatch, "a fixture name (lowercase words joined by -)")
_PARAMETER: Final = _Lexeme(v1.PARAMETER_NAME.fullmatch, "a parameter name (a_b.c_d, lowercase)")


def _expect_fields(record: str, fields: Mapping[str, str], expected: _Rules) -> None:
    """Check the fields of one record that ``expected`` names, in the grammar's order."""
    for name, text in fields.items():
        if name in expected:
            _expect(record, name, text, *expected[name])


def _expect(record: str, field: str, found: str, expected: _Expected, why: str = "") -> None:
    """Check one field's text, or one item of it (``field index``), against what it must hold."""
    because = f" {why}" if why else ""
    if isinstance(expected, _Lexeme):
        if not expected.accepts(found):
            raise trace_error(record, field, f"expected {expected.what}, found {_shown(found)}")
    elif isinstance(expected, str):
        if found != expected:
            detail = f"expected {expected}{because}, found {_shown(found)}"
            raise trace_error(record, field, detail)
    else:
        parts = _items(found, "|" if field in v1.VECTOR_LIST_FIELDS else ",")
        if len(parts) != len(expected):
            detail = f"expected {len(expected)} items{because}, found {len(parts)}"
            raise trace_error(record, field, detail)
        for index, (part, item) in enumerate(zip(parts, expected, strict=True)):
            _expect(record, f"{field} {index}", part, item, why)


# Records -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Facts:
    """What the FIXTURE and IDS records establish for the records after them."""

    fixture: Fixture
    ids: tuple[int, ...]
    positions: Mapping[int, list[int]]
    width: int

    def flats(self, row: int) -> list[int]:
        """The flat positions where ID ``row`` occurs, in order."""
        return self.positions.get(row, [])


def _fixture(fields: dict[str, str]) -> Fixture:
    extents = _items(fields["id-shape"], "x")
    table_shape = v1.shape_text((fields["vocabulary"], fields["width"]))
    output_shape = v1.shape_text((*extents, fields["width"]))
    expected: _Rules = {
        "name": (_NAME, ""),
        "parameter": (_PARAMETER, ""),
        "vocabulary": (_POSITIVE, ""),
        "width": (_POSITIVE, ""),
        "table-shape": (table_shape, "(vocabulary x width)"),
        "id-shape": (_SHAPE, ""),
        "output-shape": (output_shape, "(id-shape then width)"),
        "upstream-shape": (output_shape, "(the output shape)"),
        "gradient-shape": (table_shape, "(the table shape)"),
        "accumulation": (v1.ACCUMULATION, "(the only v1 accumulation)"),
    }
    _expect_fields(v1.FIXTURE, fields, expected)
    attributes = {name.replace("-", "_"): value for name, value in fields.items()}
    return Fixture(**attributes, id_extents=extents)


def _ids(fields: dict[str, str], fixture: Fixture) -> tuple[IdRecord, _Facts]:
    vocabulary = int(fixture.vocabulary)
    an_id = _Lexeme(
        lambda text: _is_safe_integer(text) and int(text) < vocabulary,
        f"an ID below the vocabulary size {vocabulary}",
    )
    count = math.prod(int(extent) for extent in fixture.id_extents)
    why = f"(the element count of id-shape {fixture.id_shape})"
    _expect(v1.IDS, "values", fields["values"], _Each(an_id, count), why)
    values = _items(fields["values"], ",")
    positions: dict[int, list[int]] = {}
    for flat, value in enumerate(values):
        positions.setdefault(int(value), []).append(flat)
    repeated = sorted(row for row, flats in positions.items() if len(flats) > 1)
    flats = positions[repeated[0]] if repeated else []
    expected: _Rules = {
        "repeated-id": (v1.repeated_id_text(repeated), "(the ID that occurs more than once)"),
        "repeated-flat-positions": (v1.list_text(flats), "(where the repeated ID occurs)"),
    }
    _expect_fields(v1.IDS, fields, expected)
    record = IdRecord(values, str(repeated[0]) if repeated else None, tuple(map(str, flats)))
    ids = tuple(map(int, values))
    return record, _Facts(fixture, ids, positions, int(fixture.width))


def _table_row(fields: dict[str, str], row: int, facts: _Facts) -> TableRow:
    uses = len(facts.flats(row))
    expected: _Rules = {
        "row": (str(row), _REORDERED),
        "uses": (str(uses), f"(how often ID {row} occurs in IDS)"),
        "state": (v1.state_for(uses), f"for uses={uses}"),
        "values": (_Each(_FLOAT, facts.width), ""),
    }
    _expect_fields(f"{v1.TABLE} {row}", fields, expected)
    return TableRow(fields["row"], fields["uses"], fields["state"], _items(fields["values"], ","))


def _lookup(fields: dict[str, str], flat: int, facts: _Facts, table: Sequence[TableRow]) -> Lookup:
    row, shape = facts.ids[flat], facts.fixture.id_shape
    uses = len(facts.flats(row))
    coordinate = _coordinate(flat, facts.fixture.id_extents)
    one_hot = tuple("1" if index == row else "0" for index in range(len(table)))
    expected: _Rules = {
        "flat": (str(flat), _REORDERED),
        "coordinate": (v1.list_text(coordinate), f"(row-major in id-shape {shape})"),
        "id": (str(row), f"(IDS values {flat})"),
        "sharing": (v1.sharing_for(uses), f"(ID {row} occurs at {uses} flat position(s))"),
        "one-hot": (one_hot, f"(one 1 at ID {row})"),
        "selected-row": (str(row), "(the ID)"),
        "output": (table[row].values, f"(a copy of TABLE {row} values)"),
        "upstream": (_Each(_FLOAT, facts.width), ""),
    }
    _expect_fields(f"{v1.LOOKUP} {flat}", fields, expected)
    f, output, upstream = fields, table[row].values, _items(fields["upstream"], ",")
    return Lookup(f["flat"], coordinate, f["id"], f["sharing"], one_hot, str(row), output, upstream)


def _row_gradient(
    fields: dict[str, str], row: int, facts: _Facts, lookups: Sequence[Lookup]
) -> RowGradient:
    record, flats, width = f"{v1.ROW_GRADIENT} {row}", facts.flats(row), facts.width
    expected: _Rules = {
        "row": (str(row), _REORDERED),
        "flat-positions": (v1.list_text(flats), f"(where ID {row} occurs)"),
        "contributions": (_Each(_Each(_FLOAT, width), len(flats)), "(one per flat position)"),
        "accumulated": (_Each(_FLOAT, width), ""),
    }
    _expect_fields(record, fields, expected)
    found = tuple(_items(vector, ",") for vector in _items(fields["contributions"], "|"))
    accumulated = _items(fields["accumulated"], ",")
    fed = tuple(lookups[flat].upstream for flat in flats)
    if _sum(found, width) == _sum((accumulated,), width):  # the row agrees with itself
        for flat, vector, upstream in zip(flats, found, fed, strict=True):
            into = f"(the contribution it feeds into {record})"
            _expect(f"{v1.LOOKUP} {flat}", "upstream", ",".join(upstream), vector, into)
    derived: _Rules = {
        "contributions": (tuple(map(",".join, fed)), "(the upstream of its LOOKUP)"),
        "rule": (v1.rule_for(len(flats)), f"for {len(flats)} contributions"),
        "accumulated": (_units_texts(_sum(fed, width)), "(the exact sum of the contributions)"),
    }
    _expect_fields(record, fields, derived)
    return RowGradient(fields["row"], tuple(map(str, flats)), found, fields["rule"], accumulated)


# Lines ---------------------------------------------------------------------------------------


class _Lines:
    """The trace's lines, read one record at a time, each checked for its LF ending."""

    def __init__(self, text: str) -> None:
        self._lines = text.split("\n")  # the last item is whatever follows the last LF
        self._next_index = 0

    def _next(self, record: str, kind: str) -> str:
        index = self._next_index
        line = self._lines[index]
        if "\r" in line:
            raise trace_error(record, "line ending", "expected LF line endings, found CR")
        if index == len(self._lines) - 1:
            if line:
                detail = "expected an LF after the record, found the end of the text"
                raise trace_error(record, "line ending", detail)
            detail = f"expected a {kind} record, found the end of the trace"
            raise trace_error(record, "record", detail)
        self._next_index += 1
        return line

    def marker(self, which: str) -> None:
        """Read the ``TRACE`` line that opens (``BEGIN``) or closes (``END``) the trace."""
        record = f"TRACE {which}"
        line = self._next(record, "TRACE")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "TRACE":
            detail = f"expected '{v1.marker_line(which)}', found {_shown(line)}"
            raise trace_error(record, "record", detail)
        _expect(record, "version", parts[1], TRACE_VERSION)
        _expect(record, "marker", parts[2], which)

    def record(self, kind: str, number: int | None = None) -> dict[str, str]:
        """The fields of the next line, a ``kind`` record with the grammar's fields in order."""
        record = kind if number is None else f"{kind} {number}"
        head, _, rest = self._next(record, kind).partition(" ")
        if head != kind:
            raise trace_error(record, "record", f"expected a {kind} record, found {_shown(head)}")
        names = v1.RECORD_FIELDS[kind]
        tokens = rest.split(" ") if rest else []
        fields = dict(_field(record, names, index, token) for index, token in enumerate(tokens))
        if len(tokens) < len(names):
            raise trace_error(
                record, names[len(tokens)], "expected this field, found the end of line"
            )
        return fields

    def finish(self) -> None:
        """Check that nothing follows the END record."""
        rest = self._lines[self._next_index :]
        if rest != [""]:
            found = "an extra final LF" if rest == ["", ""] else "more text"
            detail = f"expected nothing after the END record, found {found}"
            raise trace_error("TRACE END", "end of trace", detail)


def _field(record: str, names: Sequence[str], index: int, token: str) -> tuple[str, str]:
    name, equals, value = token.partition("=")
    if token == "":
        detail = "expected one space between fields, found an empty field"
        raise trace_error(record, "spacing", detail)
    if index >= len(names):
        detail = f"expected no field after {names[-1]}, found an extra one"
        raise trace_error(record, _shown(name), detail)
    expected = names[index]
    if not equals:
        raise trace_error(record, expected, f"expected {expected}=value, found {_shown(token)}")
    if name != expected:
        problem = "a missing or reordered field" if name in names else "an unknown field"
        detail = f"expected field {expected}, found {problem}: {_shown(name)}"
        raise trace_error(record, expected, detail)
    return name, value


# Lexemes -------------------------------------------------------------------------------------


def _shown(text: str) -> str:
    """Quote a found value for a message, shortened when it is long."""
    if text == "":
        return "an empty value"
    return repr(text[:_SHOWN] + "...") if len(text) > _SHOWN else text


def _items(text: str, separator: str) -> tuple[str, ...]:
    return () if text == v1.NONE else tuple(text.split(separator))


def _coordinate(flat: int, extents: Sequence[str]) -> tuple[str, ...]:
    """Row-major coordinate of a flat position (integer arithmetic on the extents)."""
    coordinate: list[str] = []
    for extent in reversed(extents):
        flat, index = divmod(flat, int(extent))
        coordinate.append(str(index))
    return tuple(reversed(coordinate))


def _sum(vectors: Sequence[Sequence[str]], width: int) -> tuple[int, ...]:
    """The exact component-wise sum of canonical ``%.12f`` lexemes, in units of 1e-12."""
    return tuple(sum(_units(vector[index]) for vector in vectors) for index in range(width))


def _units(lexeme: str) -> int:
    whole, _, fraction = lexeme.lstrip("-").partition(".")
    units = int(whole) * _SCALE + int(fraction)
    return -units if lexeme.startswith("-") else units


def _units_texts(units: Sequence[int]) -> tuple[str, ...]:
    """Counts of 1e-12 units as canonical ``%.12f`` lexemes."""
    return tuple(
        f"{'-' * (unit < 0)}{abs(unit) // _SCALE}.{abs(unit) % _SCALE:012d}" for unit in units
    )
