"""A learner's IDs through the writer, the parser and the renderer.

Whatever IDs the layer takes, the trace the demo writes must parse back to the numbers a plain
loop gives for the chapter's table, and the figure must show them in both languages.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings import (
    KNOWN_FIXTURE,
    build_report,
    format_trace,
    render_demo,
    render_trace,
)
from llm_from_scratch.errors import FormatError
from llm_from_scratch.figures.render import render_figure
from llm_from_scratch.figures.trace_parser import parse_trace
from llm_from_scratch.labels import LANGUAGES

from checks import raises_rule, shown_vector

TABLE = [[10.0, 11.0], [20.0, 21.0], [30.0, 31.0], [40.0, 41.0]]
LEARNER_IDS = [
    pytest.param(2, id="scalar"),
    pytest.param([], id="empty"),
    pytest.param([[0, 0, 0]], id="one-row-thrice"),
    pytest.param([[3, 2], [1, 0]], id="two-by-two"),
]


def lexemes(values: list[float]) -> tuple[str, ...]:
    return tuple(f"{value:.12f}" for value in values)


def plain_run(ids: Any) -> tuple[list[int], list[list[float]], list[list[float]]]:
    """The flat IDs, the default upstream (1, 2, 3, ... by position) and the table gradient,
    by plain loops."""
    flat = [int(i) for i in np.asarray(ids, dtype=int).reshape(-1)]
    upstream = [[2.0 * position + 1, 2.0 * position + 2] for position in range(len(flat))]
    gradient = [[0.0, 0.0] for _ in TABLE]
    for position, token_id in enumerate(flat):
        for feature in range(2):
            gradient[token_id][feature] += upstream[position][feature]
    return flat, upstream, gradient


@pytest.mark.parametrize("ids", LEARNER_IDS)
def test_the_trace_of_learner_ids_parses_back_to_the_plain_loop_numbers(ids: Any) -> None:
    flat, upstream, gradient = plain_run(ids)

    trace = parse_trace(render_trace(KNOWN_FIXTURE.with_ids(ids)))

    assert trace.fixture.id_extents == tuple(str(extent) for extent in np.shape(ids))
    assert trace.ids.values == tuple(str(token_id) for token_id in flat)
    assert [lookup.output for lookup in trace.lookups] == [lexemes(TABLE[i]) for i in flat]
    assert [lookup.upstream for lookup in trace.lookups] == [lexemes(u) for u in upstream]
    assert [row.accumulated for row in trace.row_gradients] == [lexemes(g) for g in gradient]
    assert [row.uses for row in trace.table_rows] == [str(flat.count(row)) for row in range(4)]


@pytest.mark.parametrize("ids", LEARNER_IDS)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_figure_of_learner_ids_shows_every_row_and_position(ids: Any, lang: str) -> None:
    trace = parse_trace(render_trace(KNOWN_FIXTURE.with_ids(ids)))

    page = render_figure(trace, lang)

    assert f'<html lang="{lang}"' in page
    for row, gradient in zip(trace.table_rows, trace.row_gradients, strict=True):
        assert shown_vector(row.values) in page
        assert shown_vector(gradient.accumulated) in page
    for lookup in trace.lookups:
        assert shown_vector(lookup.upstream) in page
    assert page.count('class="card"') == 4


def test_a_scalar_id_writes_its_shape_and_coordinate_as_none() -> None:
    lines = render_trace(KNOWN_FIXTURE.with_ids(2)).splitlines()

    assert " id-shape=none output-shape=2 upstream-shape=2 " in lines[1]
    assert lines[7].startswith("LOOKUP flat=0 coordinate=none id=2 ")
    assert '<span class="num" dir="ltr">none</span>' in render_figure(
        parse_trace("\n".join(lines) + "\n"), "en"
    )


def test_the_writer_refuses_two_repeated_ids_naming_the_record_and_field() -> None:
    report = build_report(KNOWN_FIXTURE.with_ids([[0, 1, 0, 1]]))

    with raises_rule(FormatError, "trace.format", record="IDS", field="repeated-id") as caught:
        format_trace(report)

    error = caught.value
    assert str(error) == (
        "IDS repeated-id: expected at most one repeated ID (v1 names one), found IDs 0, 1"
    )


def test_the_demo_prints_one_repeated_row_line_per_repeated_row() -> None:
    demo = render_demo(KNOWN_FIXTURE.with_ids([[0, 1, 0, 1]]))

    repeated = [line for line in demo.splitlines() if line.startswith("repeated row")]
    assert repeated == [
        "repeated row 0: [1.000000000000,2.000000000000] + [5.000000000000,6.000000000000]"
        " = [6.000000000000,8.000000000000]",
        "repeated row 1: [3.000000000000,4.000000000000] + [7.000000000000,8.000000000000]"
        " = [10.000000000000,12.000000000000]",
    ]
