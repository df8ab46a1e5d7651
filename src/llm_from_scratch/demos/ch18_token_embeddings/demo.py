"""Format the chapter report as the demo's text, in English or Russian, its numbers as the trace
prints them."""

from __future__ import annotations

from llm_from_scratch.demos.ch18_token_embeddings.report import Ch18Report, ChapterCheckResults
from llm_from_scratch.labels import DEMO_LABELS, Labels, label, load_labels
from llm_from_scratch.traces.token_embeddings_v1 import floats_text, ints_text, shape_text


def format_demo(report: Ch18Report, lang: str = "en") -> str:
    """The demo text, one LF after each line: one ``repeated row`` line per repeated row, and the
    chapter's own checks only for the chapter's fixture (a learner's IDs get lines about them).

    Raises:
        FormatError: ``labels.table``, the language has no table or a label is missing or blank.
    """
    labels = load_labels(lang, DEMO_LABELS)

    def line(key: str, **fields: object) -> str:
        return label(labels, key).format(**fields)

    fixture = report.fixture
    lines = [
        line("table", name=report.table_name, shape=shape_text(report.table_shape)),
        line("ids", shape=shape_text(fixture.token_shape), values=ints_text(fixture.token_ids)),
        line("output", shape=shape_text(report.output_shape),
             values=floats_text(report.output_values)),
        line("one_hot", equal=_bool(labels, report.one_hot_equals_lookup)),
        line("upstream", shape=shape_text(report.upstream_shape),
             values=floats_text(report.upstream_values)),
        line("gradient", shape=shape_text(report.gradient_shape),
             values=floats_text(report.gradient_values)),
        *(
            line("repeated_row", row=row.row,
                 sum=" + ".join(f"[{floats_text(vector)}]" for vector in row.contributions),
                 total=floats_text(row.accumulated))
            for row in report.repeated_rows
        ),
        line("unused_zero", zero=_bool(labels, report.unused_rows_zero)),
    ]  # fmt: skip
    if report.checks is not None:
        lines.extend(_check_lines(report.checks, labels))
    return "".join(f"{text}\n" for text in lines)


def _check_lines(checks: ChapterCheckResults, labels: Labels) -> list[str]:
    bounds = checks.bounds
    facts: dict[str, dict[str, object]] = {
        "initialized": {"seed": checks.init_seed, "shape": shape_text(checks.init_shape),
                        "reproducible": _bool(labels, checks.init_reproducible)},
        "identity": {"same": _bool(labels, checks.clone_same_node)},
        "empty": {"shape": shape_text(checks.empty_output_shape),
                  "count": checks.empty_value_count},
        "bounds": {"id": bounds.token_id, "rows": bounds.vocabulary_size,
                   "rejected": _bool(labels, bounds.rejected)},
        "handoff": {"width": checks.embedding_width},
    }  # fmt: skip
    return [label(labels, key).format(**fields) for key, fields in facts.items()]


def _bool(labels: Labels, value: bool) -> str:
    return label(labels, "true" if value else "false")
