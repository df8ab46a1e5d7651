"""The token embedding layer (course chapter 18).

``Embedding`` owns one named ``[V, d]`` parameter. :meth:`Embedding.forward` is the public
boundary: it checks the token shape, the ID count and every ID once, in that order, and converts
the IDs into a trusted row-gather plan, which it hands to the package-internal
:func:`~llm_from_scratch.autograd.value.gather_rows_with_plan`. The kernel and VJP are the ones
:meth:`TensorValue.gather_rows` uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.gather import IdErrors, checked_row_gather_plan
from llm_from_scratch.autograd.value import gather_rows_with_plan
from llm_from_scratch.errors import StructuredError
from llm_from_scratch.nn.init import (
    InitializationError,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    ZeroFanInError,
    ZeroFanOutError,
)
from llm_from_scratch.sealed import Sealed
from llm_from_scratch.tensor.storage import (
    Shape,
    TensorError,
)

_TRUSTED: Final = object()  # the key of the trusted constructors below


class EmbeddingError(StructuredError):
    """Base class of every error raised by :mod:`llm_from_scratch.nn.embedding`."""


class TableRankError(EmbeddingError, ValueError):
    """A table parameter that is not rank two."""

    template = "embedding table must have rank two, got rank {rank}"
    rank: int


class EmptyVocabularyError(EmbeddingError, ValueError):
    """A table with no rows (``V == 0``)."""

    template = "embedding vocabulary must contain at least one row"
    vocabulary_size: int = 0


class ZeroEmbeddingWidthError(EmbeddingError, ValueError):
    """A table with no columns (``d == 0``)."""

    template = "embedding width must be greater than zero"
    embedding_width: int = 0


class EmbeddingInitializationError(EmbeddingError, ValueError):
    """``Embedding.new`` failed while initializing; ``cause`` is the InitializationError."""

    template = "cannot initialize the embedding table: {cause}"
    cause: InitializationError


class TokenShapeError(EmbeddingError, ValueError):
    """A token shape whose checked layout failed; ``cause`` is the tensor error."""

    template = "invalid token-ID shape: {cause}"
    token_shape: object
    cause: TensorError


class TokenIdContainerError(EmbeddingError, TypeError):
    """Token IDs that are not a flat sequence / 1-D array (``forward``), or ragged lists."""

    template = "token IDs must be integers in a regular array: {detail}"
    detail: str


class TokenCountMismatchError(EmbeddingError, ValueError):
    """A flat ID count that differs from the token shape's element count."""

    template = "token-ID shape needs {expected} IDs, but received {actual}"
    expected: int
    actual: int


class TokenIdOutOfBoundsError(EmbeddingError, IndexError):
    """The first ID, in flat order, outside ``[0, V)`` (negative IDs included)."""

    template = (
        "token ID {id} at flat position {position} is out of bounds for "
        "vocabulary size {vocabulary_size}"
    )
    position: int
    id: int
    vocabulary_size: int


class TokenIdTypeError(EmbeddingError, TypeError):
    """The first ID, in flat order, that is not an integer (bools and floats are not)."""

    template = "token ID at flat position {position} must be an integer, got {value!t} {value!r}"
    position: int
    value: object


class IndexAllocationError(EmbeddingError, MemoryError):
    """The converted index buffer could not be allocated."""

    template = "could not reserve {elements} converted embedding indices"
    elements: int


_TOKEN_ID_ERRORS: Final = IdErrors(
    shape=TokenShapeError,
    container=TokenIdContainerError,
    count=TokenCountMismatchError,
    non_integer=TokenIdTypeError,
    out_of_bounds=TokenIdOutOfBoundsError,
    allocation=IndexAllocationError,
)


@dataclass(frozen=True, eq=False, repr=False)
class Embedding(
    Sealed,
    key=_TRUSTED,
    hint="build an Embedding with Embedding.new or Embedding.from_parameter",
):
    """A trainable ``[V, d]`` token table and its row lookup.

    Build one with :meth:`new` (Xavier-uniform from a :class:`SplitMix64`) or
    :meth:`from_parameter`. Calling the layer looks up rows: ``X[..., :] = E[z[...], :]``;
    reverse mode adds the gradients of repeated IDs into one shared row.

    Attributes:
        table: the named ``[V, d]`` parameter (its ``tensor`` is the leaf).
        vocabulary_size: ``V``, the number of rows.
        embedding_width: ``d``, the features per row.

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
        ... except TokenIdOutOfBoundsError as error:
        ...     print(error.id, error.position, error.vocabulary_size)
        ...     print(error)
        4 1 4
        token ID 4 at flat position 1 is out of bounds for vocabulary size 4
    """

    __slots__ = ("embedding_width", "table", "vocabulary_size")
    table: NamedParameter
    vocabulary_size: int
    embedding_width: int

    # Construction -------------------------------------------------------------------------------

    @classmethod
    def from_parameter(cls, table: NamedParameter) -> Embedding:
        """Wrap an existing named parameter (the same leaf, not a copy).

        Raises:
            TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: in this order.
        """
        if not isinstance(table, NamedParameter):
            raise TypeError(f"from_parameter needs a NamedParameter, got {type(table).__name__}")
        shape = table.tensor.shape
        if len(shape) != 2:
            raise TableRankError(len(shape))
        if shape[0] == 0:
            raise EmptyVocabularyError()
        if shape[1] == 0:
            raise ZeroEmbeddingWidthError()
        return _layer_of(table)

    @classmethod
    def new(
        cls,
        name: str,
        vocabulary_size: int,
        embedding_width: int,
        rng: SplitMix64,
        dtype: npt.DTypeLike = np.float64,
    ) -> Embedding:
        """A Xavier-uniform ``[vocabulary_size, embedding_width]`` table named ``name``.

        The name is checked first; ``rng`` advances only if the whole construction succeeds.

        Raises:
            EmbeddingInitializationError: a bad name, fan or dtype, or no memory
                (``__cause__`` is the InitializationError).
            EmptyVocabularyError: ``vocabulary_size == 0``.
            ZeroEmbeddingWidthError: ``embedding_width == 0``.

        Example:
            >>> a = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
            >>> b = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
            >>> a.table.tensor.value.equals(b.table.tensor.value)
            True
            >>> a.table.tensor.is_same_node(b.table.tensor)
            False
        """
        try:
            table = NamedParameter.xavier_uniform(
                name, vocabulary_size, embedding_width, rng, dtype
            )
        except ZeroFanInError as error:
            raise EmptyVocabularyError() from error
        except ZeroFanOutError as error:
            raise ZeroEmbeddingWidthError() from error
        except InitializationError as error:
            raise EmbeddingInitializationError(error) from error
        return _layer_of(table)

    def clone(self) -> Embedding:
        """A new layer object holding the same parameter leaf."""
        return _layer_of(self.table)

    def __copy__(self) -> Embedding:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> Embedding:
        leaf = TensorValue.parameter(self.table.tensor.value_snapshot())
        return _layer_of(NamedParameter.from_value(self.table.name, leaf))

    # Reading ------------------------------------------------------------------------------------

    def parameters(self) -> NamedParameters:
        """The layer's parameters: a one-element :class:`NamedParameters` holding :attr:`table`
        (the same leaf)."""
        return NamedParameters((self.table,))

    def __repr__(self) -> str:
        return (
            f"Embedding(name={self.table.name!r}, vocabulary_size={self.vocabulary_size}, "
            f"embedding_width={self.embedding_width}, dtype={self.table.tensor.dtype})"
        )

    # Lookup -------------------------------------------------------------------------------------

    def forward(
        self, token_ids: Sequence[object] | npt.NDArray[Any], token_shape: Shape
    ) -> TensorValue:
        """Look up one table row per ID.

        Args:
            token_ids: flat IDs in row-major order: a sequence of ints, or a 1-D NumPy array
                of any integer dtype.
            token_shape: the shape the IDs form; ``()`` takes one ID.

        Shape:
            ``token_ids``: ``[prod(token_shape)]``; output: ``token_shape + (d,)``.

        Raises:
            TokenShapeError: the token shape's layout is invalid (checked first).
            TokenIdContainerError: ``token_ids`` is not a flat sequence or 1-D array.
            TokenCountMismatchError: the ID count differs from the shape's element count.
            TokenIdTypeError, TokenIdOutOfBoundsError: the first bad ID in flat order.
            IndexAllocationError: the IDs cannot be copied or converted into an index buffer.
            TensorAutodiffError: from the tape, as its own type.
        """
        plan = checked_row_gather_plan(
            token_ids,
            token_shape,
            (self.vocabulary_size, self.embedding_width),
            _TOKEN_ID_ERRORS,
        )
        return gather_rows_with_plan(self.table.tensor, plan)

    def __call__(self, ids: object) -> TensorValue:
        """Look up rows for ``ids``, an integer array or nested lists; its shape is the token shape.

        Shape:
            ``ids``: ``[*]``; output: ``[*, d]``.
        """
        if isinstance(ids, np.ndarray) and ids.dtype.kind != "O":
            return self.forward(np.ascontiguousarray(ids).reshape(-1), ids.shape)
        flat, shape = _flatten_nested(ids)
        return self.forward(flat, shape)


def _layer_of(table: NamedParameter) -> Embedding:
    """The trusted constructor: ``table`` is a checked ``[V, d]`` parameter with ``V, d > 0``."""
    rows, width = table.tensor.shape
    return Embedding(table, rows, width, key=_TRUSTED)


def _flatten_nested(ids: object) -> tuple[list[object], Shape]:
    """Flatten nested lists (or a single ID) in row-major order, insisting on a regular shape."""
    if isinstance(ids, np.ndarray):
        return _flatten_nested(ids.tolist())
    if not isinstance(ids, list | tuple):
        return [ids], ()
    shape: list[int] = []
    probe: object = ids
    while isinstance(probe, list | tuple):
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    flat: list[object] = []
    stack: list[tuple[object, int, tuple[int, ...]]] = [(ids, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        if depth == len(shape):
            if isinstance(item, list | tuple):
                raise TokenIdContainerError(f"ragged nesting at index {list(path)}")
            flat.append(item)
            continue
        if not isinstance(item, list | tuple) or len(item) != shape[depth]:
            raise TokenIdContainerError(
                f"ragged nesting at index {list(path)}: expected {shape[depth]} items"
            )
        stack.extend((item[i], depth + 1, (*path, i)) for i in reversed(range(len(item))))
    return flat, tuple(shape)
