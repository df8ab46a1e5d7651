"""The token embedding layer (course chapter 18).

``Embedding`` owns one named ``[V, d]`` table and the options PyTorch's ``nn.Embedding`` has
(``padding_idx``, ``max_norm``, ``norm_type``, ``scale_grad_by_freq``). It is a thin wrapper over
:func:`llm_from_scratch.nn.functional.lookup`, which ``nn.functional.embedding`` uses too: its
options are checked once, into one frozen record, when it is built; every call reads the IDs once
(:func:`~llm_from_scratch.autograd.gather.plan_of_ids`) and runs the one row gather that
:meth:`TensorValue.gather_rows` uses.

The error classes are re-exported here and by :mod:`llm_from_scratch.nn`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    plan_of_ids,
)
from llm_from_scratch.autograd.value import constant_from_owned_array, node_of, value_of
from llm_from_scratch.nn.embedding_errors import (
    EmbeddingError,
    EmbeddingInitializationError,
    EmbeddingStateError,
    EmptyVocabularyError,
    ZeroEmbeddingWidthError,
)
from llm_from_scratch.nn.init import NamedParameter, Seed
from llm_from_scratch.nn.layer_state import TableLayer, hold_fields, is_table, layer_of
from llm_from_scratch.nn.options import LookupOptions
from llm_from_scratch.nn.renorm import renormalized_rows, renormalized_then
from llm_from_scratch.nn.tables import (
    TABLE_NAME,
    Table,
    checked_parameter_size,
    new_table,
    pretrained_table,
)
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import Shape

__all__ = [
    "Embedding",
    "EmbeddingError",
    "EmbeddingInitializationError",
    "EmbeddingStateError",
    "EmptyVocabularyError",
    "ZeroEmbeddingWidthError",
]


PYTORCH_KEYWORDS: Final = {
    "num_embeddings": "vocabulary_size",
    "embedding_dim": "embedding_width",
    "sparse": "every table's gradient is row-sparse already (table.tensor.sparse_gradient)",
    "_weight": "Embedding.from_pretrained(table, freeze=False)",
}
"""PyTorch's keywords of ``nn.Embedding``, refused by the constructors with a pointer to ours."""


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Embedding(TableLayer):
    """A ``[V, d]`` token table and its row lookup.

    Build one as ``nn.Embedding`` is built, ``Embedding(vocabulary_size, embedding_width)`` (a
    float32 Xavier-uniform table from seed 0, see :meth:`__init__`), or with :meth:`new` (the
    course's constructor: a name, a generator, float64 by default), :meth:`from_parameter` (an
    existing named parameter) or :meth:`from_pretrained` (a NumPy array, ``Tensor`` or named
    parameter, trainable or frozen). Calling the layer looks up rows:
    ``X[..., :] = E[z[...], :]``; reverse mode adds the gradients of repeated IDs into one
    shared row.

    ``Embedding(table, options)``, the class called with its two fields, checks them as the
    constructors do (it is how pickles of earlier versions rebuild a layer).

    Attributes:
        table: the named ``[V, d]`` table (PyTorch's ``weight``): a :class:`NamedParameter`
            (its ``tensor`` is the trainable leaf, ``table.tensor.numpy()`` its numbers) or a
            :class:`FrozenTable` (a constant; lookups carry no gradient).
        options: the checked :class:`LookupOptions`; ``padding_idx`` (the row that receives
            no gradient, in ``[0, V)``, or None), ``max_norm`` (the norm above which a looked-up
            row is scaled down in place, or None), ``norm_type`` (its ``p``) and
            ``scale_grad_by_freq`` are also attributes of the layer.
        vocabulary_size: ``V``, the number of rows (PyTorch's ``num_embeddings``).
        embedding_width: ``d``, the features per row (PyTorch's ``embedding_dim``).

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
        >>> from llm_from_scratch.errors import IdError
        >>> try:
        ...     embedding([1, 4, 9])
        ... except IdError as error:
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
        """A new ``[vocabulary_size, embedding_width]`` layer, as ``nn.Embedding(V, d)``.

        It is ``Embedding.new(name, vocabulary_size, embedding_width, rng, dtype, ...)`` with
        PyTorch's default dtype, float32, and the seed 0: two layers built alike are equal.
        (PyTorch draws its table from ``N(0, 1)`` with its global generator; this one is the
        course's Xavier-uniform table, drawn from ``SplitMix64.from_seed(0)``.)

        Args:
            vocabulary_size, embedding_width: ``V`` and ``d`` (PyTorch's ``num_embeddings``
                and ``embedding_dim``, which are refused with a pointer here).
            padding_idx, max_norm, norm_type, scale_grad_by_freq: as PyTorch's; see
                :meth:`new`.
            dtype: ``numpy.float32`` (the default) or ``numpy.float64``.
            rng: an int seed (default 0), a :class:`SplitMix64` or a NumPy ``Generator``, as
                for :meth:`new`.
            name: the table's parameter name (its key in checkpoints and state dicts).

        Raises:
            The errors of :meth:`new`; PyTorchNameError: ``num_embeddings``,
            ``embedding_dim``, ``sparse`` or ``_weight``, each with a pointer to ours.

        Example:
            >>> layer = Embedding(1000, 64)
            >>> layer.table.tensor.shape, layer.table.tensor.dtype, layer.table.name
            ((1000, 64), dtype('float32'), 'token_embedding.weight')
            >>> layer.table.tensor.value.equals(Embedding(1000, 64).table.tensor.value)
            True
        """
        if is_table(vocabulary_size):  # the two fields, as earlier versions' pickles give them
            table, options = vocabulary_size, embedding_width
        else:
            options_for = _options(padding_idx, max_norm, norm_type, scale_grad_by_freq)
            table, options = new_table(  # type: ignore[assignment]
                name, vocabulary_size, embedding_width, rng, dtype, options_for
            )
        hold_fields(self, table, options)

    @property
    def padding_idx(self) -> int | None:
        """The row that receives no gradient (in ``[0, V)``), or None."""
        return self.options.padding_idx

    @property
    def max_norm(self) -> float | None:
        """The norm above which a looked-up row is scaled down in place, or None."""
        return self.options.max_norm

    @property
    def norm_type(self) -> float:
        """The ``p`` of that norm."""
        return self.options.norm_type

    @property
    def scale_grad_by_freq(self) -> bool:
        """Whether each row's gradient is divided by how often a call's IDs name it."""
        return self.options.scale_grad_by_freq

    # Construction -------------------------------------------------------------------------------

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
        """Wrap an existing named parameter (the same leaf, not a copy); its values are kept,
        the padding row's included.

        Raises:
            TypeError: ``table`` is not a NamedParameter.
            TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: in this order.
            OptionValueError (``padding_idx``, ``max_norm``, ``norm_type``), then
                OptionTypeError (``scale_grad_by_freq``): the options, in this order.
        """
        rows, _ = checked_parameter_size(table)
        options = _options(padding_idx, max_norm, norm_type, scale_grad_by_freq)(rows)
        return layer_of(cls, table, options)

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
        """A Xavier-uniform ``[vocabulary_size, embedding_width]`` table named ``name``.

        ``rng`` is a :class:`SplitMix64` (the course's stream, exactly), an int seed (the same
        values as ``SplitMix64.from_seed(rng)``) or a NumPy ``Generator`` (its ``random()``
        draws, in the same formula); see
        :func:`~llm_from_scratch.nn.init.xavier_uniform_array`. ``dtype`` is float64 unless
        given, as the course's tables are (``Embedding(V, d)`` makes PyTorch's float32).

        The whole table is drawn as without padding; then the padding row, if any, is set to
        zeros (so every other row equals the one a layer without ``padding_idx`` draws from
        the same generator). ``rng`` advances only if the whole construction succeeds.

        Raises:
            EmbeddingInitializationError: a bad name or fan (``__cause__`` is the
                InitializationError).
            EmptyVocabularyError: ``vocabulary_size == 0``.
            ZeroEmbeddingWidthError: ``embedding_width == 0``.
            OptionValueError, OptionTypeError: the options (``name`` says which).
            EmbeddingInitializationError: a bad generator, seed or dtype, or no memory.
            PyTorchNameError: ``num_embeddings``, ``embedding_dim``, ``sparse`` or ``_weight``.

        Example:
            >>> from llm_from_scratch.nn import SplitMix64
            >>> a = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
            >>> b = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
            >>> a.table.tensor.value.equals(b.table.tensor.value)
            True
            >>> a.table.tensor.is_same_node(b.table.tensor)
            False
            >>> padded = Embedding.new(
            ...     "token_embedding.weight", 4, 2, SplitMix64.from_seed(18), padding_idx=-1)
            >>> padded.padding_idx, padded.table.tensor.numpy()[3].tolist()
            (3, [0.0, 0.0])
            >>> by_seed = Embedding.new("token_embedding.weight", 4, 2, 18)
            >>> by_seed.table.tensor.value.equals(a.table.tensor.value)
            True
            >>> Embedding.new("w", 4, 2, np.random.default_rng(0), np.float32).table.tensor.dtype
            dtype('float32')
        """
        options_for = _options(padding_idx, max_norm, norm_type, scale_grad_by_freq)
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
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
    ) -> Embedding:
        """A layer over a table you already have, as PyTorch's ``Embedding.from_pretrained``.

        Args:
            table: a 2-D NumPy array (float32 and float64 keep their dtype, integers become
                float64; an ndarray subclass is read through its plain data), a ``Tensor``, or
                a :class:`NamedParameter`. Its values are kept as they are, the padding row's
                included.
            name: the name of the layer's table (also for a NamedParameter).
            freeze: True (PyTorch's default): the table is a constant copy, a
                :class:`FrozenTable`, and lookups are constants that carry no gradient.
                False: a trainable parameter leaf, a copy of an array or ``Tensor``, or the
                very leaf of a NamedParameter.
            padding_idx, max_norm, norm_type, scale_grad_by_freq: as in :meth:`new`. With
                ``max_norm``, a trainable table is renormalized in place, as PyTorch does; a
                frozen one is never written: each lookup returns the renormalized rows (what
                PyTorch's first lookup of each row returns) and the table stays as it is.

        Raises:
            PretrainedTableTypeError: ``table`` is none of the above.
            TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: its shape.
            EmbeddingInitializationError: a bad name (``__cause__`` is the name error).
            OptionValueError, OptionTypeError: the options, then OptionTypeError for
                ``freeze``.
            OutputAllocationError: the copy of the table cannot be allocated (``leaf copy``).
            NonFiniteParameterError: a NaN or infinity in the table (checked last).

        Example:
            >>> table = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
            >>> frozen = Embedding.from_pretrained(table, padding_idx=0)
            >>> x = frozen([2, 1])
            >>> x.kind, x.dtype, x.numpy().tolist()
            ('constant', dtype('float32'), [[3.0, 4.0], [1.0, 2.0]])
            >>> Embedding.from_pretrained(table, freeze=False)([2]).kind
            'operation'
        """
        options_for = _options(padding_idx, max_norm, norm_type, scale_grad_by_freq)
        layer_table, options = pretrained_table(table, name, freeze, options_for)
        return layer_of(cls, layer_table, options)

    # Reading ------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return (
            f"Embedding(name={self.table.name!r}, vocabulary_size={self.vocabulary_size}, "
            f"embedding_width={self.embedding_width}, dtype={self.table.tensor.dtype}, "
            f"padding_idx={self.padding_idx}, max_norm={self.max_norm}, "
            f"norm_type={self.norm_type}, scale_grad_by_freq={self.scale_grad_by_freq}, "
            f"frozen={self.frozen})"
        )

    # Lookup -------------------------------------------------------------------------------------

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
            IdError, AllocationError: in the contract's order (see
                :func:`~llm_from_scratch.autograd.gather.plan_of_ids`): ``ids.shape``,
                ``ids.container``, ``ids.count``, ``ids.shape`` for the output shape,
                ``ids.dtype``, ``ids.allocation``, then ``ids.type`` or ``ids.out-of-range``
                for the first bad ID in flat order.
            TapeError, AllocationError: from the tape, as their own rules.
        """
        table = self.table.tensor
        table_shape = (self.vocabulary_size, self.embedding_width)
        rule = self.options.gradient_rule
        plan = plan_of_ids(token_ids, table_shape, table.dtype.itemsize, rule, shape=token_shape)
        return lookup(table, plan, self.options)

    def __call__(self, ids: object) -> TensorValue:
        """Look up rows for ``ids``, an integer array or nested lists whose shape is the token
        shape (an array is not flattened first; a list or tuple subclass is read as the items
        it holds, and nesting deeper than ``MAX_AXES`` is ``ids.nesting``).

        Raises:
            IdError, AllocationError: as :meth:`forward`, with ``ids.container`` for a masked
                array or ragged lists.

        Shape:
            ``ids``: ``[*]``; output: ``[*, d]``.
        """
        table = self.table.tensor
        table_shape = (self.vocabulary_size, self.embedding_width)
        plan = plan_of_ids(ids, table_shape, table.dtype.itemsize, self.options.gradient_rule)
        return lookup(table, plan, self.options)


def _options(
    padding_idx: int | None, max_norm: float | None, norm_type: float, scale_grad_by_freq: bool
) -> Callable[[int], LookupOptions]:
    """The checked options of a table of ``V`` rows, once ``V`` is known."""
    return lambda rows: LookupOptions(rows, padding_idx, max_norm, norm_type, scale_grad_by_freq)


def lookup(table: TensorValue, plan: RowGatherPlan, options: LookupOptions) -> TensorValue:
    """The lookup of checked IDs (their plan carries the options' gradient rule) with checked
    options (package-internal; the layer and ``nn.functional.embedding`` call it). With
    ``max_norm`` a parameter's looked-up rows are renormalized in place, and a constant's
    renormalized rows are looked up without writing it.

    Raises:
        TapeError, AllocationError: from the tape.
    """
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
