"""The chapter's inputs: a 4x2 table, token IDs with their shape, and an upstream seed.

These are inputs only. Every output of the demo and the trace is computed from them by
:func:`~llm_from_scratch.demos.ch18_token_embeddings.report.build_report`.
:data:`KNOWN_FIXTURE` is the chapter's own; :meth:`Ch18Fixture.with_ids` puts a learner's IDs
(and, optionally, upstream gradient) on the same table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Shape, Tensor

__all__ = [
    "EMPTY_SHAPE",
    "FIXTURE_NAME",
    "INIT_SEED",
    "KNOWN_FIXTURE",
    "LEARNER_FIXTURE_NAME",
    "OUT_OF_VOCABULARY_ID",
    "TABLE_NAME",
    "TABLE_SHAPE",
    "TABLE_VALUES",
    "TOKEN_IDS",
    "TOKEN_SHAPE",
    "UPSTREAM_SHAPE",
    "UPSTREAM_VALUES",
    "Ch18Fixture",
]

FIXTURE_NAME: Final = "known-table-repeated-id"
LEARNER_FIXTURE_NAME: Final = "known-table-learner-input"
TABLE_NAME: Final = "token_embedding.weight"
TABLE_SHAPE: Final = (4, 2)
TABLE_VALUES: Final = (10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 40.0, 41.0)
TOKEN_IDS: Final = (2, 1, 2)
TOKEN_SHAPE: Final = (1, 3)
UPSTREAM_SHAPE: Final = (1, 3, 2)
UPSTREAM_VALUES: Final = (1.0, 0.0, 0.0, 2.0, 3.0, 4.0)
INIT_SEED: Final = 18
OUT_OF_VOCABULARY_ID: Final = 4
EMPTY_SHAPE: Final = (0,)


@dataclass(frozen=True)
class Ch18Fixture:
    """The inputs of one run of the chapter: a named table, flat token IDs in row-major order
    with their shape, the upstream gradient of the output, and the extra checks' inputs.

    The layer and the tape check these when the report is built; :meth:`with_ids` checks a
    learner's input the same way before it makes a fixture.
    """

    # The named table.
    name: str
    table_name: str
    table_shape: Shape
    table_values: tuple[float, ...]
    # The lookup and its backward.
    token_ids: tuple[int, ...]
    token_shape: Shape
    upstream_shape: Shape
    upstream_values: tuple[float, ...]
    # The other checks: initialization from a seed, an out-of-vocabulary ID, empty IDs.
    init_seed: int
    out_of_vocabulary_id: int
    empty_shape: Shape

    def layer(self) -> Embedding:
        """A fresh layer over this fixture's table (a new parameter leaf each call)."""
        table = Tensor(self.table_shape, self.table_values)
        return Embedding.from_parameter(NamedParameter.from_tensor(self.table_name, table))

    def with_ids(self, ids: object, upstream: object = None) -> Ch18Fixture:
        """This table with a learner's token IDs and upstream gradient.

        Args:
            ids: nested lists of integers, or one integer; the nesting is the token shape.
            upstream: the upstream gradient ``dL/dX``: nested lists with the output's shape
                ``[*token_shape, d]``, or a flat list of its values in row-major order. ``None``
                means ``1, 2, 3, ...`` in row-major order over the output shape, so that the
                sums of repeated rows stay visible.

        Raises:
            TokenIdContainerError, TokenIdTypeError, TokenIdOutOfBoundsError: from the layer,
                exactly as ``layer()(ids)`` raises them.
            TensorValueTypeError, DataLengthMismatchError: an upstream value that is not a
                number, or a flat upstream of the wrong length.
            SeedShapeMismatchError, NonFiniteSeedError: from the tape, for an upstream of
                another shape or with a NaN or an infinity.

        Example:
            >>> fixture = KNOWN_FIXTURE.with_ids([[3, 2], [1, 0]])
            >>> fixture.token_ids, fixture.token_shape, fixture.upstream_values[:3]
            ((3, 2, 1, 0), (2, 2), (1.0, 2.0, 3.0))
        """
        # One rehearsal run on a scratch layer: the layer and the tape check the input themselves.
        output = self.layer()(ids)
        seed = _seed(upstream, output.shape)
        output.backward_with_seed(seed)
        flat_ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        return dataclasses.replace(
            self,
            name=LEARNER_FIXTURE_NAME,
            token_ids=tuple(int(token_id) for token_id in flat_ids),
            token_shape=output.shape[:-1],
            upstream_shape=seed.shape,
            upstream_values=tuple(seed.flat_values()),
        )

    def with_upstream(self, upstream: object) -> Ch18Fixture:
        """This fixture's IDs with a learner's upstream gradient (see :meth:`with_ids`)."""
        ids = np.reshape(np.asarray(self.token_ids, dtype=np.int64), self.token_shape)
        return self.with_ids(ids.tolist(), upstream)


KNOWN_FIXTURE: Final = Ch18Fixture(
    name=FIXTURE_NAME,
    table_name=TABLE_NAME,
    table_shape=TABLE_SHAPE,
    table_values=TABLE_VALUES,
    token_ids=TOKEN_IDS,
    token_shape=TOKEN_SHAPE,
    upstream_shape=UPSTREAM_SHAPE,
    upstream_values=UPSTREAM_VALUES,
    init_seed=INIT_SEED,
    out_of_vocabulary_id=OUT_OF_VOCABULARY_ID,
    empty_shape=EMPTY_SHAPE,
)


def _seed(upstream: object, output_shape: Shape) -> Tensor:
    """The upstream as a tensor: ``1, 2, 3, ...`` when absent, a flat list in the output's
    shape, nested lists in their own shape (which the tape then compares with the output's)."""
    if upstream is None:
        count = int(np.prod(output_shape))
        return Tensor(output_shape, range(1, count + 1))
    shape, leaves = _nesting(upstream)
    is_flat = len(shape) == 1 and not any(isinstance(leaf, list | tuple) for leaf in leaves)
    return Tensor(output_shape if is_flat else shape, leaves)


def _nesting(value: object) -> tuple[Shape, list[Any]]:
    """The regular shape of nested lists and their items in row-major order (unchecked: the
    tensor checks that they are numbers).

    The shape stops at the first depth whose lists differ in length or mix with non-lists, so
    the items of a ragged nest are lists, which the tensor then rejects as values.
    """
    shape: list[int] = []
    level: list[Any] = [value]
    while level:
        lists = [item for item in level if isinstance(item, list | tuple)]
        if len(lists) != len(level) or len({len(item) for item in lists}) != 1:
            break
        shape.append(len(lists[0]))
        level = [leaf for item in lists for leaf in item]
    return tuple(shape), level
