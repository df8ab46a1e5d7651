"""Format the chapter report as the trace ``token-embeddings-v1``, whose grammar
(:mod:`llm_from_scratch.traces.token_embeddings_v1`) gives every lexeme and, in
``RECORD_FIELDS``, every record's fields in order: each line here lists only its values."""

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


def _line(record: str, *values: str) -> str:
    """A record's line from its values, in the order of the grammar's ``RECORD_FIELDS``."""
    return v1.record_line(record, dict(zip(v1.RECORD_FIELDS[record], values, strict=True)))


def _fixture_line(report: Ch18Report) -> str:
    vocabulary, width = report.table_shape
    shapes = (report.table_shape, report.fixture.token_shape, report.output_shape,
              report.upstream_shape, report.gradient_shape)  # fmt: skip
    return _line(
        v1.FIXTURE,
        report.fixture.name,
        report.table_name,
        str(vocabulary),
        str(width),
        *map(v1.shape_text, shapes),
        v1.ACCUMULATION,
    )


def _ids_line(report: Ch18Report) -> str:
    repeated = report.repeated_rows
    return _line(
        v1.IDS,
        v1.ints_text(report.fixture.token_ids),
        v1.repeated_id_text([row.row for row in repeated]),
        v1.ints_text(repeated[0].flat_positions if repeated else ()),
    )


def _table_line(row: TableRow) -> str:
    uses = row.uses
    return _line(v1.TABLE, str(row.row), str(uses), v1.state_for(uses), v1.floats_text(row.values))


def _lookup_line(lookup: Lookup, row: TableRow) -> str:
    return _line(
        v1.LOOKUP,
        str(lookup.flat),
        v1.ints_text(lookup.coordinate),
        str(lookup.token_id),
        v1.sharing_for(row.uses),
        v1.ints_text(lookup.one_hot),
        str(lookup.selected_row),
        v1.floats_text(lookup.output),
        v1.floats_text(lookup.upstream),
    )


def _gradient_line(row: TableRow) -> str:
    return _line(
        v1.ROW_GRADIENT,
        str(row.row),
        v1.ints_text(row.flat_positions),
        v1.vectors_text(row.contributions),
        v1.rule_for(row.uses),
        v1.floats_text(row.accumulated),
    )
