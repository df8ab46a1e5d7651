"""The embedding-bag layer: one row per bag of token IDs, their sum, mean or max.

``EmbeddingBag`` owns a named ``[V, d]`` table like ``Embedding`` and PyTorch's
``nn.EmbeddingBag`` options (``mode``, ``padding_idx``, ``max_norm``, ``norm_type``). It is a thin
wrapper over :func:`llm_from_scratch.nn.functional.embedding_bag`: the options are checked once,
when it is built; each call checks the IDs, the bags and the per-sample weights and runs the one
bag operation of :mod:`llm_from_scratch.autograd.bag`.
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
from llm_from_scratch.autograd.gather import plan_of_ids
from llm_from_scratch.nn.bag_offsets import bag_starts
from llm_from_scratch.nn.embedding import PYTORCH_KEYWORDS
from llm_from_scratch.nn.embedding_errors import PerSampleWeightsError
from llm_from_scratch.nn.functional import bag, checked_weights
from llm_from_scratch.nn.init import NamedParameter, Seed
from llm_from_scratch.nn.layer_state import TableLayer, hold_fields, is_table, layer_of
from llm_from_scratch.nn.options import BagOptions, checked_flag
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

    Build one as an :class:`~llm_from_scratch.nn.Embedding` is built
    (``EmbeddingBag(vocabulary_size, embedding_width, mode="mean")``, :meth:`new`,
    :meth:`from_parameter`, :meth:`from_pretrained`); call it with 2-D IDs ``[B, L]`` (each row
    a bag) or 1-D IDs and ``offsets``. See
    :func:`~llm_from_scratch.nn.functional.embedding_bag` for the reductions.

    ``EmbeddingBag(table, options)``, the class called with its two fields, checks them as the
    constructors do (it is how pickles of earlier versions rebuild a layer).

    Attributes:
        table: a :class:`NamedParameter` or a :class:`FrozenTable`.
        options: the checked :class:`BagOptions`; ``mode`` (``"sum"``, ``"mean"`` or
            ``"max"``), ``padding_idx`` (the row whose entries are skipped, in ``[0, V)``, or
            None), ``max_norm`` and ``norm_type`` (as in ``Embedding``) are also attributes of
            the layer.
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
        """A new ``[vocabulary_size, embedding_width]`` bag layer, as ``nn.EmbeddingBag(V, d)``:
        ``EmbeddingBag.new(name, V, d, rng, dtype, ...)`` with float32 and the seed 0, as
        ``Embedding(V, d)`` (see there).

        Raises:
            The errors of :meth:`new`; PyTorchNameError: ``num_embeddings``,
            ``embedding_dim``, ``sparse``, ``_weight`` or ``include_last_offset`` (an argument
            of each call here), each with a pointer to ours.

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

    @property
    def padding_idx(self) -> int | None:
        """The row whose entries are skipped (in ``[0, V)``), or None."""
        return self.options.padding_idx

    @property
    def max_norm(self) -> float | None:
        """The norm above which a looked-up row is scaled down in place, or None."""
        return self.options.max_norm

    @property
    def norm_type(self) -> float:
        """The ``p`` of that norm."""
        return self.options.norm_type

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
        """Wrap an existing named parameter (the same leaf).

        Raises:
            TypeError: ``table`` is not a NamedParameter.
            TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: its shape.
            OptionValueError: the options (``mode`` first).
        """
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
        """A Xavier-uniform table, drawn and checked as ``Embedding.new`` draws it (the
        padding row, if any, zeroed after the whole table is drawn).

        Raises:
            The errors of ``Embedding.new``, with ``mode`` first among the options.
        """
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
        """A bag layer over a table you already have (see ``Embedding.from_pretrained``).

        Raises:
            The errors of ``Embedding.from_pretrained``, with ``mode`` first among the
            options.
        """
        options_for = _options(mode, padding_idx, max_norm, norm_type)
        layer_table, options = pretrained_table(table, name, freeze, options_for)
        return layer_of(cls, layer_table, options)

    def __repr__(self) -> str:
        return (
            f"EmbeddingBag(name={self.table.name!r}, vocabulary_size={self.vocabulary_size}, "
            f"embedding_width={self.embedding_width}, dtype={self.table.tensor.dtype}, "
            f"mode={self.mode!r}, padding_idx={self.padding_idx}, max_norm={self.max_norm}, "
            f"norm_type={self.norm_type}, frozen={self.frozen})"
        )

    def __call__(
        self,
        token_ids: object,
        offsets: object = None,
        per_sample_weights: TensorValue | Tensor | np.ndarray[Any, Any] | None = None,
        include_last_offset: bool = False,
    ) -> TensorValue:
        """Reduce each bag of ``token_ids`` to one row.

        Raises:
            OptionTypeError: ``include_last_offset`` is not a bool.
            PerSampleWeightsError: weights with a mode other than ``"sum"``.
            Then the errors of ``functional.embedding_bag`` for the IDs, the bags, the offsets
            and the weights, in its order.
        """
        last_offset = checked_flag("include_last_offset", include_last_offset)
        options = self.options
        if per_sample_weights is not None and options.mode != "sum":
            raise PerSampleWeightsError("mode", options.mode)
        table_shape = (self.vocabulary_size, self.embedding_width)
        tensor = self.table.tensor
        ids = plan_of_ids(token_ids, table_shape, int(tensor.dtype.itemsize))
        starts = bag_starts(ids.index_shape, offsets, last_offset)
        weights = checked_weights(per_sample_weights, ids.index_shape, tensor.dtype)
        return bag(tensor, ids.indices, starts, weights, options)


def _options(
    mode: str, padding_idx: int | None, max_norm: float | None, norm_type: float
) -> Callable[[int], BagOptions]:
    """The checked options of a bag table of ``V`` rows, once ``V`` is known."""
    return lambda rows: BagOptions(rows, mode, padding_idx, max_norm, norm_type)  # type: ignore[arg-type]
