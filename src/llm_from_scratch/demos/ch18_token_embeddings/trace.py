"""Format the chapter report as the trace ``token-embeddings-v1``, whose grammar
(:mod:`llm_from_scratch.traces.token_embeddings_v1`) gives every lexeme and field order."""

from __future__ import annotations

from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report, Lookup, TableRow
from llm_from_scratch.traces import token_embeddings_v1 as v1


def format_trace(report: Ch18Report) -> str:
    """The trace text: LF line endings and one final LF.

    Raises:
        FormatError: ``trace.format``, at ``IDS repeated-id`` when more than one ID repeats.
    """
    lines = [
        v1.marker_line(v1.BEGIN),
        _fixture_line(report),
        _ids_line(report),
        *(_table_line(row) for row in report.rows),
        *(_lookup_line(lookup, report.rows[lookup.token_id]) for lookup in report.lookups),
        *(_gradient_line(row) for row in report.rows),
        v1.marker_line(v1.END),
    ]
    return "".join(f"{line}\n" for line in lines)


def _fixture_line(report: Ch18Report) -> str:
    vocabulary, width = report.table_shape
    return v1.record_line(
        v1.FIXTURE,
        {
            "name": report.fixture.name,
            "parameter": report.table_name,
            "vocabulary": str(vocabulary),
            "width": str(width),
            "table-shape": v1.shape_text(report.table_shape),
            "id-shape": v1.shape_text(report.fixture.token_shape),
            "output-shape": v1.shape_text(report.output_shape),
            "upstream-shape": v1.shape_text(report.upstream_shape),
            "gradient-shape": v1.shape_text(report.gradient_shape),
            "accumulation": v1.ACCUMULATION,
        },
    )


def _ids_line(report: Ch18Report) -> str:
    repeated = report.repeated_rows
    return v1.record_line(
        v1.IDS,
        {
            "values": v1.ints_text(report.fixture.token_ids),
            "repeated-id": v1.repeated_id_text([row.row for row in repeated]),
            "repeated-flat-positions": v1.ints_text(repeated[0].flat_positions if repeated else ()),
        },
    )


def _table_line(row: TableRow) -> str:
    return v1.record_line(
        v1.TABLE,
        {
            "row": str(row.row),
            "uses": str(row.uses),
            "state": v1.state_for(row.uses),
            "values": v1.floats_text(row.values),
        },
    )


def _lookup_line(lookup: Lookup, row: TableRow) -> str:
    return v1.record_line(
        v1.LOOKUP,
        {
            "flat": str(lookup.flat),
            "coordinate": v1.ints_text(lookup.coordinate),
            "id": str(lookup.token_id),
            "sharing": v1.sharing_for(row.uses),
            "one-hot": v1.ints_text(lookup.one_hot),
            "selected-row": str(lookup.selected_row),
            "output": v1.floats_text(lookup.output),
            "upstream": v1.floats_text(lookup.upstream),
        },
    )


def _gradient_line(row: TableRow) -> str:
    return v1.record_line(
        v1.ROW_GRADIENT,
        {
            "row": str(row.row),
            "flat-positions": v1.ints_text(row.flat_positions),
            "contributions": v1.vectors_text(row.contributions),
            "rule": v1.rule_for(row.uses),
            "accumulated": v1.floats_text(row.accumulated),
        },
    )
