"""The exception family of the embedding layers and their functional forms: ``Embedding``,
``EmbeddingBag``, ``llm_from_scratch.nn.functional.embedding`` and ``embedding_bag``.

All of them are re-exported by :mod:`llm_from_scratch.nn`; ``docs/errors.md`` lists each with its
message, its attributes and when it is raised.
"""

from __future__ import annotations

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.nn.init import InitializationError
from llm_from_scratch.tensor.storage import Shape, TensorError


class EmbeddingError(StructuredError):
    """Base class of every error raised by the embedding layers."""


# Tables ----------------------------------------------------------------------------------------


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


class EmbeddingStateError(EmbeddingError, ValueError):
    """A pickled ``Embedding`` whose fields no layer built from its table can have (a crafted or
    damaged pickle, or one written by a version with other fields)."""

    template = "cannot restore a pickled Embedding: {field} {detail}"
    field: str
    detail: str


class EmbeddingBagStateError(EmbeddingStateError):
    """A pickled ``EmbeddingBag`` whose fields no bag layer built from its table can have."""

    template = "cannot restore a pickled EmbeddingBag: {field} {detail}"


class TableTypeError(EmbeddingError, TypeError):
    """A functional lookup's table that is not a ``TensorValue``."""

    template = "the embedding table must be a TensorValue, got {table_type}"
    table_type: str


class PretrainedTableTypeError(EmbeddingError, TypeError):
    """A ``from_pretrained`` table that is not a NumPy array of a supported dtype, a ``Tensor``
    or a ``NamedParameter``."""

    template = (
        "from_pretrained needs a NumPy array of float32, float64 or integers, a Tensor or a "
        "NamedParameter, got {table_type}"
    )
    table_type: str


class FrozenTableMaxNormError(EmbeddingError, ValueError):
    """``max_norm`` with a table that never changes (a frozen table, a constant, an operation
    result): renormalizing would write into it."""

    template = (
        "max_norm renormalizes looked-up rows in place, but the table is a {kind}, which never "
        "changes; use a parameter table (from_pretrained with freeze=False)"
    )
    kind: str


# Options ---------------------------------------------------------------------------------------


class PaddingIndexError(EmbeddingError, ValueError):
    """A ``padding_idx`` that is not an integer in ``[-V, V)`` (a bool is not an integer)."""

    template = (
        "padding_idx must be an integer in [-{vocabulary_size}, {vocabulary_size}), "
        "got {padding_idx!r}"
    )
    padding_idx: object
    vocabulary_size: int


class MaxNormError(EmbeddingError, ValueError):
    """A ``max_norm`` that is not a finite real number above zero."""

    template = "max_norm must be a finite real number above zero, got {max_norm!r}"
    max_norm: object


class NormTypeError(EmbeddingError, ValueError):
    """A ``norm_type`` that is not a finite real number above zero."""

    template = "norm_type must be a finite real number above zero, got {norm_type!r}"
    norm_type: object


class FlagTypeError(EmbeddingError, TypeError):
    """A yes-or-no option (``scale_grad_by_freq``, ``freeze``, ``include_last_offset``) that is
    not a bool."""

    template = "{name} must be a bool, got {value!t} {value!r}"
    name: str
    value: object


class BagModeError(EmbeddingError, ValueError):
    """An embedding-bag ``mode`` other than ``"sum"``, ``"mean"`` or ``"max"``."""

    template = "mode must be 'sum', 'mean' or 'max', got {mode!r}"
    mode: object


# Token IDs -------------------------------------------------------------------------------------


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


# Bags ------------------------------------------------------------------------------------------


class BagLayoutError(EmbeddingError, ValueError):
    """Bag IDs that are neither 2-D without offsets nor 1-D with offsets."""

    template = (
        "embedding bags take 2-D IDs without offsets or 1-D IDs with offsets, "
        "got {rank}-D IDs with offsets_given={offsets_given}"
    )
    rank: int
    offsets_given: bool


class OffsetsContainerError(EmbeddingError, TypeError):
    """Offsets that are not a flat sequence or a 1-D integer array (a masked array, an empty
    array of a non-integer dtype, a sequence whose length disagrees with its items)."""

    template = "offsets must be a 1-D sequence of integers: {detail}"
    detail: str


class EmptyOffsetsError(EmbeddingError, ValueError):
    """Offsets with no entry: there is no first bag."""

    template = "offsets must hold at least one offset: the first bag starts at offset 0"


class OffsetTypeError(EmbeddingError, TypeError):
    """The first offset, in order, that is not an integer (bools and floats are not)."""

    template = "offset at position {position} must be an integer, got {value!t} {value!r}"
    position: int
    value: object


class OffsetOutOfRangeError(EmbeddingError, IndexError):
    """The first offset, in order, outside ``[0, N]`` for ``N`` IDs."""

    template = (
        "offset {offset} at position {position} is outside [0, {id_count}]: "
        "there are {id_count} IDs"
    )
    position: int
    offset: int
    id_count: int


class FirstOffsetError(EmbeddingError, ValueError):
    """A first offset other than 0: the IDs before it would belong to no bag."""

    template = "the first offset must be 0, got {offset}"
    offset: int


class DecreasingOffsetsError(EmbeddingError, ValueError):
    """The first offset, in order, smaller than the offset before it."""

    template = (
        "offset {offset} at position {position} is smaller than the offset {previous} before it"
    )
    position: int
    offset: int
    previous: int


class LastOffsetError(EmbeddingError, ValueError):
    """With ``include_last_offset=True``, a last offset other than the number of IDs."""

    template = (
        "with include_last_offset=True the last offset must be the number of IDs, {id_count}, "
        "got {offset}"
    )
    offset: int
    id_count: int


class PerSampleWeightsModeError(EmbeddingError, ValueError):
    """Per-sample weights with a mode other than ``"sum"``."""

    template = "per_sample_weights need mode 'sum', got mode {mode!r}"
    mode: str


class PerSampleWeightsTypeError(EmbeddingError, TypeError):
    """Per-sample weights that are not a TensorValue or Tensor of the table's dtype, or a real
    NumPy array."""

    template = (
        "per_sample_weights must be a TensorValue or Tensor of the table's dtype {dtype}, "
        "or a real NumPy array, got {weights_type}"
    )
    weights_type: str
    dtype: str


class PerSampleWeightsShapeError(EmbeddingError, ValueError):
    """Per-sample weights whose shape is not the IDs' shape."""

    template = "per_sample_weights must have the IDs' shape {expected}, got {actual}"
    expected: Shape
    actual: Shape
