"""The embedding-bag layer: one row per bag of token IDs, their sum, mean or max.

``EmbeddingBag`` owns a named ``[V, d]`` table like ``Embedding`` and PyTorch's
``nn.EmbeddingBag`` options (``mode``, ``padding_idx``, ``max_norm``, ``norm_type``), checked once
when it is built; each call checks the IDs, the bags and the per-sample weights as
:func:`llm_from_scratch.nn.functional.embedding_bag` does and runs the one bag operation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.bag import BagMode
from llm_from_scratch.nn.embedding import PYTORCH_KEYWORDS
from llm_from_scratch.nn.functional import bag_of_ids
from llm_from_scratch.nn.init import NamedParameter, Seed
from llm_from_scratch.nn.layer_state import TableLayer, hold_fields, is_table, layer_of
from llm_from_scratch.nn.options import BagOptions
from llm_from_scratch.nn.tables import (
    TABLE_NAME,
    Table,
    checked_parameter_size,
    new_table,
    pretrained_table,
)
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import Tensor

BAG_PYTORCH_KEYWORDS: Final = {
    **PYTORCH_KEYWORDS,
    "_weight": "EmbeddingBag.from_pretrained(table, freeze=False)",
    "include_last_offset": "an argument of each call: bags(ids, offsets, include_last_offset=True)",
}
"""PyTorch's keywords of ``nn.EmbeddingBag``, refused by the constructors with a pointer to ours."""


@dataclass(frozen=True, eq=False, repr=False, init=False)
class EmbeddingBag(TableLayer):
    """A ``[V, d]`` token table that reduces each bag of IDs to one row.

    Built as an :class:`~llm_from_scratch.nn.Embedding` is (``EmbeddingBag(V, d, mode="sum")``,
    :meth:`new`, :meth:`from_parameter`, :meth:`from_pretrained`, or the class called with its
    two fields); called with 2-D IDs ``[B, L]`` (each row a bag) or 1-D IDs and ``offsets``.
    See :func:`~llm_from_scratch.nn.functional.embedding_bag` for the reductions.

    Attributes:
        table: a :class:`NamedParameter` or a :class:`FrozenTable`.
        options: the checked :class:`BagOptions`, whose fields are also the layer's.
        vocabulary_size, embedding_width: ``V`` and ``d``.

    Shape:
        ``token_ids``: ``[B, L]``, or ``[N]`` with ``offsets`` ``[B]`` (``[B + 1]`` with
        ``include_last_offset``); output: ``[B, d]``.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = NamedParameter.from_tensor(
        ...     "token_embedding.weight", Tensor((4, 2), [10, 11, 20, 21, 30, 31, 40, 41]))
        >>> bag_layer = EmbeddingBag.from_parameter(table, mode="max")
        >>> out = bag_layer([[2, 1], [0, 3]])
        >>> out.numpy().tolist()
        [[30.0, 31.0], [40.0, 41.0]]
        >>> out.sum().backward()
        >>> table.tensor.sparse_gradient.rows.tolist()
        [2, 3]
    """

    table: Table
    options: BagOptions
    vocabulary_size: int = field(init=False)
    embedding_width: int = field(init=False)
    options_type: ClassVar[type[BagOptions]] = BagOptions

    @pytorch_keywords(**BAG_PYTORCH_KEYWORDS)
    def __init__(
        self,
        vocabulary_size: int,
        embedding_width: int,
        *,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        dtype: npt.DTypeLike = np.float32,
        rng: Seed = 0,
        name: str = TABLE_NAME,
    ) -> None:
        """A new bag layer, as ``nn.EmbeddingBag(V, d)``: ``EmbeddingBag.new(name, V, d, rng,
        dtype, ...)`` with float32 and the seed 0, as ``Embedding(V, d)``.

        Raises:
            The errors of :meth:`new`; PyTorchNameError: ``num_embeddings``,
            ``embedding_dim``, ``sparse``, ``_weight`` or ``include_last_offset`` (an argument
            of each call here).

        Example:
            >>> bags = EmbeddingBag(100, 8, mode="sum")
            >>> bags([[1, 2], [3, 3]]).shape, bags.table.tensor.dtype
            ((2, 8), dtype('float32'))
        """
        if is_table(vocabulary_size):  # the two fields, as earlier versions' pickles give them
            table, options = vocabulary_size, embedding_width
        else:
            options_for = _options(mode, padding_idx, max_norm, norm_type)
            table, options = new_table(  # type: ignore[assignment]
                name, vocabulary_size, embedding_width, rng, dtype, options_for
            )
        hold_fields(self, table, options)

    @property
    def mode(self) -> BagMode:
        """``"sum"``, ``"mean"`` or ``"max"``."""
        return self.options.mode

    @classmethod
    def from_parameter(
        cls,
        table: NamedParameter,
        *,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
    ) -> EmbeddingBag:
        """Wrap an existing named parameter (the same leaf), as ``Embedding.from_parameter``."""
        rows, _ = checked_parameter_size(table)
        return layer_of(cls, table, _options(mode, padding_idx, max_norm, norm_type)(rows))

    @classmethod
    @pytorch_keywords(**BAG_PYTORCH_KEYWORDS)
    def new(
        cls,
        name: str,
        vocabulary_size: int,
        embedding_width: int,
        rng: Seed,
        dtype: npt.DTypeLike = np.float64,
        *,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
    ) -> EmbeddingBag:
        """A Xavier-uniform table, drawn and checked as ``Embedding.new`` draws it (``mode``
        first among the options)."""
        options_for = _options(mode, padding_idx, max_norm, norm_type)
        table, options = new_table(name, vocabulary_size, embedding_width, rng, dtype, options_for)
        return layer_of(cls, table, options)

    @classmethod
    @pytorch_keywords(embeddings="table", sparse=PYTORCH_KEYWORDS["sparse"])
    def from_pretrained(
        cls,
        table: object,
        *,
        name: str = TABLE_NAME,
        freeze: bool = True,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
    ) -> EmbeddingBag:
        """A bag layer over a table you already have, as ``Embedding.from_pretrained`` (``mode``
        first among the options)."""
        options_for = _options(mode, padding_idx, max_norm, norm_type)
        layer_table, options = pretrained_table(table, name, freeze, options_for)
        return layer_of(cls, layer_table, options)

    def __call__(
        self,
        token_ids: object,
        offsets: object = None,
        per_sample_weights: TensorValue | Tensor | np.ndarray[Any, Any] | None = None,
        include_last_offset: bool = False,
    ) -> TensorValue:
        """Reduce each bag of ``token_ids`` to one row.

        Raises:
            OptionError: ``include_last_offset`` is not a bool. IdError: ``weights.mode``
                (weights with a mode other than ``"sum"``). Then the errors of
                ``functional.embedding_bag`` for the IDs, bags, offsets and weights, in its order.
        """
        return bag_of_ids(
            self.table.tensor,
            self.options,
            token_ids,
            offsets,
            per_sample_weights,
            include_last_offset,
        )


def _options(
    mode: str, padding_idx: int | None, max_norm: float | None, norm_type: float
) -> Callable[[int], BagOptions]:
    """The checked options of a bag table of ``V`` rows, once ``V`` is known."""
    return lambda rows: BagOptions(rows, mode, padding_idx, max_norm, norm_type)  # type: ignore[arg-type]
