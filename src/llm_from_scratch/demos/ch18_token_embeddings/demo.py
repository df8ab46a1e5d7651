"""Format the chapter report as the demo's text, its numbers as the trace prints them."""

from __future__ import annotations

from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report
from llm_from_scratch.traces.token_embeddings_v1 import floats_text, ints_text, shape_text


def format_demo(report: Ch18Report) -> str:
    """The demo text, one LF after each line and one ``repeated row`` line per repeated row."""
    fixture, bounds = report.fixture, report.bounds
    lines = [
        f"table: {report.table_name} shape={shape_text(report.table_shape)}",
        f"ids: shape={shape_text(fixture.token_shape)} values={ints_text(fixture.token_ids)}",
        f"output: shape={shape_text(report.output_shape)} "
        f"values={floats_text(report.output_values)}",
        f"one-hot multiplication equals lookup: {_bool(report.one_hot_equals_lookup)}",
        f"upstream: shape={shape_text(report.upstream_shape)} "
        f"values={floats_text(report.upstream_values)}",
        f"table gradient: shape={shape_text(report.gradient_shape)} "
        f"values={floats_text(report.gradient_values)}",
        *(
            f"repeated row {row.row}: "
            + " + ".join(f"[{floats_text(vector)}]" for vector in row.contributions)
            + f" = [{floats_text(row.accumulated)}]"
            for row in report.repeated_rows
        ),
        f"unused rows stay zero: {_bool(report.unused_rows_zero)}",
        f"initialized: seed={fixture.init_seed} shape={shape_text(report.init_shape)} "
        f"reproducible={_bool(report.init_reproducible)}",
        f"identity: clone-same-node={_bool(report.clone_same_node)}",
        f"empty ids: shape={shape_text(report.empty_output_shape)} "
        f"value-count={report.empty_value_count}",
        f"bounds: id={bounds.token_id} rows={bounds.vocabulary_size} "
        f"rejected={_bool(bounds.rejected)}",
        f"chapter 19 handoff: preserve leading axes and project width {report.embedding_width}",
    ]
    return "".join(f"{line}\n" for line in lines)


def _bool(value: bool) -> str:
    return "true" if value else "false"
