"""Run a fixture through the library and collect every fact the demo shows.

The demo text, the trace and the figure all format this one report; nothing here prints.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass

import numpy as np

from llm_from_scratch.autograd import TensorValue, TokenIdOutOfBoundsError
from llm_from_scratch.demos.ch18_token_embeddings.fixture import KNOWN_FIXTURE, Ch18Fixture
from llm_from_scratch.demos.ch18_token_embeddings.one_hot import explicit_one_hot_product
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.tensor import Shape, Tensor


@dataclass(frozen=True)
class Lookup:
    """One output position: its ID, one-hot indicator, selected row, output and upstream."""

    flat: int
    coordinate: tuple[int, ...]
    token_id: int
    repeated: bool
    one_hot: tuple[int, ...]
    selected_row: int
    output: tuple[float, ...]
    upstream: tuple[float, ...]


@dataclass(frozen=True)
class TableRow:
    """One table row: its values, the positions that selected it, their upstream vectors, and
    the gradient read from the table after backward."""

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
    """What the layer said about an out-of-vocabulary ID."""

    token_id: int
    vocabulary_size: int
    position: int
    rejected: bool


@dataclass(frozen=True)
class Ch18Report:
    """The fixture the chapter demo ran, and every fact it computed from it."""

    fixture: Ch18Fixture
    # The table as the layer holds it.
    table_name: str
    table_shape: Shape
    # The forward, and whether the one-hot product gives the same output.
    output_shape: Shape
    output_values: tuple[float, ...]
    one_hot_equals_lookup: bool
    # The backward: the upstream seed and the table's stored gradient.
    upstream_shape: Shape
    upstream_values: tuple[float, ...]
    gradient_shape: Shape
    gradient_values: tuple[float, ...]
    # The same run per output position and per table row.
    lookups: tuple[Lookup, ...]
    rows: tuple[TableRow, ...]
    unused_rows_zero: bool
    # Initialization from the fixture's seed, and a clone's identity.
    init_shape: Shape
    init_reproducible: bool
    clone_same_node: bool
    # Empty IDs, an out-of-vocabulary ID, and the width chapter 19 projects.
    empty_output_shape: Shape
    empty_value_count: int
    bounds: BoundsCheck
    embedding_width: int

    @property
    def fixture_name(self) -> str:
        """The fixture's name."""
        return self.fixture.name

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The fixture's token IDs, flat in row-major order."""
        return self.fixture.token_ids

    @property
    def token_shape(self) -> Shape:
        """The fixture's token shape."""
        return self.fixture.token_shape

    @property
    def init_seed(self) -> int:
        """The fixture's initialization seed."""
        return self.fixture.init_seed

    @property
    def repeated_rows(self) -> tuple[TableRow, ...]:
        """Rows selected by more than one position."""
        return tuple(row for row in self.rows if row.uses > 1)


def build_report(fixture: Ch18Fixture = KNOWN_FIXTURE) -> Ch18Report:
    """Run a fixture: forward, one-hot baseline, backward, init, clone, empty and bounds.

    Args:
        fixture: the inputs; the chapter's known fixture by default.

    Raises:
        EmbeddingError, TensorError, TensorAutodiffError: when the layer or the tape rejects
            the fixture's IDs or upstream gradient.
    """
    embedding = fixture.layer()
    table = embedding.table
    output = embedding.forward(list(fixture.token_ids), fixture.token_shape)
    output_values = tuple(output.value_snapshot().flat_values())
    indicators, one_hot_values = explicit_one_hot_product(
        table.tensor.value_snapshot().numpy(), fixture.token_ids
    )
    upstream = Tensor(fixture.upstream_shape, fixture.upstream_values)
    output.backward_with_seed(upstream)
    gradient = table.tensor.gradient_snapshot()
    if gradient is None:
        raise RuntimeError("a parameter leaf has no gradient")
    rows = _table_rows(embedding, fixture.token_ids, upstream, gradient)
    vocabulary_size, embedding_width = fixture.table_shape
    first, second = (
        Embedding.new(
            fixture.table_name, vocabulary_size, embedding_width, SplitMix64.from_seed(seed)
        )
        for seed in (fixture.init_seed, fixture.init_seed)
    )
    empty = embedding.forward([], fixture.empty_shape)
    return Ch18Report(
        fixture=fixture,
        table_name=table.name,
        table_shape=table.tensor.shape,
        output_shape=output.shape,
        output_values=output_values,
        one_hot_equals_lookup=list(output_values) == one_hot_values,
        upstream_shape=upstream.shape,
        upstream_values=tuple(upstream.flat_values()),
        gradient_shape=gradient.shape,
        gradient_values=tuple(gradient.flat_values()),
        lookups=_lookups(output, fixture, upstream, indicators),
        rows=rows,
        unused_rows_zero=all(not any(row.accumulated) for row in rows if row.uses == 0),
        init_shape=first.table.tensor.shape,
        init_reproducible=first.table.tensor.value.equals(second.table.tensor.value),
        clone_same_node=copy.copy(embedding).table.tensor.is_same_node(table.tensor),
        empty_output_shape=empty.shape,
        empty_value_count=empty.value.element_count,
        bounds=_bounds_check(embedding, fixture.out_of_vocabulary_id),
        embedding_width=embedding.embedding_width,
    )


def _lookups(
    output: TensorValue, fixture: Ch18Fixture, upstream: Tensor, indicators: list[list[int]]
) -> tuple[Lookup, ...]:
    width = output.shape[-1]
    out_rows = output.numpy().reshape(-1, width)
    up_rows = upstream.numpy().reshape(-1, width)
    counts = Counter(fixture.token_ids)
    lookups = []
    for flat, token_id in enumerate(fixture.token_ids):
        coordinate = tuple(int(i) for i in np.unravel_index(flat, fixture.token_shape))
        lookups.append(
            Lookup(
                flat=flat,
                coordinate=coordinate,
                token_id=token_id,
                repeated=counts[token_id] > 1,
                one_hot=tuple(indicators[flat]),
                selected_row=indicators[flat].index(1),
                output=tuple(float(v) for v in out_rows[flat]),
                upstream=tuple(float(v) for v in up_rows[flat]),
            )
        )
    return tuple(lookups)


def _table_rows(
    embedding: Embedding, token_ids: tuple[int, ...], upstream: Tensor, gradient: Tensor
) -> tuple[TableRow, ...]:
    width = embedding.embedding_width
    values = embedding.table.tensor.numpy()
    up_rows = upstream.numpy().reshape(-1, width)
    grad = gradient.numpy()
    rows = []
    for row in range(embedding.vocabulary_size):
        positions = tuple(p for p, token in enumerate(token_ids) if token == row)
        rows.append(
            TableRow(
                row=row,
                values=tuple(float(v) for v in values[row]),
                flat_positions=positions,
                contributions=tuple(tuple(float(v) for v in up_rows[p]) for p in positions),
                accumulated=tuple(float(v) for v in grad[row]),
            )
        )
    return tuple(rows)


def _bounds_check(embedding: Embedding, token_id: int) -> BoundsCheck:
    try:
        embedding.forward([token_id], (1,))
    except TokenIdOutOfBoundsError as error:
        return BoundsCheck(error.id, error.vocabulary_size, error.position, rejected=True)
    return BoundsCheck(token_id, embedding.vocabulary_size, -1, False)
