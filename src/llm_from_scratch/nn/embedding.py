"""The token embedding layer (course chapter 18): a named ``[V, d]`` table and PyTorch's options,
checked once when built; each call reads the IDs once and runs :func:`lookup`, as
``nn.functional.embedding`` does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.gather import (
    RowGatherPlan,
    gather_rows_forward,
    plan_from_validated_indices,
)
from llm_from_scratch.autograd.ids import plan_of_ids
from llm_from_scratch.autograd.value import constant_from_owned_array, node_of, value_of
from llm_from_scratch.nn.init import NamedParameter, Seed
from llm_from_scratch.nn.layer_state import TableLayer, drawn, hold_new, pretrained, wrapping
from llm_from_scratch.nn.options import LookupOptions
from llm_from_scratch.nn.renorm import renormalized_rows, renormalized_then
from llm_from_scratch.nn.tables import (
    TABLE_NAME,
    Table,
)
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import Shape

__all__ = ["Embedding"]


PYTORCH_KEYWORDS: Final = {  # PyTorch's keywords the constructors refuse, pointing to ours
    "num_embeddings": "vocabulary_size",
    "embedding_dim": "embedding_width",
    "sparse": "every table's gradient is row-sparse already (table.tensor.sparse_gradient)",
    "_weight": "Embedding.from_pretrained(table, freeze=False)",
}


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Embedding(TableLayer):
    """A ``[V, d]`` token table and its row lookup: ``X[..., :] = E[z[...], :]``; reverse mode
    adds the gradients of repeated IDs into one shared row.

    Built as ``nn.Embedding`` is, ``Embedding(V, d)``, or with :meth:`new` (the course's: a
    name, a generator, float64), :meth:`from_parameter` or :meth:`from_pretrained`.

    Attributes:
        table: the named table (PyTorch's ``weight``): a :class:`NamedParameter` (``table.tensor``
            is the trainable leaf) or a :class:`FrozenTable` (a constant).
        options: the checked :class:`LookupOptions`, whose fields are also the layer's.
        vocabulary_size, embedding_width: ``V`` and ``d`` (``num_embeddings``, ``embedding_dim``).

    Shape:
        table: ``[V, d]``; ``token_ids``: ``[*]``; output: ``[*, d]``.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = NamedParameter.from_tensor(
        ...     "token_embedding.weight", Tensor((4, 2), [10, 11, 20, 21, 30, 31, 40, 41]))
        >>> embedding = Embedding.from_parameter(table)
        >>> x = embedding([[2, 1, 2]])
        >>> x.shape, x.numpy().tolist()
        ((1, 3, 2), [[[30.0, 31.0], [20.0, 21.0], [30.0, 31.0]]])
        >>> seed = np.array([1, 0, 0, 2, 3, 4], dtype=float).reshape(1, 3, 2)
        >>> x.backward_with_seed(seed)
        >>> embedding.table.tensor.gradient.numpy().tolist()
        [[0.0, 0.0], [0.0, 2.0], [4.0, 4.0], [0.0, 0.0]]
        >>> try:
        ...     embedding([1, 4, 9])
        ... except IndexError as error:
        ...     print(error.id, error.position, error.vocabulary_size)
        ...     print(error)
        4 1 4
        token ID 4 at flat position 1 is out of bounds for vocabulary size 4
    """

    table: Table
    options: LookupOptions
    vocabulary_size: int = field(init=False)
    embedding_width: int = field(init=False)
    options_type: ClassVar[type[LookupOptions]] = LookupOptions

    @pytorch_keywords(**PYTORCH_KEYWORDS)
    def __init__(
        self,
        vocabulary_size: int,
        embedding_width: int,
        *,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        dtype: npt.DTypeLike = np.float32,
        rng: Seed = 0,
        name: str = TABLE_NAME,
    ) -> None:
        """A new layer, as ``nn.Embedding(V, d)``: :meth:`new` with float32 and the seed 0, so two
        layers built alike are equal (PyTorch draws from ``N(0, 1)``, the course Xavier-uniform).
        The class called with its two fields (``table``, ``options``) checks them likewise.

        Example:
            >>> layer = Embedding(1000, 64)
            >>> layer.table.tensor.shape, layer.table.tensor.dtype, layer.table.name
            ((1000, 64), dtype('float32'), 'token_embedding.weight')
            >>> layer.table.tensor.value.equals(Embedding(1000, 64).table.tensor.value)
            True
        """
        options = (padding_idx, max_norm, norm_type, scale_grad_by_freq)
        hold_new(self, (vocabulary_size, embedding_width), name, rng, dtype, options)

    @property
    def scale_grad_by_freq(self) -> bool:
        """Whether each row's gradient is divided by how often a call's IDs name it."""
        return self.options.scale_grad_by_freq

    @classmethod
    def from_parameter(
        cls,
        table: NamedParameter,
        *,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
    ) -> Embedding:
        """Wrap an existing named parameter (the same leaf): ``TypeError`` for anything else, then
        the table's shape and the options checked."""
        return wrapping(cls, table, (padding_idx, max_norm, norm_type, scale_grad_by_freq))

    @classmethod
    @pytorch_keywords(**PYTORCH_KEYWORDS)
    def new(
        cls,
        name: str,
        vocabulary_size: int,
        embedding_width: int,
        rng: Seed,
        dtype: npt.DTypeLike = np.float64,
        *,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
    ) -> Embedding:
        """A Xavier-uniform ``[vocabulary_size, embedding_width]`` table named ``name``, drawn
        from ``rng`` (a :class:`SplitMix64`, an int seed or a NumPy ``Generator``) as
        :func:`~llm_from_scratch.nn.init.xavier_uniform_array` draws, then the padding row
        zeroed. ``rng`` advances only on success.

        Raises:
            In this order: TableError ``table.initialization`` (a bad name or fan: ``cause``),
                ``table.empty-vocabulary``, ``table.zero-width``; OptionError: the options;
                TableError ``table.initialization`` (the generator, the dtype, no memory).

        Example:
            >>> from llm_from_scratch.nn import SplitMix64
            >>> a = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
            >>> b = Embedding.new("token_embedding.weight", 4, 2, 18)
            >>> a.table.tensor.value.equals(b.table.tensor.value)
            True
            >>> a.table.tensor.is_same_node(b.table.tensor)
            False
            >>> padded = Embedding.new("token_embedding.weight", 4, 2, 18, padding_idx=-1)
            >>> padded.padding_idx, padded.table.tensor.numpy()[3].tolist()
            (3, [0.0, 0.0])
            >>> Embedding.new("w", 4, 2, np.random.default_rng(0), np.float32).table.tensor.dtype
            dtype('float32')
        """
        options = (padding_idx, max_norm, norm_type, scale_grad_by_freq)
        return drawn(cls, name, (vocabulary_size, embedding_width), rng, dtype, options)

    @classmethod
    @pytorch_keywords(embeddings="table", sparse=PYTORCH_KEYWORDS["sparse"])
    def from_pretrained(
        cls,
        table: object,
        *,
        name: str = TABLE_NAME,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
    ) -> Embedding:
        """A layer over a table you already have, as PyTorch's ``Embedding.from_pretrained``.

        Args:
            table: a 2-D NumPy array (float32 and float64 keep their dtype, integers become
                float64; read through its plain data), a ``Tensor`` or a :class:`NamedParameter`.
            name: the name of the layer's table.
            freeze: True (PyTorch's default): a constant copy, a :class:`FrozenTable`, whose
                lookups carry no gradient (with ``max_norm`` they return the renormalized rows
                and the table stays as it is). False: a new trainable leaf (a copy), or the
                NamedParameter's own.

        Raises:
            In this order: TableError ``table.pretrained-type``, the shape, a bad name
                (``table.initialization``); OptionError: the options, then ``freeze``;
                AllocationError: ``output.allocation``; NonFiniteError: a NaN or infinity.

        Example:
            >>> table = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
            >>> x = Embedding.from_pretrained(table, padding_idx=0)([2, 1])
            >>> x.kind, x.dtype, x.numpy().tolist()
            ('constant', dtype('float32'), [[3.0, 4.0], [1.0, 2.0]])
            >>> Embedding.from_pretrained(table, freeze=False)([2]).kind
            'operation'
        """
        options = (padding_idx, max_norm, norm_type, scale_grad_by_freq)
        return pretrained(cls, table, name, freeze, options)

    def forward(
        self, token_ids: Sequence[object] | npt.NDArray[Any], token_shape: Shape
    ) -> TensorValue:
        """Look up one table row per ID.

        Args:
            token_ids: flat IDs in row-major order: a sequence of ints, or a 1-D NumPy array
                of any integer dtype (read through its plain data; not a masked array). Each ID
                is read once, into the lookup's own index buffer, and checked there.
            token_shape: the shape the IDs form; ``()`` takes one ID. At most ``MAX_AXES``
                extents are read from it.

        Shape:
            ``token_ids``: ``[prod(token_shape)]``; output: ``token_shape + (d,)``.

        Raises:
            IdError, AllocationError: in the contract's order, as
                :func:`~llm_from_scratch.autograd.ids.plan_of_ids` says.
            TapeError, AllocationError: from the tape, as their own rules.
        """
        table = self.table.tensor
        table_shape = (self.vocabulary_size, self.embedding_width)
        rule = self.options.gradient_rule
        plan = plan_of_ids(token_ids, table_shape, table.dtype.itemsize, rule, shape=token_shape)
        return lookup(table, plan, self.options)

    def __call__(self, ids: object) -> TensorValue:
        """Look up rows for ``ids``, an integer array or nested lists whose shape is the token
        shape (a list or tuple subclass is read as the items it holds).

        Shape:
            ``ids``: ``[*]``; output: ``[*, d]``.

        Raises:
            IdError, AllocationError: as :meth:`forward`; ``ids.container`` for a masked array or
                ragged lists, ``ids.nesting`` deeper than ``MAX_AXES``.
        """
        table = self.table.tensor
        table_shape = (self.vocabulary_size, self.embedding_width)
        plan = plan_of_ids(ids, table_shape, table.dtype.itemsize, self.options.gradient_rule)
        return lookup(table, plan, self.options)


def lookup(table: TensorValue, plan: RowGatherPlan, options: LookupOptions) -> TensorValue:
    """The lookup of a checked plan with checked options: with ``max_norm`` a parameter's rows
    are renormalized in place, a constant's looked up renormalized, unwritten."""
    if options.max_norm is None:
        return value_of(gather_rows_forward(node_of(table), plan))
    if table.kind == "constant":
        rows, renormalized, positions = renormalized_rows(
            table.numpy(), plan.indices, options.max_norm, options.norm_type
        )
        shape = (int(rows.size), plan.table_shape[1])
        renormalized_plan = plan_from_validated_indices(positions, plan.index_shape, shape)
        constant = node_of(constant_from_owned_array(renormalized))
        return value_of(gather_rows_forward(constant, renormalized_plan))
    return renormalized_then(
        table,
        plan.indices,
        options.max_norm,
        options.norm_type,
        lambda: value_of(gather_rows_forward(node_of(table), plan)),
    )
