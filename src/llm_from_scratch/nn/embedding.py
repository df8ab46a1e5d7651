"""The token embedding layer (course chapter 18).

``Embedding`` owns one named ``[V, d]`` parameter. :meth:`Embedding.forward` is the public
boundary: it checks the token shape, the ID count, the output shape and every ID once, in that
order, reading each ID once into the trusted row-gather plan's own index buffer (see
:mod:`~llm_from_scratch.autograd.ids`), which it hands to the package-internal
:func:`~llm_from_scratch.autograd.value.gather_rows_with_plan`. The kernel and VJP are the ones
:meth:`TensorValue.gather_rows` uses.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.gather import (
    IdErrors,
    checked_output_layout,
    checked_row_gather_plan,
    checked_row_gather_plan_of_array,
)
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
    MAX_AXES,
    Shape,
    TensorError,
    checked_row_major_layout,
    is_masked_array,
    plain_view,
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


class TokenIdNestingError(TokenIdContainerError):
    """Nested lists deeper than an array can have axes (``limit``), for example a list that
    contains itself."""

    limit: int


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
    position: int | None  # None only for TokenIdDtypeError: an empty array has no position
    value: object


class TokenIdDtypeError(TokenIdTypeError):
    """An empty ID array of a non-integer dtype: there is no ID to name, so the dtype is named.

    ``position`` and ``value`` are None (an empty array has neither).
    """

    template = "token IDs must be integers, got an empty array of dtype {dtype}"
    dtype: str


class IndexAllocationError(EmbeddingError, MemoryError):
    """The converted index buffer could not be allocated."""

    template = "could not reserve {elements} converted embedding indices"
    elements: int


def _output_shape_error(token_shape: object, output_shape: Shape, cause: TensorError) -> Exception:
    return TokenShapeError(token_shape, cause)  # the token shape does not fit this layer


_TOKEN_ID_ERRORS: Final = IdErrors(
    shape=TokenShapeError,
    output_shape=_output_shape_error,
    container=TokenIdContainerError,
    count=TokenCountMismatchError,
    non_integer=TokenIdTypeError,
    non_integer_dtype=partial(TokenIdDtypeError, None, None),
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
        """A layer with the same options and an independent table leaf holding equal values
        and an equal stored gradient (in the same form)."""
        fields = {name: copy.deepcopy(value, memo) for name, value in _layer_fields(self).items()}
        return restore_embedding(fields)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the layer's fields (the table as a ``NamedParameter``, which pickles its
        leaf's values and gradient), rebuilt by :func:`restore_embedding`."""
        return restore_embedding, (_layer_fields(self),)

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
                of any integer dtype. Each ID is read once, into the lookup's own index
                buffer, and checked there; an ndarray subclass is read through its plain data
                and a masked array is refused.
            token_shape: the shape the IDs form; ``()`` takes one ID. At most ``MAX_AXES``
                extents are read from it.

        Shape:
            ``token_ids``: ``[prod(token_shape)]``; output: ``token_shape + (d,)``.

        Raises:
            TokenShapeError: the token shape's layout is invalid (checked first).
            TokenIdContainerError: ``token_ids`` is not a flat sequence or 1-D array.
            TokenCountMismatchError: the ID count differs from the shape's element count.
            TokenShapeError: the output shape ``token_shape + (d,)`` does not fit (too many
                axes, a layout overflow, or a zero-element shape NumPy cannot describe),
                found before any ID is read.
            TokenIdDtypeError: an empty array of a non-integer dtype.
            IndexAllocationError: the index buffer cannot be reserved.
            TokenIdTypeError, TokenIdOutOfBoundsError: the first bad ID in flat order.
            TensorAutodiffError: from the tape, as its own type.
        """
        plan = checked_row_gather_plan(
            token_ids, token_shape, self._table_shape, self._itemsize, _TOKEN_ID_ERRORS
        )
        return gather_rows_with_plan(self.table.tensor, plan)

    def __call__(self, ids: object) -> TensorValue:
        """Look up rows for ``ids``, an integer array or nested lists; its shape is the token shape.

        An array (any subclass, read through its plain data; not a masked one) is looked up
        without being flattened first. For nested lists and tuples (a list or tuple subclass is
        read as the items it holds), the shape is taken from the first items, at most
        ``MAX_AXES`` levels deep (a list that contains itself is a
        :class:`TokenIdNestingError`); that shape and the output shape are checked and room
        for the flat IDs reserved before the nest is walked for raggedness.

        Raises:
            TokenIdContainerError: a masked array, or ragged nested lists.
            TokenIdNestingError: lists nested deeper than ``MAX_AXES`` levels.
            TokenShapeError, TokenIdDtypeError, IndexAllocationError, TokenIdTypeError,
                TokenIdOutOfBoundsError: as :meth:`forward`.

        Shape:
            ``ids``: ``[*]``; output: ``[*, d]``.
        """
        if isinstance(ids, np.ndarray) and (
            is_masked_array(ids) or plain_view(ids).dtype.kind != "O"
        ):
            plan = checked_row_gather_plan_of_array(
                ids, self._table_shape, self._itemsize, _TOKEN_ID_ERRORS
            )
            return gather_rows_with_plan(self.table.tensor, plan)
        flat, shape = _flattened_nest(ids, self._table_shape, self._itemsize)
        return self.forward(flat, shape)

    @property
    def _table_shape(self) -> tuple[int, int]:
        return self.vocabulary_size, self.embedding_width

    @property
    def _itemsize(self) -> int:
        return int(self.table.tensor.dtype.itemsize)


class EmbeddingStateError(EmbeddingError, ValueError):
    """A pickled layer whose fields no layer built from its table can have (a crafted or
    damaged pickle, or one written by a version with other fields)."""

    template = "cannot restore a pickled Embedding: {field} {detail}"
    field: str
    detail: str


def _layer_fields(layer: Embedding) -> dict[str, object]:
    return {field.name: getattr(layer, field.name) for field in dataclasses.fields(layer)}


def restore_embedding(state: object) -> Embedding:
    """Rebuild a pickled (or deep-copied) :class:`Embedding` from its fields: the unpickler's
    entry point.

    The layer is rebuilt by :meth:`Embedding.from_parameter` from the ``table`` field, given
    every other field that is one of its keyword options; every field of the rebuilt layer must
    then equal the pickled one (so a field derived from the table, such as
    ``vocabulary_size``, must agree with it).

    Raises:
        EmbeddingStateError: ``state`` is not a dict with exactly the layer's fields, the table
            is not a ``NamedParameter``, or a field differs from the rebuilt layer's.
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: from ``from_parameter``.
    """
    fields = _checked_layer_state(state)
    table = fields["table"]
    if not isinstance(table, NamedParameter):
        raise EmbeddingStateError("table", f"must be a NamedParameter, got {type(table).__name__}")
    options = {name: fields[name] for name in _from_parameter_options() if name in fields}
    layer = Embedding.from_parameter(table, **options)
    for name, value in _layer_fields(layer).items():
        pickled = fields[name]
        if not _same_field(value, pickled):
            raise EmbeddingStateError(name, f"is {pickled!r}, but the rebuilt layer has {value!r}")
    return layer


def _checked_layer_state(state: object) -> dict[str, object]:
    names = [field.name for field in dataclasses.fields(Embedding)]
    if type(state) is not dict:
        raise EmbeddingStateError("state", f"must be a dict, got {type(state).__name__}")
    if len(state) != len(names) or set(state) != set(names):
        got = ", ".join(sorted(repr(name) for name in state))
        raise EmbeddingStateError("state", f"must have the fields {sorted(names)}, got [{got}]")
    return state


def _from_parameter_options() -> tuple[str, ...]:
    parameters = inspect.signature(Embedding.from_parameter).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _same_field(value: object, pickled: object) -> bool:
    return value is pickled or (type(value) is type(pickled) and bool(value == pickled))


def _layer_of(table: NamedParameter) -> Embedding:
    """The trusted constructor: ``table`` is a checked ``[V, d]`` parameter with ``V, d > 0``."""
    rows, width = table.tensor.shape
    return Embedding(table, rows, width, key=_TRUSTED)


def _flattened_nest(
    ids: object, table_shape: tuple[int, int], itemsize: int
) -> tuple[list[object], Shape]:
    """Flatten nested lists (or a single ID, or an object array) in row-major order.

    Order: the nesting depth; the shape the nest claims and the output shape; room for the
    flat IDs; then a walk that insists on a regular shape. No ID is read here.
    """
    if isinstance(ids, np.ndarray):  # an object array: its elements may be lists themselves
        plain = plain_view(ids)
        _reserved(int(plain.size))
        ids = plain.tolist()
    shape = _claimed_shape(ids)
    try:
        _, count = checked_row_major_layout(shape)
        checked_output_layout(shape, table_shape, itemsize)
    except TensorError as error:
        raise TokenShapeError(shape, error) from error
    flat = _reserved(count)
    _fill_flat(ids, shape, flat)
    return flat, shape


def _claimed_shape(ids: object) -> Shape:
    """Each level's length, following first items, at most ``MAX_AXES`` levels deep."""
    shape: list[int] = []
    probe = ids
    while isinstance(probe, list | tuple):
        if len(shape) == MAX_AXES:
            raise TokenIdNestingError(f"lists nested more than {MAX_AXES} deep", MAX_AXES)
        items = _items_of(probe)
        shape.append(len(items))
        if not items:
            break
        probe = items[0]
    return tuple(shape)


def _items_of(container: list[object] | tuple[object, ...]) -> Sequence[object]:
    """The items a list or tuple holds, read by the base class (a subclass's overrides of
    ``len``, indexing or iteration do not run)."""
    if type(container) in (list, tuple):
        return container
    if isinstance(container, list):
        return tuple(list.__iter__(container))
    return tuple(tuple.__iter__(container))


def _reserved(count: int) -> list[object]:
    try:
        return [None] * count
    except (MemoryError, OverflowError) as error:
        raise IndexAllocationError(count) from error


def _fill_flat(ids: object, shape: Shape, flat: list[object]) -> None:
    """Write the leaves of a regular nest into ``flat`` (as long as its element count)."""
    filled = 0
    stack: list[tuple[object, int, tuple[int, ...]]] = [(ids, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        if depth == len(shape):
            if isinstance(item, list | tuple):
                raise TokenIdContainerError(f"ragged nesting at index {list(path)}")
            flat[filled] = item
            filled += 1
            continue
        items = _items_of(item) if isinstance(item, list | tuple) else None
        if items is None or len(items) != shape[depth]:
            raise TokenIdContainerError(
                f"ragged nesting at index {list(path)}: expected {shape[depth]} items"
            )
        stack.extend((items[i], depth + 1, (*path, i)) for i in reversed(range(len(items))))
