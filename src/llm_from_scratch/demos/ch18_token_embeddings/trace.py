"""Format the chapter report as the machine-readable trace ``token-embeddings-v1``."""

from __future__ import annotations

from typing import Final

from llm_from_scratch.demos.ch18_token_embeddings.formatting import (
    floats_text,
    ints_text,
    list_or_none,
    shape_text,
)
from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report, Lookup, TableRow

TRACE_VERSION: Final = "token-embeddings-v1"
_STATES: Final = ("unused", "selected-once", "selected-repeated")
_RULES: Final = ("unused-zero", "single-copy", "repeated-sum")


def _by_uses(names: tuple[str, str, str], uses: int) -> str:
    return names[min(uses, 2)]


def format_trace(report: Ch18Report) -> str:
    """The trace text: LF line endings and one final LF."""
    repeated = report.repeated_rows
    lines = [
        f"TRACE {TRACE_VERSION} BEGIN",
        f"FIXTURE name={report.fixture_name} parameter={report.table_name} "
        f"vocabulary={report.table_shape[0]} width={report.table_shape[1]} "
        f"table-shape={shape_text(report.table_shape)} "
        f"id-shape={shape_text(report.token_shape)} "
        f"output-shape={shape_text(report.output_shape)} "
        f"upstream-shape={shape_text(report.upstream_shape)} "
        f"gradient-shape={shape_text(report.gradient_shape)} accumulation=scatter-add",
        f"IDS values={ints_text(report.token_ids)} "
        f"repeated-id={ints_text(row.row for row in repeated[:1]) or 'none'} "
        f"repeated-flat-positions="
        f"{list_or_none(ints_text(repeated[0].flat_positions) if repeated else '')}",
        *(_table_line(row) for row in report.rows),
        *(_lookup_line(lookup) for lookup in report.lookups),
        *(_gradient_line(row) for row in report.rows),
        f"TRACE {TRACE_VERSION} END",
    ]
    return "".join(f"{line}\n" for line in lines)


def _table_line(row: TableRow) -> str:
    return (
        f"TABLE row={row.row} uses={row.uses} state={_by_uses(_STATES, row.uses)} "
        f"values={floats_text(row.values)}"
    )


def _lookup_line(lookup: Lookup) -> str:
    return (
        f"LOOKUP flat={lookup.flat} coordinate={ints_text(lookup.coordinate)} "
        f"id={lookup.token_id} sharing={'repeated-row' if lookup.repeated else 'single-row'} "
        f"one-hot={ints_text(lookup.one_hot)} selected-row={lookup.selected_row} "
        f"output={floats_text(lookup.output)} upstream={floats_text(lookup.upstream)}"
    )


def _gradient_line(row: TableRow) -> str:
    contributions = "|".join(floats_text(vector) for vector in row.contributions)
    return (
        f"ROW-GRADIENT row={row.row} "
        f"flat-positions={list_or_none(ints_text(row.flat_positions))} "
        f"contributions={list_or_none(contributions)} rule={_by_uses(_RULES, row.uses)} "
        f"accumulated={floats_text(row.accumulated)}"
    )
