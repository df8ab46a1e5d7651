"""The exception family of the embedding layers and their functional forms: ``Embedding``,
``EmbeddingBag``, ``llm_from_scratch.nn.functional.embedding`` and ``embedding_bag``.

Every class derives from :class:`EmbeddingError`. The table-rank and token-ID errors are defined
with the row gather that checks them (:mod:`llm_from_scratch.autograd.errors`), because
``TensorValue.gather_rows`` reports the same failures in its own wording; they are re-exported
here. All of them are re-exported by :mod:`llm_from_scratch.nn`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from llm_from_scratch.autograd.errors import (
    EmbeddingError,
    IndexAllocationError,
    TableRankError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdDtypeError,
    TokenIdNestingError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
)
from llm_from_scratch.nn.init import InitializationError

__all__ = [
    "BagLayoutError",
    "BagModeError",
    "DecreasingOffsetsError",
    "EmbeddingBagStateError",
    "EmbeddingError",
    "EmbeddingInitializationError",
    "EmbeddingStateError",
    "EmptyOffsetsError",
    "EmptyVocabularyError",
    "FirstOffsetError",
    "FlagTypeError",
    "FrozenTableMaxNormError",
    "IndexAllocationError",
    "LastOffsetError",
    "MaxNormError",
    "NormTypeError",
    "OffsetOutOfRangeError",
    "OffsetTypeError",
    "OffsetsContainerError",
    "OffsetsError",
    "OptionTypeError",
    "OptionValueError",
    "PaddingIndexError",
    "PerSampleWeightsError",
    "PerSampleWeightsModeError",
    "PerSampleWeightsShapeError",
    "PerSampleWeightsTypeError",
    "PretrainedTableTypeError",
    "TableRankError",
    "TableTypeError",
    "TokenCountMismatchError",
    "TokenIdContainerError",
    "TokenIdDtypeError",
    "TokenIdNestingError",
    "TokenIdOutOfBoundsError",
    "TokenIdTypeError",
    "TokenShapeError",
    "ZeroEmbeddingWidthError",
]


# Tables ----------------------------------------------------------------------------------------


class EmptyVocabularyError(EmbeddingError, ValueError):
    """A table with no rows (``V == 0``)."""

    template = "embedding vocabulary must contain at least one row"
    vocabulary_size: int = 0


class ZeroEmbeddingWidthError(EmbeddingError, ValueError):
    """A table with no columns (``d == 0``)."""

    template = "embedding width must be greater than zero"
    embedding_width: int = 0


class EmbeddingInitializationError(EmbeddingError, ValueError):
    """``new`` failed while initializing, or ``from_pretrained`` got a bad name; ``cause`` is
    the ``InitializationError``."""

    template = "cannot initialize the embedding table: {cause}"
    cause: InitializationError


class EmbeddingStateError(EmbeddingError, ValueError):
    """A pickled layer (``layer`` is ``Embedding`` or ``EmbeddingBag``) whose fields no layer
    built from its table can have (a crafted or damaged pickle, or one written by a version
    with other fields)."""

    template = "cannot restore a pickled {layer}: {field} {detail}"
    field: str
    detail: str
    layer: str = "Embedding"


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


class OptionTypeError(EmbeddingError, TypeError):
    """An option of the wrong type: a yes-or-no option (``scale_grad_by_freq``, ``freeze``,
    ``include_last_offset``) that is not a bool. ``requirement`` is what it must be."""

    template = "{name} must be {requirement}, got {value!t} {value!r}"
    name: str
    requirement: str
    value: object


class OptionValueError(EmbeddingError, ValueError):
    """An option outside its range: a ``padding_idx`` that is not an integer in ``[-V, V)``
    (a bool is not an integer), a ``max_norm`` or ``norm_type`` that is not a finite real
    number above zero, a bag ``mode`` other than ``"sum"``, ``"mean"`` or ``"max"``."""

    template = "{name} must be {requirement}, got {value!r}"
    name: str
    requirement: str
    value: object


PaddingIndexError = MaxNormError = NormTypeError = BagModeError = OptionValueError
FlagTypeError = OptionTypeError


# Bags ------------------------------------------------------------------------------------------


class BagLayoutError(EmbeddingError, ValueError):
    """Bag IDs that are neither 2-D without offsets nor 1-D with offsets."""

    template = (
        "embedding bags take 2-D IDs without offsets or 1-D IDs with offsets, "
        "got {rank}-D IDs with offsets_given={offsets_given}"
    )
    rank: int
    offsets_given: bool


OffsetRule = Literal["container", "empty", "integer", "range", "first", "increasing", "last"]


class OffsetsError(EmbeddingError, TypeError, ValueError, IndexError):
    """Offsets that break a ``rule``, checked in this order: ``container`` (not a flat
    sequence or 1-D integer array), ``empty``, then in order the first offset that is not an
    ``integer`` or lies out of ``range`` ``[0, N]``, the ``first`` offset is not 0, the first
    offset smaller than the one before it (``increasing``), and with
    ``include_last_offset=True`` the ``last`` offset is not ``N``. ``bound`` is ``N`` (the
    offset before, for ``increasing``)."""

    template_key = "rule"
    template: ClassVar[Mapping[str, str]] = {
        "container": "offsets must be a 1-D sequence of integers: {detail}",
        "empty": "offsets must hold at least one offset: the first bag starts at offset 0",
        "integer": "offset at position {position} must be an integer, got {offset!t} {offset!r}",
        "range": (
            "offset {offset} at position {position} is outside [0, {bound}]: there are {bound} IDs"
        ),
        "first": "the first offset must be 0, got {offset}",
        "increasing": (
            "offset {offset} at position {position} is smaller than the offset {bound} before it"
        ),
        "last": (
            "with include_last_offset=True the last offset must be the number of IDs, {bound}, "
            "got {offset}"
        ),
    }
    rule: OffsetRule
    position: int | None = None
    offset: object = None
    bound: int | None = None
    detail: str = ""


OffsetsContainerError = EmptyOffsetsError = OffsetTypeError = OffsetsError
OffsetOutOfRangeError = FirstOffsetError = DecreasingOffsetsError = LastOffsetError = OffsetsError


class PerSampleWeightsError(EmbeddingError, TypeError, ValueError):
    """Per-sample weights that break a ``rule``: given with a ``mode`` other than ``"sum"``
    (``value`` is the mode), of a ``type`` other than a TensorValue or Tensor of the table's
    dtype or a real NumPy array (``value`` names it, ``expected`` is the dtype), or of a
    ``shape`` other than the IDs' (``expected``)."""

    template_key = "rule"
    template: ClassVar[Mapping[str, str]] = {
        "mode": "per_sample_weights need mode 'sum', got mode {value!r}",
        "type": (
            "per_sample_weights must be a TensorValue or Tensor of the table's dtype {expected}, "
            "or a real NumPy array, got {value}"
        ),
        "shape": "per_sample_weights must have the IDs' shape {expected}, got {value}",
    }
    rule: Literal["mode", "type", "shape"]
    value: object
    expected: object = None


PerSampleWeightsModeError = PerSampleWeightsTypeError = PerSampleWeightsError
PerSampleWeightsShapeError = PerSampleWeightsError
EmbeddingBagStateError = EmbeddingStateError
"""Earlier names of the classes above, kept so that existing ``except`` clauses still work."""
