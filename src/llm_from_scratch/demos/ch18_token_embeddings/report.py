"""Run a fixture through the library: the one report the demo text and the trace format."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.fixture import (
    KNOWN_FIXTURE,
    Ch18Fixture,
    ChapterChecks,
)
from llm_from_scratch.errors import IdError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.tensor import Shape, Tensor

if TYPE_CHECKING:
    import numpy.typing as npt


@dataclass(frozen=True)
class Lookup:
    """One output position: its ID, one-hot indicator, selected row, output and upstream."""

    flat: int
    coordinate: tuple[int, ...]
    token_id: int
    one_hot: tuple[int, ...]
    selected_row: int
    output: tuple[float, ...]
    upstream: tuple[float, ...]


@dataclass(frozen=True)
class TableRow:
    """One table row: its values, the positions that select it, their upstreams, its gradient."""

    row: int
    values: tuple[float, ...]
    flat_positions: tuple[int, ...]
    contributions: tuple[tuple[float, ...], ...]
    accumulated: tuple[float, ...]

    @property
    def uses(self) -> int:
        """How many positions selected this row."""
        return len(self.flat_positions)


@dataclass(frozen=True)
class BoundsCheck:
    """What the layer said of an out-of-vocabulary ID."""

    token_id: int
    vocabulary_size: int
    rejected: bool


@dataclass(frozen=True)
class ChapterCheckResults:
    """What the chapter's own checks found: two tables from one seed, a clone, an empty ID
    shape and an ID outside the table."""

    init_seed: int
    init_shape: Shape
    init_reproducible: bool
    clone_same_node: bool
    empty_output_shape: Shape
    empty_value_count: int
    bounds: BoundsCheck
    embedding_width: int


@dataclass(frozen=True)
class Ch18Report:
    """The fixture the demo ran and every fact computed from it, in the order the demo shows."""

    fixture: Ch18Fixture
    table_name: str
    table_shape: Shape
    output_shape: Shape
    output_values: tuple[float, ...]
    one_hot_equals_lookup: bool
    upstream_shape: Shape
    upstream_values: tuple[float, ...]
    gradient_shape: Shape
    gradient_values: tuple[float, ...]
    lookups: tuple[Lookup, ...]
    rows: tuple[TableRow, ...]
    unused_rows_zero: bool
    checks: ChapterCheckResults | None

    @property
    def repeated_rows(self) -> tuple[TableRow, ...]:
        """Rows selected by more than one position."""
        return tuple(row for row in self.rows if row.uses > 1)


def explicit_one_hot_product(
    table: npt.NDArray[np.floating], token_ids: Sequence[int]
) -> tuple[list[list[int]], list[float]]:
    """Each (valid) ID's ``V``-long 0/1 indicator, and the flat ``indicators @ table`` in plain
    sums: the baseline the lookup is compared against.

    Shape:
        ``table``: ``[V, d]``; ``token_ids``: ``[N]``; indicators ``[N, V]``; product ``[N * d]``.

    Example:
        >>> explicit_one_hot_product(np.array([[10.0, 11.0], [20.0, 21.0]]), [1])
        ([[0, 1]], [20.0, 21.0])
    """
    rows, width = table.shape
    indicators = [[int(row == token_id) for row in range(rows)] for token_id in token_ids]
    product = [
        float(sum(active * float(table[row, feature]) for row, active in enumerate(one_hot)))
        for one_hot in indicators
        for feature in range(width)
    ]
    return indicators, product


def build_report(fixture: Ch18Fixture = KNOWN_FIXTURE) -> Ch18Report:
    """Run a fixture: forward, one-hot baseline, backward, and the chapter's own checks (init,
    clone, empty and bounds) when the fixture has them.

    Raises:
        The layer's and the tape's errors, when they refuse the fixture's IDs or upstream.
    """
    embedding = fixture.layer()
    table = embedding.table
    output = embedding.forward(list(fixture.token_ids), fixture.token_shape)
    output_values = tuple(output.value_snapshot().flat_values())
    indicators, product = explicit_one_hot_product(table.tensor.numpy(), fixture.token_ids)
    upstream = Tensor(fixture.upstream_shape, fixture.upstream_values)
    output.backward_with_seed(upstream)
    gradient = table.tensor.gradient_snapshot()
    if gradient is None:
        raise RuntimeError("a parameter leaf has no gradient")
    up_rows = upstream.numpy().reshape(-1, embedding.embedding_width)
    rows = _table_rows(table.tensor.numpy(), gradient.numpy(), fixture.token_ids, up_rows)
    return Ch18Report(
        fixture=fixture,
        table_name=table.name,
        table_shape=table.tensor.shape,
        output_shape=output.shape,
        output_values=output_values,
        one_hot_equals_lookup=list(output_values) == product,
        upstream_shape=upstream.shape,
        upstream_values=tuple(upstream.flat_values()),
        gradient_shape=gradient.shape,
        gradient_values=tuple(gradient.flat_values()),
        lookups=_lookups(fixture, output.numpy().reshape(up_rows.shape), up_rows, indicators),
        rows=rows,
        unused_rows_zero=all(not any(row.accumulated) for row in rows if row.uses == 0),
        checks=None if fixture.checks is None else _chapter_checks(fixture.checks, embedding),
    )


def _chapter_checks(checks: ChapterChecks, embedding: Embedding) -> ChapterCheckResults:
    name, (vocabulary_size, width) = embedding.table.name, embedding.table.tensor.shape
    first, second = (
        Embedding.new(name, vocabulary_size, width, SplitMix64.from_seed(seed))
        for seed in (checks.init_seed, checks.init_seed)
    )
    empty = embedding.forward([], checks.empty_shape)
    table = embedding.table.tensor
    return ChapterCheckResults(
        init_seed=checks.init_seed,
        init_shape=first.table.tensor.shape,
        init_reproducible=first.table.tensor.value.equals(second.table.tensor.value),
        clone_same_node=copy.copy(embedding).table.tensor.is_same_node(table),
        empty_output_shape=empty.shape,
        empty_value_count=empty.value.element_count,
        bounds=_bounds_check(embedding, checks.out_of_vocabulary_id),
        embedding_width=embedding.embedding_width,
    )


def _floats(values: npt.NDArray[np.floating]) -> tuple[float, ...]:
    return tuple(float(value) for value in values)


def _lookups(
    fixture: Ch18Fixture,
    out_rows: npt.NDArray[np.floating],
    up_rows: npt.NDArray[np.floating],
    indicators: list[list[int]],
) -> tuple[Lookup, ...]:
    """One record per position, from the output's and the upstream's rows ``[N, d]``."""
    return tuple(
        Lookup(
            flat=flat,
            coordinate=tuple(int(i) for i in np.unravel_index(flat, fixture.token_shape)),
            token_id=token_id,
            one_hot=tuple(indicators[flat]),
            selected_row=indicators[flat].index(1),
            output=_floats(out_rows[flat]),
            upstream=_floats(up_rows[flat]),
        )
        for flat, token_id in enumerate(fixture.token_ids)
    )


def _table_rows(
    values: npt.NDArray[np.floating],
    gradient: npt.NDArray[np.floating],
    token_ids: tuple[int, ...],
    up_rows: npt.NDArray[np.floating],
) -> tuple[TableRow, ...]:
    """One record per table row: its values, its positions, their upstreams, its gradient."""
    rows = []
    for row in range(values.shape[0]):
        positions = tuple(p for p, token in enumerate(token_ids) if token == row)
        contributions = tuple(_floats(up_rows[p]) for p in positions)
        rows.append(
            TableRow(row, _floats(values[row]), positions, contributions, _floats(gradient[row]))
        )
    return tuple(rows)


def _bounds_check(embedding: Embedding, token_id: int) -> BoundsCheck:
    try:
        embedding.forward([token_id], (1,))
    except IdError as error:
        if error.rule != "ids.out-of-range":
            raise
        id_, rows = error.fields["id"], error.fields["vocabulary_size"]
        return BoundsCheck(cast(int, id_), cast(int, rows), rejected=True)
    return BoundsCheck(token_id, embedding.vocabulary_size, rejected=False)
