"""Format the chapter report as the machine-readable trace ``token-embeddings-v1``.

Every lexeme, record and field order comes from :mod:`llm_from_scratch.traces.token_embeddings_v1`;
this module only picks the report's facts for each field.
"""

from __future__ import annotations

from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report, Lookup, TableRow
from llm_from_scratch.traces import (
    ACCUMULATION,
    BEGIN,
    END,
    FIXTURE,
    IDS,
    LOOKUP,
    ROW_GRADIENT,
    TABLE,
    TRACE_VERSION,
    floats_text,
    ints_text,
    marker_line,
    record_line,
    repeated_id_text,
    rule_for,
    shape_text,
    sharing_for,
    state_for,
    vectors_text,
)

__all__ = ["TRACE_VERSION", "format_trace"]


def format_trace(report: Ch18Report) -> str:
    """The trace text: LF line endings and one final LF.

    Raises:
        TraceFormatError: when more than one ID repeats (record ``IDS``, field ``repeated-id``),
            since v1 names at most one repeated ID.
    """
    lines = [
        marker_line(BEGIN),
        _fixture_line(report),
        _ids_line(report),
        *(_table_line(row) for row in report.rows),
        *(_lookup_line(lookup, report.rows[lookup.token_id]) for lookup in report.lookups),
        *(_gradient_line(row) for row in report.rows),
        marker_line(END),
    ]
    return "".join(f"{line}\n" for line in lines)


def _fixture_line(report: Ch18Report) -> str:
    vocabulary, width = report.table_shape
    return record_line(
        FIXTURE,
        {
            "name": report.fixture_name,
            "parameter": report.table_name,
            "vocabulary": str(vocabulary),
            "width": str(width),
            "table-shape": shape_text(report.table_shape),
            "id-shape": shape_text(report.token_shape),
            "output-shape": shape_text(report.output_shape),
            "upstream-shape": shape_text(report.upstream_shape),
            "gradient-shape": shape_text(report.gradient_shape),
            "accumulation": ACCUMULATION,
        },
    )


def _ids_line(report: Ch18Report) -> str:
    repeated = report.repeated_rows
    return record_line(
        IDS,
        {
            "values": ints_text(report.token_ids),
            "repeated-id": repeated_id_text([row.row for row in repeated]),
            "repeated-flat-positions": ints_text(repeated[0].flat_positions if repeated else ()),
        },
    )


def _table_line(row: TableRow) -> str:
    return record_line(
        TABLE,
        {
            "row": str(row.row),
            "uses": str(row.uses),
            "state": state_for(row.uses),
            "values": floats_text(row.values),
        },
    )


def _lookup_line(lookup: Lookup, row: TableRow) -> str:
    return record_line(
        LOOKUP,
        {
            "flat": str(lookup.flat),
            "coordinate": ints_text(lookup.coordinate),
            "id": str(lookup.token_id),
            "sharing": sharing_for(row.uses),
            "one-hot": ints_text(lookup.one_hot),
            "selected-row": str(lookup.selected_row),
            "output": floats_text(lookup.output),
            "upstream": floats_text(lookup.upstream),
        },
    )


def _gradient_line(row: TableRow) -> str:
    return record_line(
        ROW_GRADIENT,
        {
            "row": str(row.row),
            "flat-positions": ints_text(row.flat_positions),
            "contributions": vectors_text(row.contributions),
            "rule": rule_for(row.uses),
            "accumulated": floats_text(row.accumulated),
        },
    )
