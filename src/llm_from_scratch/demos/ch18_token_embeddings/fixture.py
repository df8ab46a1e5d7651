"""The chapter's inputs, and only inputs: :data:`KNOWN_FIXTURE`, or a learner's IDs on its table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Shape, Tensor


@dataclass(frozen=True)
class ChapterChecks:
    """The inputs of the chapter's own checks, beside its lookup: the seed of two initialized
    tables, an ID outside the table and an ID shape without IDs."""

    init_seed: int
    out_of_vocabulary_id: int
    empty_shape: Shape


@dataclass(frozen=True)
class Ch18Fixture:
    """The inputs of one run: a named table, flat token IDs with their shape, the upstream
    gradient, and the chapter's own checks (``None`` on a learner's input, whose run is only
    about the IDs typed)."""

    name: str
    table_name: str
    table_shape: Shape
    table_values: tuple[float, ...]
    token_ids: tuple[int, ...]
    token_shape: Shape
    upstream_shape: Shape
    upstream_values: tuple[float, ...]
    checks: ChapterChecks | None

    def layer(self) -> Embedding:
        """A fresh layer over this fixture's table (a new parameter leaf each call)."""
        table = Tensor(self.table_shape, self.table_values)
        return Embedding.from_parameter(NamedParameter.from_tensor(self.table_name, table))

    def with_ids(self, ids: object, upstream: object = None) -> Ch18Fixture:
        """This table with a learner's token IDs and upstream gradient.

        Args:
            ids: nested lists of integers, or one integer; the nesting is the token shape.
            upstream: ``dL/dX``: nested lists of the output's shape ``[*token_shape, d]``, or
                its values flat in row-major order; ``None``: ``1, 2, 3, ...`` in row-major
                order, so that the sums of repeated rows stay visible.

        Raises:
            The layer's and the tape's errors, from one rehearsal run.

        Example:
            >>> fixture = KNOWN_FIXTURE.with_ids([[3, 2], [1, 0]])
            >>> fixture.token_ids, fixture.token_shape, fixture.upstream_values[:3]
            ((3, 2, 1, 0), (2, 2), (1.0, 2.0, 3.0))
        """
        output = self.layer()(ids)
        seed = _seed(upstream, output.shape)
        output.backward_with_seed(seed)
        flat_ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        return dataclasses.replace(
            self,
            name="known-table-learner-input",
            token_ids=tuple(int(token_id) for token_id in flat_ids),
            token_shape=output.shape[:-1],
            upstream_shape=seed.shape,
            upstream_values=tuple(seed.flat_values()),
            checks=None,
        )

    def with_upstream(self, upstream: object) -> Ch18Fixture:
        """This fixture's IDs with a learner's upstream gradient (see :meth:`with_ids`)."""
        ids = np.reshape(np.asarray(self.token_ids, dtype=np.int64), self.token_shape)
        return self.with_ids(ids.tolist(), upstream)


KNOWN_FIXTURE: Final = Ch18Fixture(
    name="known-table-repeated-id",
    table_name="token_embedding.weight",
    table_shape=(4, 2),
    table_values=(10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 40.0, 41.0),
    token_ids=(2, 1, 2),
    token_shape=(1, 3),
    upstream_shape=(1, 3, 2),
    upstream_values=(1.0, 0.0, 0.0, 2.0, 3.0, 4.0),
    checks=ChapterChecks(init_seed=18, out_of_vocabulary_id=4, empty_shape=(0,)),
)


def _seed(upstream: object, output_shape: Shape) -> Tensor:
    """The upstream as a tensor: ``1, 2, 3, ...`` when absent, else flat or nested values."""
    if upstream is None:
        count = int(np.prod(output_shape))
        return Tensor(output_shape, range(1, count + 1))
    shape, leaves = _nesting(upstream)
    is_flat = len(shape) == 1 and not any(isinstance(leaf, list | tuple) for leaf in leaves)
    return Tensor(output_shape if is_flat else shape, leaves)


def _nesting(value: object) -> tuple[Shape, list[Any]]:
    """The regular shape of nested lists and their row-major items, unchecked (the tensor is)."""
    shape: list[int] = []
    level: list[Any] = [value]
    while level:
        lists = [item for item in level if isinstance(item, list | tuple)]
        if len(lists) != len(level) or len({len(item) for item in lists}) != 1:
            break
        shape.append(len(lists[0]))
        level = [leaf for item in lists for leaf in item]
    return tuple(shape), level
