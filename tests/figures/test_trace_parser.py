"""The strict parser of the trace ``token-embeddings-v1`` (spec sections 7 and 8)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_from_scratch.errors import FormatError
from llm_from_scratch.figures.trace_parser import parse_trace

from checks import raises_rule
from conftest import GOLDEN

Corrupt = Callable[[str], str]

#: The trace of spec section 7, byte for byte (LF endings kept: read as bytes).
SPEC_TRACE = (GOLDEN / "ch18_trace.txt").read_bytes().decode("utf-8")

# Line indexes of the spec trace.
BEGIN, FIXTURE, IDS = 0, 1, 2
TABLE = (3, 4, 5, 6)
LOOKUP = (7, 8, 9)
ROW_GRADIENT = (10, 11, 12, 13)
END = 14


@pytest.fixture(scope="module")
def trace_text() -> str:
    """The 15-line trace of spec section 7."""
    return SPEC_TRACE


def _floats(values: Sequence[float]) -> str:
    return ",".join(f"{value:.12f}" for value in values)


def _ints(values: Sequence[int]) -> str:
    return ",".join(str(value) for value in values) if values else "none"


def _shape(extents: Sequence[int]) -> str:
    return "x".join(str(extent) for extent in extents) if extents else "none"


def _coordinate(flat: int, extents: Sequence[int]) -> list[int]:
    coordinate = []
    for extent in reversed(extents):
        coordinate.append(flat % extent)
        flat //= extent
    return coordinate[::-1]


def build_trace(
    table: Sequence[Sequence[float]],
    ids: Sequence[int],
    id_shape: Sequence[int],
    upstream: Sequence[Sequence[float]],
    name: str = "generated",
    parameter: str = "layer.token_embedding.weight",
) -> str:
    """Write the v1 trace of a lookup, independently of the library (a test oracle).

    Values should be exactly representable (for example multiples of 1/4) so that the float
    sums below equal the exact decimal sums of their twelve-decimal lexemes.
    """
    vocabulary, width = len(table), len(table[0])
    assert len(ids) == math.prod(id_shape) == len(upstream)
    positions = {row: [flat for flat, i in enumerate(ids) if i == row] for row in range(vocabulary)}
    repeated = [row for row, flats in positions.items() if len(flats) > 1]
    assert len(repeated) <= 1, "v1 names at most one repeated ID"
    out_shape = _shape([*id_shape, width])
    lines = [
        "TRACE token-embeddings-v1 BEGIN",
        f"FIXTURE name={name} parameter={parameter} vocabulary={vocabulary} "
        f"width={width} table-shape={vocabulary}x{width} id-shape={_shape(id_shape)} "
        f"output-shape={out_shape} upstream-shape={out_shape} "
        f"gradient-shape={vocabulary}x{width} accumulation=scatter-add",
        f"IDS values={_ints(ids)} repeated-id={repeated[0] if repeated else 'none'} "
        f"repeated-flat-positions={_ints(positions[repeated[0]]) if repeated else 'none'}",
    ]
    states = ("unused", "selected-once", "selected-repeated")
    for row in range(vocabulary):
        uses = len(positions[row])
        lines.append(
            f"TABLE row={row} uses={uses} state={states[min(uses, 2)]} values={_floats(table[row])}"
        )
    for flat, row in enumerate(ids):
        sharing = "repeated-row" if len(positions[row]) > 1 else "single-row"
        one_hot = ",".join("1" if i == row else "0" for i in range(vocabulary))
        lines.append(
            f"LOOKUP flat={flat} coordinate={_ints(_coordinate(flat, id_shape))} id={row} "
            f"sharing={sharing} one-hot={one_hot} selected-row={row} "
            f"output={_floats(table[row])} upstream={_floats(upstream[flat])}"
        )
    rules = ("unused-zero", "single-copy", "repeated-sum")
    for row in range(vocabulary):
        flats = positions[row]
        contributions = "|".join(_floats(upstream[flat]) for flat in flats) or "none"
        accumulated = [sum(upstream[flat][k] for flat in flats) + 0.0 for k in range(width)]
        lines.append(
            f"ROW-GRADIENT row={row} flat-positions={_ints(flats)} "
            f"contributions={contributions} rule={rules[min(len(flats), 2)]} "
            f"accumulated={_floats(accumulated)}"
        )
    lines.append("TRACE token-embeddings-v1 END")
    return "\n".join(lines) + "\n"


def on_line(index: int, old: str, new: str) -> Corrupt:
    """A corruption that replaces ``old`` (which must occur exactly once) on one line."""

    def corrupt(text: str) -> str:
        lines = text.split("\n")
        assert lines[index].count(old) == 1, (lines[index], old)
        lines[index] = lines[index].replace(old, new)
        return "\n".join(lines)

    return corrupt


def lines_edit(edit: Callable[[list[str]], None]) -> Corrupt:
    """A corruption that edits the list of lines (the final LF stays)."""

    def corrupt(text: str) -> str:
        lines = text.split("\n")[:-1]
        edit(lines)
        return "\n".join(lines) + "\n"

    return corrupt


def swap(first: int, second: int) -> Corrupt:
    def edit(lines: list[str]) -> None:
        lines[first], lines[second] = lines[second], lines[first]

    return lines_edit(edit)


def delete(index: int) -> Corrupt:
    def edit(lines: list[str]) -> None:
        del lines[index]

    return lines_edit(edit)


def duplicate(index: int) -> Corrupt:
    return lines_edit(lambda lines: lines.insert(index, lines[index]))


def case(corrupt: Corrupt, record: str, field: str, id: str) -> Any:
    return pytest.param(corrupt, record, field, id=id)


CORRUPTIONS = [
    # Line endings and records.
    case(lambda t: t.replace("\n", "\r\n"), "TRACE BEGIN", "line ending", "CRLF"),
    case(lambda t: t[:-1], "TRACE END", "line ending", "missing final LF"),
    case(lambda t: t + "\n", "TRACE END", "end of trace", "extra final LF"),
    case(lambda t: t + "TABLE row=4\n", "TRACE END", "end of trace", "record after END"),
    case(lambda t: "", "TRACE BEGIN", "record", "empty text"),
    case(delete(TABLE[2]), "TABLE 2", "row", "missing TABLE record"),
    case(delete(LOOKUP[2]), "LOOKUP 2", "record", "missing LOOKUP record"),
    case(delete(END), "TRACE END", "record", "missing END record"),
    case(duplicate(TABLE[3]), "LOOKUP 0", "record", "duplicate TABLE record"),
    case(duplicate(IDS), "TABLE 0", "record", "duplicate IDS record"),
    case(swap(LOOKUP[0], LOOKUP[1]), "LOOKUP 0", "flat", "two LOOKUP records swapped"),
    case(swap(TABLE[3], LOOKUP[0]), "TABLE 3", "record", "TABLE and LOOKUP swapped"),
    case(swap(FIXTURE, IDS), "FIXTURE", "record", "FIXTURE and IDS swapped"),
    case(on_line(BEGIN, "-v1", "-v2"), "TRACE BEGIN", "version", "version v2"),
    case(on_line(END, "-v1", "-v2"), "TRACE END", "version", "version v2 at END"),
    case(on_line(END, "END", "BEGIN"), "TRACE END", "marker", "END marker altered"),
    # Each FIXTURE field.
    case(on_line(FIXTURE, "name=known", "name=Known"), "FIXTURE", "name", "name"),
    case(
        on_line(FIXTURE, "=token_embedding.weight", "=token_embedding..weight"),
        "FIXTURE",
        "parameter",
        "parameter",
    ),
    case(
        on_line(FIXTURE, "vocabulary=4", "vocabulary=04"), "FIXTURE", "vocabulary", "vocab lexeme"
    ),
    case(on_line(FIXTURE, "vocabulary=4", "vocabulary=5"), "FIXTURE", "table-shape", "vocab 5"),
    case(on_line(FIXTURE, "vocabulary=4", "vocabulary=0"), "FIXTURE", "vocabulary", "vocab 0"),
    case(on_line(FIXTURE, "width=2", "width=3"), "FIXTURE", "table-shape", "width"),
    case(on_line(FIXTURE, "width=2", "width=0"), "FIXTURE", "width", "width 0"),
    case(on_line(FIXTURE, "table-shape=4x2", "table-shape=2x4"), "FIXTURE", "table-shape", "table"),
    case(on_line(FIXTURE, "id-shape=1x3", "id-shape=1x3x"), "FIXTURE", "id-shape", "id-shape"),
    case(on_line(FIXTURE, "id-shape=1x3", "id-shape=3"), "FIXTURE", "output-shape", "id-shape 3"),
    case(
        on_line(FIXTURE, "output-shape=1x3x2", "output-shape=3x2"),
        "FIXTURE",
        "output-shape",
        "output-shape",
    ),
    case(
        on_line(FIXTURE, "upstream-shape=1x3x2", "upstream-shape=1x3x1"),
        "FIXTURE",
        "upstream-shape",
        "upstream-shape",
    ),
    case(
        on_line(FIXTURE, "gradient-shape=4x2", "gradient-shape=4x1"),
        "FIXTURE",
        "gradient-shape",
        "gradient-shape",
    ),
    case(
        on_line(FIXTURE, "accumulation=scatter-add", "accumulation=sum"),
        "FIXTURE",
        "accumulation",
        "accumulation",
    ),
    # IDS.
    case(on_line(IDS, "values=2,1,2", "values=2,1,3"), "IDS", "repeated-id", "values no repeat"),
    case(on_line(IDS, "values=2,1,2", "values=2,1,4"), "IDS", "values 2", "values out of range"),
    case(on_line(IDS, "values=2,1,2", "values=2,1"), "IDS", "values", "values too few"),
    case(on_line(IDS, "values=2,1,2", "values=2,01,2"), "IDS", "values 1", "values lexeme"),
    case(on_line(IDS, "repeated-id=2", "repeated-id=1"), "IDS", "repeated-id", "repeated id"),
    case(
        on_line(IDS, "positions=0,2", "positions=0,1"),
        "IDS",
        "repeated-flat-positions",
        "repeated positions",
    ),
    # TABLE.
    case(on_line(TABLE[2], "row=2", "row=5"), "TABLE 2", "row", "TABLE row"),
    case(on_line(TABLE[2], "uses=2", "uses=3"), "TABLE 2", "uses", "TABLE uses"),
    case(on_line(TABLE[0], "uses=0", "uses=1"), "TABLE 0", "uses", "TABLE uses unused row"),
    case(
        on_line(TABLE[2], "state=selected-repeated", "state=selected-once"),
        "TABLE 2",
        "state",
        "TABLE state",
    ),
    case(on_line(TABLE[2], "=30.000000000000", "=30.0"), "TABLE 2", "values 0", "TABLE lexeme"),
    case(
        on_line(TABLE[2], "31.000000000000", "31.000000000000,1.000000000000"),
        "TABLE 2",
        "values",
        "TABLE value count",
    ),
    case(
        on_line(TABLE[2], "=30.000000000000", "=30.500000000000"),
        "LOOKUP 0",
        "output 0",
        "TABLE value disagrees with the lookup",
    ),
    # LOOKUP.
    case(on_line(LOOKUP[1], "flat=1", "flat=2"), "LOOKUP 1", "flat", "LOOKUP flat"),
    case(on_line(LOOKUP[1], "coordinate=0,1", "coordinate=1,0"), "LOOKUP 1", "coordinate", "coord"),
    case(on_line(LOOKUP[1], "id=1", "id=3"), "LOOKUP 1", "id", "LOOKUP id"),
    case(
        on_line(LOOKUP[1], "sharing=single-row", "sharing=repeated-row"),
        "LOOKUP 1",
        "sharing",
        "LOOKUP sharing",
    ),
    case(on_line(LOOKUP[1], "one-hot=0,1,0,0", "one-hot=0,1,1,0"), "LOOKUP 1", "one-hot 2", "oh"),
    case(on_line(LOOKUP[1], "one-hot=0,1,0,0", "one-hot=0,1,0"), "LOOKUP 1", "one-hot", "oh len"),
    case(
        on_line(LOOKUP[1], "selected-row=1", "selected-row=2"),
        "LOOKUP 1",
        "selected-row",
        "LOOKUP selected-row",
    ),
    case(
        on_line(LOOKUP[1], "output=20.000000000000", "output=21.000000000000"),
        "LOOKUP 1",
        "output 0",
        "LOOKUP output",
    ),
    case(
        on_line(LOOKUP[1], "upstream=0.000000000000,2.000000000000", "upstream=0.000000000000,2.5"),
        "LOOKUP 1",
        "upstream 1",
        "LOOKUP upstream lexeme",
    ),
    case(
        on_line(LOOKUP[1], ",2.000000000000", ",2.500000000000"),
        "LOOKUP 1",
        "upstream 1",
        "LOOKUP upstream disagrees with the contribution it feeds",
    ),
    case(
        on_line(LOOKUP[2], "upstream=3.000000000000", "upstream=3.000000000001"),
        "LOOKUP 2",
        "upstream 0",
        "LOOKUP upstream into the repeated row",
    ),
    # ROW-GRADIENT.
    case(on_line(ROW_GRADIENT[2], "row=2", "row=3"), "ROW-GRADIENT 2", "row", "gradient row"),
    case(
        on_line(ROW_GRADIENT[2], "flat-positions=0,2", "flat-positions=2,0"),
        "ROW-GRADIENT 2",
        "flat-positions",
        "gradient positions",
    ),
    case(
        on_line(ROW_GRADIENT[2], "|3.000000000000", "|3.500000000000"),
        "ROW-GRADIENT 2",
        "contributions 1",
        "gradient contribution",
    ),
    case(
        on_line(ROW_GRADIENT[2], "|3.000000000000,4.000000000000", ""),
        "ROW-GRADIENT 2",
        "contributions",
        "gradient contribution missing",
    ),
    case(
        on_line(ROW_GRADIENT[2], "rule=repeated-sum", "rule=single-copy"),
        "ROW-GRADIENT 2",
        "rule",
        "gradient rule",
    ),
    case(
        on_line(ROW_GRADIENT[2], "accumulated=4.000000000000", "accumulated=4.000000000001"),
        "ROW-GRADIENT 2",
        "accumulated 0",
        "gradient accumulated",
    ),
    case(
        on_line(ROW_GRADIENT[0], "accumulated=0.000000000000", "accumulated=-0.000000000000"),
        "ROW-GRADIENT 0",
        "accumulated 0",
        "negative zero",
    ),
    # Lexemes and layout.
    case(
        on_line(LOOKUP[1], "upstream=0.000000000000", "upstream=-0.000000000000"),
        "LOOKUP 1",
        "upstream 0",
        "negative zero upstream",
    ),
    case(on_line(TABLE[1], "=20.000000000000", "=+20.000000000000"), "TABLE 1", "values 0", "plus"),
    case(on_line(TABLE[1], "=20.000000000000", "=2.000000000000e1"), "TABLE 1", "values 0", "exp"),
    case(on_line(TABLE[1], "=20.000000000000", "=20.00000000000"), "TABLE 1", "values 0", "11 dp"),
    case(
        on_line(TABLE[2], "uses=2 state=selected-repeated", "state=selected-repeated uses=2"),
        "TABLE 2",
        "uses",
        "fields reordered",
    ),
    case(on_line(TABLE[2], "state=selected-repeated ", ""), "TABLE 2", "state", "field missing"),
    case(
        on_line(TABLE[2], "31.000000000000", "31.000000000000 note=x"), "TABLE 2", "note", "extra"
    ),
    case(on_line(TABLE[2], "uses=2", "count=2"), "TABLE 2", "uses", "unknown field name"),
    case(on_line(TABLE[2], "uses=2 ", "uses=2  "), "TABLE 2", "spacing", "double space"),
    case(
        on_line(FIXTURE, "vocabulary=4", "vocabulary=99999999999999999999"),
        "FIXTURE",
        "vocabulary",
        "huge integer",
    ),
    case(
        on_line(FIXTURE, "vocabulary=4", "vocabulary=9007199254740992"),
        "FIXTURE",
        "vocabulary",
        "2**53",
    ),
    case(
        on_line(FIXTURE, "vocabulary=4", "vocabulary=9007199254740991"),
        "FIXTURE",
        "table-shape",
        "2**53-1 is safe but disagrees with the table shape",
    ),
    case(on_line(LOOKUP[0], "flat=0", "flat=" + "9" * 5000), "LOOKUP 0", "flat", "huge flat"),
    case(
        on_line(TABLE[0], "=10.000000000000", "=1" + "0" * 5000 + ".000000000000"),
        "TABLE 0",
        "values 0",
        "huge float",
    ),
]


def test_the_spec_trace_parses_with_every_number_kept_as_its_lexeme(trace_text: str) -> None:
    trace = parse_trace(trace_text)

    assert trace.version == "token-embeddings-v1"
    assert trace.fixture.parameter == "token_embedding.weight"
    assert (trace.fixture.vocabulary, trace.fixture.width) == ("4", "2")
    assert trace.fixture.id_extents == ("1", "3")
    assert trace.ids.values == ("2", "1", "2")
    assert trace.ids.repeated_id == "2"
    assert trace.ids.repeated_flat_positions == ("0", "2")
    assert [row.state for row in trace.table_rows] == [
        "unused",
        "selected-once",
        "selected-repeated",
        "unused",
    ]
    assert trace.table_rows[2].values == ("30.000000000000", "31.000000000000")
    assert trace.lookups[1].one_hot == ("0", "1", "0", "0")
    assert trace.lookups[2].coordinate == ("0", "2")
    assert trace.row_gradients[2].contributions == (
        ("1.000000000000", "0.000000000000"),
        ("3.000000000000", "4.000000000000"),
    )
    assert trace.row_gradients[2].accumulated == ("4.000000000000", "4.000000000000")
    assert trace.row_gradients[0].flat_positions == ()


def test_a_parsed_trace_is_frozen(trace_text: str) -> None:
    trace = parse_trace(trace_text)

    with pytest.raises(AttributeError):
        trace.fixture.vocabulary = "5"  # type: ignore[misc]


@pytest.mark.parametrize(("corrupt", "record", "field"), CORRUPTIONS)
def test_each_corruption_is_rejected_naming_its_record_and_field(
    trace_text: str, corrupt: Corrupt, record: str, field: str
) -> None:
    corrupted = corrupt(trace_text)
    assert corrupted != trace_text

    with raises_rule(FormatError, "trace.format", record=record, field=field) as caught:
        parse_trace(corrupted)

    error = caught.value
    assert str(error).startswith(f"{record} {field}: expected ")
    assert len(str(error)) < 300, "long lexemes are shortened in messages"


def test_the_error_is_a_value_error_that_says_what_was_expected_and_found(
    trace_text: str,
) -> None:
    with pytest.raises(
        ValueError,
        match=r"^TABLE 2 state: expected selected-repeated for "
        r"uses=2, found unused$",
    ):
        parse_trace(on_line(TABLE[2], "state=selected-repeated", "state=unused")(trace_text))


def test_a_trace_with_two_repeated_ids_is_not_expressible_in_v1() -> None:
    table = [[1.0], [2.0], [3.0]]
    text = build_trace(table, [0], [1], [[1.0]])
    text = text.replace("id-shape=1 ", "id-shape=4 ").replace(
        "output-shape=1x1", "output-shape=4x1"
    )
    text = text.replace("upstream-shape=1x1", "upstream-shape=4x1")
    text = text.replace("values=0 repeated-id=none", "values=0,1,0,1 repeated-id=0")

    with raises_rule(FormatError, "trace.format", record="IDS", field="repeated-id") as caught:
        parse_trace(text)
    assert str(caught.value).startswith("IDS repeated-id: expected at most one")


def test_the_independent_writer_reproduces_the_spec_trace(
    trace_text: str,
) -> None:
    table = [[10.0, 11.0], [20.0, 21.0], [30.0, 31.0], [40.0, 41.0]]
    upstream = [[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]

    text = build_trace(
        table,
        [2, 1, 2],
        [1, 3],
        upstream,
        name="known-table-repeated-id",
        parameter="token_embedding.weight",
    )

    assert text == trace_text


def test_a_scalar_and_an_empty_id_shape_parse() -> None:
    scalar = parse_trace(build_trace([[0.5, -1.25]], [0], [], [[2.0, -3.0]]))
    empty = parse_trace(build_trace([[0.5], [1.5]], [], [0], []))

    assert scalar.fixture.id_shape == "none"
    assert scalar.fixture.output_shape == "2"
    assert scalar.lookups[0].coordinate == ()
    assert scalar.row_gradients[0].accumulated == ("2.000000000000", "-3.000000000000")
    assert empty.ids.values == ()
    assert empty.lookups == ()
    assert [row.state for row in empty.table_rows] == ["unused", "unused"]


@st.composite
def lookups(draw: st.DrawFn) -> tuple[list[list[float]], list[int], list[int], list[list[float]]]:
    """A random lookup with at most one repeated ID and quarter-step values."""
    vocabulary = draw(st.integers(1, 6))
    width = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    count = math.prod(shape)
    quarter = st.integers(-4000, 4000).map(lambda k: k / 4)
    vector = st.lists(quarter, min_size=width, max_size=width)
    table = draw(st.lists(vector, min_size=vocabulary, max_size=vocabulary))
    ids: list[int] = []
    if count:
        distinct = draw(
            st.lists(
                st.integers(0, vocabulary - 1),
                unique=True,
                min_size=1,
                max_size=min(count, vocabulary),
            )
        )
        repeated = draw(st.sampled_from(distinct))
        ids = draw(st.permutations(distinct + [repeated] * (count - len(distinct))))
    upstream = draw(st.lists(vector, min_size=count, max_size=count))
    return table, ids, shape, upstream


@settings(max_examples=150, deadline=None)
@given(lookups())
def test_any_valid_trace_parses_whatever_its_numbers_vocabulary_and_id_shape(
    lookup: tuple[list[list[float]], list[int], list[int], list[list[float]]],
) -> None:
    table, ids, shape, upstream = lookup

    trace = parse_trace(build_trace(table, ids, shape, upstream))

    assert trace.ids.values == tuple(str(i) for i in ids)
    assert trace.fixture.id_extents == tuple(str(extent) for extent in shape)
    assert [row.values for row in trace.table_rows] == [
        tuple(f"{value:.12f}" for value in row) for row in table
    ]
    assert [lookup.upstream for lookup in trace.lookups] == [
        tuple(f"{value:.12f}" for value in row) for row in upstream
    ]


@settings(max_examples=300, deadline=None)
@given(
    position=st.integers(0, 2000),
    replacement=st.sampled_from(list("0123456789-.,=x| \n\razAZ")),
)
def test_any_one_character_change_either_parses_or_raises_a_trace_format_error(
    position: int, replacement: str
) -> None:
    index = position % len(SPEC_TRACE)
    changed = SPEC_TRACE[:index] + replacement + SPEC_TRACE[index + 1 :]

    try:
        parse_trace(changed)
    except FormatError as error:
        assert error.rule == "trace.format"
        assert str(error).startswith(f"{error.record} {error.field}: ")
