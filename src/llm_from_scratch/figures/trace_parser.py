"""A strict parser for the trace ``token-embeddings-v1``.

The trace is the machine-readable record of one embedding lookup and its backward pass. Its
grammar, in order, with one LF after every line and nothing after the last one::

    TRACE token-embeddings-v1 BEGIN
    FIXTURE name=.. parameter=.. vocabulary=V width=d table-shape=Vxd id-shape=..
            output-shape=.. upstream-shape=.. gradient-shape=Vxd accumulation=scatter-add
    IDS values=.. repeated-id=.. repeated-flat-positions=..
    TABLE row=.. uses=.. state=.. values=..                          (V records)
    LOOKUP flat=.. coordinate=.. id=.. sharing=.. one-hot=.. selected-row=..
           output=.. upstream=..                                       (one per ID)
    ROW-GRADIENT row=.. flat-positions=.. contributions=.. rule=.. accumulated=..  (V records)
    TRACE token-embeddings-v1 END

(The FIXTURE and LOOKUP records are each one line; they are wrapped here only for reading.)

``none`` stands for an empty list, ``|`` separates contribution vectors, a shape is its extents
joined by ``x`` (``none`` for a rank-zero shape). Integers are safe non-negative integers
(at most ``2**53 - 1``, no sign, no leading zero); floats are canonical ``%.12f`` lexemes
(``-0.000000000000`` is not canonical). v1 names at most one repeated ID, so a trace whose
IDs repeat more than one ID is rejected.

The parser keeps every numeric lexeme as text. It checks the records against one another
(IDs against the repeated positions, uses against state, one-hot against ID, selected row
against ID, output against the table row, upstream against the contribution it feeds, and
the accumulated gradient against the exact decimal sum of the contributions) with integer
arithmetic on the lexemes, never with floats.

>>> from llm_from_scratch.figures.trace_parser import parse_trace
>>> parse_trace("TRACE token-embeddings-v2 BEGIN\\n")
Traceback (most recent call last):
...
llm_from_scratch.figures.trace_parser.TraceFormatError: TRACE BEGIN version: expected \
token-embeddings-v1, found token-embeddings-v2
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "TRACE_VERSION",
    "Fixture",
    "IdRecord",
    "Lookup",
    "RowGradient",
    "TableRow",
    "Trace",
    "TraceFormatError",
    "parse_trace",
]

TRACE_VERSION: Final = "token-embeddings-v1"
MAX_SAFE_INTEGER: Final = 2**53 - 1
_FRACTION_DIGITS: Final = 12
_SCALE: Final = 10**_FRACTION_DIGITS
_NONE: Final = "none"
_SHOWN: Final = 48

_SAFE_INT = re.compile(r"0|[1-9][0-9]{0,15}")
_FLOAT = re.compile(r"(-?)(0|[1-9][0-9]{0,308})\.([0-9]{12})")
_FIXTURE_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_PARAMETER_NAME = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")

_FIXTURE_FIELDS: Final = (
    "name",
    "parameter",
    "vocabulary",
    "width",
    "table-shape",
    "id-shape",
    "output-shape",
    "upstream-shape",
    "gradient-shape",
    "accumulation",
)
_IDS_FIELDS: Final = ("values", "repeated-id", "repeated-flat-positions")
_TABLE_FIELDS: Final = ("row", "uses", "state", "values")
_LOOKUP_FIELDS: Final = (
    "flat",
    "coordinate",
    "id",
    "sharing",
    "one-hot",
    "selected-row",
    "output",
    "upstream",
)
_ROW_GRADIENT_FIELDS: Final = ("row", "flat-positions", "contributions", "rule", "accumulated")


class TraceFormatError(ValueError):
    """A trace that does not follow the grammar ``token-embeddings-v1`` exactly.

    Attributes:
        record: where the problem is, for example ``"FIXTURE"``, ``"TABLE 2"``,
            ``"LOOKUP 1"``, ``"ROW-GRADIENT 3"``, ``"TRACE BEGIN"`` or ``"TRACE END"``.
        field: which part of that record, for example ``"state"``, ``"output 0"`` (component
            0 of the output vector), ``"record"`` (the record itself is missing or of the
            wrong kind) or ``"line ending"``.
        detail: what was expected and what was found.
    """

    def __init__(self, record: str, field: str, detail: str) -> None:
        self.record = record
        self.field = field
        self.detail = detail
        super().__init__(f"{record} {field}: {detail}")


@dataclass(frozen=True)
class Fixture:
    """The FIXTURE record: names and shapes, every number kept as its lexeme.

    Shapes are kept both as the lexeme (``"1x3x2"``) and as extents (``("1", "3", "2")``).
    """

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


def parse_trace(text: str) -> Trace:
    """Parse and cross-check one ``token-embeddings-v1`` trace.

    Args:
        text: the whole trace, LF line endings, exactly one final LF.

    Returns:
        The trace as a frozen tree of records whose numbers are the original lexemes.

    Raises:
        TraceFormatError: at the first problem, naming its record and field.
    """
    return _Parser(text).parse()


# --------------------------------------------------------------------------------------
# Lexemes


def _shown(text: str) -> str:
    """Quote a found value for a message, shortened when it is long."""
    if text == "":
        return "an empty value"
    if len(text) > _SHOWN:
        return repr(text[:_SHOWN] + "...")
    return text


def _safe_int(record: str, field: str, text: str, what: str = "a safe non-negative integer") -> int:
    if _SAFE_INT.fullmatch(text) is None or int(text) > MAX_SAFE_INTEGER:
        raise TraceFormatError(record, field, f"expected {what}, found {_shown(text)}")
    return int(text)


def _float_units(record: str, field: str, text: str) -> int:
    """Return a canonical ``%.12f`` lexeme as an exact integer count of 1e-12 units."""
    match = _FLOAT.fullmatch(text)
    if match is None:
        raise TraceFormatError(
            record, field, f"expected a canonical twelve-decimal number, found {_shown(text)}"
        )
    sign, whole, fraction = match.groups()
    units = int(whole) * _SCALE + int(fraction)
    if sign and units == 0:
        raise TraceFormatError(
            record, field, f"expected 0.000000000000 for zero, found {_shown(text)}"
        )
    return -units if sign else units


def _split_list(text: str) -> list[str]:
    return [] if text == _NONE else text.split(",")


def _joined(items: Sequence[str]) -> str:
    return ",".join(items) if items else _NONE


def _shape(record: str, field: str, text: str) -> tuple[str, ...]:
    if text == _NONE:
        return ()
    extents = tuple(text.split("x"))
    for extent in extents:
        if _SAFE_INT.fullmatch(extent) is None or int(extent) > MAX_SAFE_INTEGER:
            raise TraceFormatError(
                record,
                field,
                f"expected safe integer extents joined by x, or none, found {_shown(text)}",
            )
    return extents


def _shape_text(extents: Sequence[str]) -> str:
    return "x".join(extents) if extents else _NONE


def _count(extents: Sequence[str]) -> int:
    count = 1
    for extent in extents:
        count *= int(extent)
    return count


def _coordinate(flat: int, extents: Sequence[str]) -> tuple[str, ...]:
    """Row-major coordinate of a flat position (integer arithmetic on the extents)."""
    coordinate: list[str] = []
    for extent in reversed(extents):
        size = int(extent)
        coordinate.append(str(flat % size))
        flat //= size
    return tuple(reversed(coordinate))


# --------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class _Line:
    record: str
    fields: dict[str, str]


class _Parser:
    def __init__(self, text: str) -> None:
        self._lines: Iterator[tuple[str, bool]] = self._split(text)

    @staticmethod
    def _split(text: str) -> Iterator[tuple[str, bool]]:
        """Yield each line and whether an LF ends it."""
        start = 0
        while start < len(text):
            end = text.find("\n", start)
            if end < 0:
                yield text[start:], False
                return
            yield text[start:end], True
            start = end + 1

    def _next_line(self, record: str, kind: str) -> str:
        found = next(self._lines, None)
        if found is None:
            raise TraceFormatError(
                record, "record", f"expected a {kind} record, found the end of the trace"
            )
        line, terminated = found
        if "\r" in line:
            raise TraceFormatError(record, "line ending", "expected LF line endings, found CR")
        if not terminated:
            raise TraceFormatError(
                record, "line ending", "expected an LF after the record, found the end of the text"
            )
        return line

    def _record(self, record: str, kind: str, names: Sequence[str]) -> _Line:
        line = self._next_line(record, kind)
        head, _, rest = line.partition(" ")
        if head != kind:
            raise TraceFormatError(
                record, "record", f"expected a {kind} record, found {_shown(head)}"
            )
        tokens = rest.split(" ") if rest else []
        fields: dict[str, str] = {}
        for index, token in enumerate(tokens):
            name, equals, value = token.partition("=")
            if token == "":
                raise TraceFormatError(
                    record, "spacing", "expected one space between fields, found an empty field"
                )
            if index >= len(names):
                raise TraceFormatError(
                    record, _shown(name), f"expected no field after {names[-1]}, found an extra one"
                )
            expected = names[index]
            if not equals:
                raise TraceFormatError(
                    record, expected, f"expected {expected}=value, found {_shown(token)}"
                )
            if name != expected:
                problem = "a missing or reordered field" if name in names else "an unknown field"
                raise TraceFormatError(
                    record, expected, f"expected field {expected}, found {problem}: {_shown(name)}"
                )
            fields[name] = value
        if len(tokens) < len(names):
            missing = names[len(tokens)]
            raise TraceFormatError(record, missing, "expected this field, found the end of line")
        return _Line(record, fields)

    def _marker(self, record: str, which: str) -> None:
        line = self._next_line(record, "TRACE")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "TRACE":
            raise TraceFormatError(
                record, "record", f"expected 'TRACE {TRACE_VERSION} {which}', found {_shown(line)}"
            )
        if parts[1] != TRACE_VERSION:
            raise TraceFormatError(
                record, "version", f"expected {TRACE_VERSION}, found {_shown(parts[1])}"
            )
        if parts[2] != which:
            raise TraceFormatError(record, "marker", f"expected {which}, found {_shown(parts[2])}")

    # ----------------------------------------------------------------------------------

    def parse(self) -> Trace:
        self._marker("TRACE BEGIN", "BEGIN")
        fixture = self._fixture()
        vocabulary, width = int(fixture.vocabulary), int(fixture.width)
        ids = self._ids(fixture, vocabulary)
        id_values = [int(value) for value in ids.values]
        # Sparse on purpose: a huge (but safe) vocabulary must fail at its first missing
        # record, not allocate one list per row first.
        positions: dict[int, list[int]] = {}
        for flat, row in enumerate(id_values):
            positions.setdefault(row, []).append(flat)
        table = tuple(
            self._table_row(row, positions.get(row, []), width) for row in range(vocabulary)
        )
        lookups = tuple(
            self._lookup(flat, fixture, id_values, positions, table)
            for flat in range(len(id_values))
        )
        gradients = tuple(
            self._row_gradient(row, positions.get(row, []), width, lookups)
            for row in range(vocabulary)
        )
        self._marker("TRACE END", "END")
        leftover = next(self._lines, None)
        if leftover is not None:
            found = "an extra final LF" if leftover == ("", True) else "more text"
            raise TraceFormatError(
                "TRACE END", "end of trace", f"expected nothing after the END record, found {found}"
            )
        return Trace(TRACE_VERSION, fixture, ids, table, lookups, gradients)

    def _fixture(self) -> Fixture:
        line = self._record("FIXTURE", "FIXTURE", _FIXTURE_FIELDS)
        f = line.fields
        record = line.record
        if _FIXTURE_NAME.fullmatch(f["name"]) is None:
            raise TraceFormatError(
                record, "name", f"expected lowercase words joined by '-', found {_shown(f['name'])}"
            )
        if _PARAMETER_NAME.fullmatch(f["parameter"]) is None:
            raise TraceFormatError(
                record,
                "parameter",
                "expected a parameter name (lowercase ASCII, digits, underscores, "
                f"non-empty dot-separated segments), found {_shown(f['parameter'])}",
            )
        vocabulary = _safe_int(record, "vocabulary", f["vocabulary"])
        width = _safe_int(record, "width", f["width"])
        if vocabulary == 0:
            raise TraceFormatError(record, "vocabulary", "expected at least one row, found 0")
        if width == 0:
            raise TraceFormatError(record, "width", "expected a width of at least 1, found 0")
        table_shape = f"{vocabulary}x{width}"
        if f["table-shape"] != table_shape:
            raise TraceFormatError(
                record,
                "table-shape",
                f"expected {table_shape} (vocabulary x width), found {_shown(f['table-shape'])}",
            )
        extents = _shape(record, "id-shape", f["id-shape"])
        output_shape = _shape_text((*extents, f["width"]))
        for name, expected, why in (
            ("output-shape", output_shape, "id-shape then width"),
            ("upstream-shape", output_shape, "the output shape"),
            ("gradient-shape", table_shape, "the table shape"),
            ("accumulation", "scatter-add", "the only v1 accumulation"),
        ):
            if f[name] != expected:
                raise TraceFormatError(
                    record, name, f"expected {expected} ({why}), found {_shown(f[name])}"
                )
        return Fixture(
            name=f["name"],
            parameter=f["parameter"],
            vocabulary=f["vocabulary"],
            width=f["width"],
            table_shape=f["table-shape"],
            id_shape=f["id-shape"],
            id_extents=extents,
            output_shape=f["output-shape"],
            upstream_shape=f["upstream-shape"],
            gradient_shape=f["gradient-shape"],
            accumulation=f["accumulation"],
        )

    def _ids(self, fixture: Fixture, vocabulary: int) -> IdRecord:
        line = self._record("IDS", "IDS", _IDS_FIELDS)
        f = line.fields
        record = line.record
        values = _split_list(f["values"])
        expected_count = _count(fixture.id_extents)
        if len(values) != expected_count:
            raise TraceFormatError(
                record,
                "values",
                f"expected {expected_count} IDs for id-shape {fixture.id_shape}, "
                f"found {len(values)}",
            )
        seen: dict[int, list[int]] = {}
        for flat, value in enumerate(values):
            number = _safe_int(record, f"values {flat}", value, "an ID")
            if number >= vocabulary:
                raise TraceFormatError(
                    record,
                    f"values {flat}",
                    f"expected an ID below the vocabulary size {vocabulary}, found {value}",
                )
            seen.setdefault(number, []).append(flat)
        repeated = sorted(row for row, flats in seen.items() if len(flats) > 1)
        if len(repeated) > 1:
            raise TraceFormatError(
                record,
                "repeated-id",
                "expected at most one repeated ID (v1 names one), found IDs "
                + ", ".join(str(row) for row in repeated),
            )
        expected_id = str(repeated[0]) if repeated else _NONE
        if f["repeated-id"] != expected_id:
            raise TraceFormatError(
                record,
                "repeated-id",
                f"expected {expected_id} (the ID that occurs more than once), "
                f"found {_shown(f['repeated-id'])}",
            )
        expected_positions = [str(flat) for flat in seen[repeated[0]]] if repeated else []
        if f["repeated-flat-positions"] != _joined(expected_positions):
            raise TraceFormatError(
                record,
                "repeated-flat-positions",
                f"expected {_joined(expected_positions)} (the flat positions of the repeated "
                f"ID), found {_shown(f['repeated-flat-positions'])}",
            )
        return IdRecord(
            values=tuple(values),
            repeated_id=expected_id if repeated else None,
            repeated_flat_positions=tuple(expected_positions),
        )

    def _vector(self, record: str, field: str, text: str, width: int) -> tuple[str, ...]:
        components = text.split(",")
        if len(components) != width:
            raise TraceFormatError(
                record, field, f"expected {width} comma-separated values, found {len(components)}"
            )
        for index, component in enumerate(components):
            _float_units(record, f"{field} {index}", component)
        return tuple(components)

    def _table_row(self, row: int, positions: list[int], width: int) -> TableRow:
        line = self._record(f"TABLE {row}", "TABLE", _TABLE_FIELDS)
        f = line.fields
        record = line.record
        self._index(record, "row", f["row"], row)
        uses = _safe_int(record, "uses", f["uses"])
        if uses != len(positions):
            raise TraceFormatError(
                record,
                "uses",
                f"expected {len(positions)} (how often ID {row} occurs in IDS), found {uses}",
            )
        state = ("unused", "selected-once", "selected-repeated")[min(uses, 2)]
        if f["state"] != state:
            raise TraceFormatError(
                record, "state", f"expected {state} for uses={uses}, found {_shown(f['state'])}"
            )
        values = self._vector(record, "values", f["values"], width)
        return TableRow(row=f["row"], uses=f["uses"], state=f["state"], values=values)

    @staticmethod
    def _index(record: str, field: str, text: str, expected: int) -> None:
        _safe_int(record, field, text)
        if int(text) != expected:
            raise TraceFormatError(
                record,
                field,
                f"expected {expected}, found {text} (a missing, extra or reordered record)",
            )

    def _lookup(
        self,
        flat: int,
        fixture: Fixture,
        ids: list[int],
        positions: dict[int, list[int]],
        table: tuple[TableRow, ...],
    ) -> Lookup:
        line = self._record(f"LOOKUP {flat}", "LOOKUP", _LOOKUP_FIELDS)
        f = line.fields
        record = line.record
        self._index(record, "flat", f["flat"], flat)
        coordinate = _split_list(f["coordinate"])
        expected_coordinate = _coordinate(flat, fixture.id_extents)
        if tuple(coordinate) != expected_coordinate:
            raise TraceFormatError(
                record,
                "coordinate",
                f"expected {_joined(expected_coordinate)} (row-major in id-shape "
                f"{fixture.id_shape}), found {_shown(f['coordinate'])}",
            )
        row = ids[flat]
        _safe_int(record, "id", f["id"])
        if int(f["id"]) != row:
            raise TraceFormatError(
                record, "id", f"expected {row} (IDS values {flat}), found {f['id']}"
            )
        sharing = "repeated-row" if len(positions[row]) > 1 else "single-row"
        if f["sharing"] != sharing:
            raise TraceFormatError(
                record,
                "sharing",
                f"expected {sharing} (ID {row} occurs at {len(positions[row])} flat position(s)), "
                f"found {_shown(f['sharing'])}",
            )
        one_hot = f["one-hot"].split(",")
        if len(one_hot) != len(table):
            raise TraceFormatError(
                record, "one-hot", f"expected {len(table)} indicators, found {len(one_hot)}"
            )
        for index, bit in enumerate(one_hot):
            expected_bit = "1" if index == row else "0"
            if bit != expected_bit:
                raise TraceFormatError(
                    record,
                    f"one-hot {index}",
                    f"expected {expected_bit} (one 1 at ID {row}), found {_shown(bit)}",
                )
        _safe_int(record, "selected-row", f["selected-row"])
        if int(f["selected-row"]) != row:
            raise TraceFormatError(
                record, "selected-row", f"expected {row} (the ID), found {f['selected-row']}"
            )
        width = int(fixture.width)
        output = self._vector(record, "output", f["output"], width)
        for index, (found, expected) in enumerate(zip(output, table[row].values, strict=True)):
            if found != expected:
                raise TraceFormatError(
                    record,
                    f"output {index}",
                    f"expected {expected} (TABLE {row} values {index}), found {found}",
                )
        upstream = self._vector(record, "upstream", f["upstream"], width)
        return Lookup(
            flat=f["flat"],
            coordinate=tuple(coordinate),
            id=f["id"],
            sharing=f["sharing"],
            one_hot=tuple(one_hot),
            selected_row=f["selected-row"],
            output=output,
            upstream=upstream,
        )

    def _row_gradient(
        self, row: int, positions: list[int], width: int, lookups: tuple[Lookup, ...]
    ) -> RowGradient:
        line = self._record(f"ROW-GRADIENT {row}", "ROW-GRADIENT", _ROW_GRADIENT_FIELDS)
        f = line.fields
        record = line.record
        self._index(record, "row", f["row"], row)
        expected_positions = _joined([str(flat) for flat in positions])
        if f["flat-positions"] != expected_positions:
            raise TraceFormatError(
                record,
                "flat-positions",
                f"expected {expected_positions} (where ID {row} occurs), "
                f"found {_shown(f['flat-positions'])}",
            )
        texts = [] if f["contributions"] == _NONE else f["contributions"].split("|")
        if len(texts) != len(positions):
            raise TraceFormatError(
                record,
                "contributions",
                f"expected {len(positions)} vectors (one per flat position), found {len(texts)}",
            )
        contributions = tuple(
            self._vector(record, f"contributions {index}", text, width)
            for index, text in enumerate(texts)
        )
        rule = ("unused-zero", "single-copy", "repeated-sum")[min(len(positions), 2)]
        if f["rule"] != rule:
            raise TraceFormatError(
                record,
                "rule",
                f"expected {rule} for {len(positions)} contributions, found {_shown(f['rule'])}",
            )
        accumulated = self._vector(record, "accumulated", f["accumulated"], width)
        sums = [
            sum(_float_units(record, "contributions", vector[index]) for vector in contributions)
            for index in range(width)
        ]
        sums_agree = all(
            _float_units(record, "accumulated", found) == total
            for found, total in zip(accumulated, sums, strict=True)
        )
        for index, (flat, vector) in enumerate(zip(positions, contributions, strict=True)):
            upstream = lookups[flat].upstream
            for component, (found, fed) in enumerate(zip(vector, upstream, strict=True)):
                if found == fed:
                    continue
                if sums_agree:
                    raise TraceFormatError(
                        f"LOOKUP {flat}",
                        f"upstream {component}",
                        f"expected {found} (the contribution it feeds into {record}), found {fed}",
                    )
                raise TraceFormatError(
                    record,
                    f"contributions {index}",
                    f"expected {fed} (LOOKUP {flat} upstream {component}) at component "
                    f"{component}, found {found}",
                )
        for index, (found, total) in enumerate(zip(accumulated, sums, strict=True)):
            if _float_units(record, "accumulated", found) != total:
                raise TraceFormatError(
                    record,
                    f"accumulated {index}",
                    f"expected {_units_text(total)} (the exact sum of the contributions), "
                    f"found {found}",
                )
        return RowGradient(
            row=f["row"],
            flat_positions=tuple(str(flat) for flat in positions),
            contributions=contributions,
            rule=f["rule"],
            accumulated=accumulated,
        )


def _units_text(units: int) -> str:
    """Format an integer count of 1e-12 units as a canonical ``%.12f`` lexeme."""
    sign = "-" if units < 0 else ""
    whole, fraction = divmod(abs(units), _SCALE)
    return f"{sign}{whole}.{fraction:0{_FRACTION_DIGITS}d}"
