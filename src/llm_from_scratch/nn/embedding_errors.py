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

from llm_from_scratch.errors import StructuredError
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
    "TableTypeError",
    "ZeroEmbeddingWidthError",
]


class EmbeddingError(StructuredError):
    """Base class of every error of the embedding layers."""


# Tables ----------------------------------------------------------------------------------------


class EmptyVocabularyError(EmbeddingError, ValueError):
    """A table with no rows (``V == 0``).

    A layer's table with zero rows, or ``new`` with ``V == 0`` (``__cause__`` is the
    ``ZeroFanInError``).
    """

    template = "embedding vocabulary must contain at least one row"
    vocabulary_size: int = 0


class ZeroEmbeddingWidthError(EmbeddingError, ValueError):
    """A table with no columns (``d == 0``).

    A layer's table with zero columns, or ``new`` with ``d == 0`` (``__cause__`` is the
    ``ZeroFanOutError``).
    """

    template = "embedding width must be greater than zero"
    embedding_width: int = 0


class EmbeddingInitializationError(EmbeddingError, ValueError):
    """``new`` failed while initializing, or ``from_pretrained`` got a bad name; ``cause`` is the
    ``InitializationError``.

    ``Embedding.new`` or ``EmbeddingBag.new`` failed with an ``InitializationError`` other than a
    zero fan: a bad name, fan, generator or dtype, or a table too large to allocate;
    ``from_pretrained`` with a bad ``name``. ``cause`` is also ``__cause__``.
    """

    template = "cannot initialize the embedding table: {cause}"
    cause: InitializationError


class EmbeddingStateError(EmbeddingError, ValueError, TypeError):
    """A layer state that does not fit the layer: a pickle's fields, or a state dict.

    ``layer`` is ``Embedding`` or ``EmbeddingBag``. ``source`` ``pickle``: a crafted or damaged
    pickle, or one written by a version with other fields. Rebuilding a layer from its fields, as
    unpickling and copying do, checks them: ``field`` is ``class`` for a class that is no layer,
    ``table`` for a table that is neither a ``NamedParameter`` nor a ``FrozenTable``, ``options``
    for options that are not the layer's options record checked for the table's row count. A
    table of the wrong shape raises ``TableRankError``, ``EmptyVocabularyError`` or
    ``ZeroEmbeddingWidthError``, as when the layer is built. ``source`` ``state dict``:
    ``load_state_dict`` with something that is not a mapping (``field`` ``state``), without the
    table's name or with another key (``key``: PyTorch's ``weight`` is the table's name here), a
    value that is not a real NumPy array of the table's shape and dtype (``value``), or into a
    frozen layer, whose table is a constant (``table``: ``freeze=False`` makes it trainable).
    """

    template_key = "source"
    template: ClassVar[Mapping[str, str]] = {
        "pickle": "cannot restore a pickled {layer}: {field} {detail}",
        "state dict": "{layer}.load_state_dict: {field} {detail}",
    }
    field: str
    detail: str
    layer: str = "Embedding"
    source: Literal["pickle", "state dict"] = "pickle"


class TableTypeError(EmbeddingError, TypeError):
    """A functional lookup's table that is not a ``TensorValue``.

    ``functional.embedding`` or ``embedding_bag`` with a NumPy array, a ``Tensor`` or a
    ``NamedParameter`` (pass its ``tensor``).
    """

    template = "the embedding table must be a TensorValue, got {table_type}"
    table_type: str


class PretrainedTableTypeError(EmbeddingError, TypeError):
    """A ``from_pretrained`` table that is not a NumPy array of a supported dtype, a ``Tensor`` or a
    ``NamedParameter``.

    A list, a masked array, or an array of another dtype (float16, bool, complex, object).
    """

    template = (
        "from_pretrained needs a NumPy array of float32, float64 or integers, a Tensor or a "
        "NamedParameter, got {table_type}"
    )
    table_type: str


# Options ---------------------------------------------------------------------------------------


class OptionTypeError(EmbeddingError, TypeError):
    """An option of the wrong type: a yes-or-no option that is not a bool.

    ``scale_grad_by_freq``, ``freeze`` or ``include_last_offset`` (``name``) that is not a Python or
    NumPy bool (``0``, ``1``, ``None``, ``"yes"``); ``requirement`` is what it must be (``a bool``).
    """

    template = "{name} must be {requirement}, got {value!t} {value!r}"
    name: str
    requirement: str
    value: object


class OptionValueError(EmbeddingError, ValueError):
    """An option outside its range; ``name`` names it and ``requirement`` says what it must be.

    A ``padding_idx`` that is a ``bool``, not an integer (``1.0``, ``"1"``), or an integer outside
    ``[-V, V)`` (read once with ``operator.index``; an integer outside the range is reported as
    read); a ``max_norm`` or ``norm_type`` that is zero, negative, NaN, infinite, ``None`` (for
    ``norm_type``), a ``bool`` or not a real number (read once with ``float()``); a bag ``mode``
    other than ``"sum"``, ``"mean"`` or ``"max"`` (``"min"``, ``"SUM"``, ``None``); a
    ``vocabulary_size`` of ``LookupOptions`` or ``BagOptions`` (the records a layer keeps its
    options in, rebuilt by their constructors when unpickled) that is not an integer at least 0.
    Also a
    ``max_norm`` given to ``functional.embedding`` or ``embedding_bag`` with a table that is an
    operation result (``requirement`` says it must be None): its rows can be neither written nor
    replaced outside the tape. (A parameter table is renormalized in place; a constant one, a
    frozen table included, gives renormalized rows and stays as it is.)
    """

    template = "{name} must be {requirement}, got {value!r}"
    name: str
    requirement: str
    value: object


PaddingIndexError = MaxNormError = NormTypeError = BagModeError = OptionValueError
FrozenTableMaxNormError = OptionValueError  # max_norm with an operation-result table
FlagTypeError = OptionTypeError


# Bags ------------------------------------------------------------------------------------------


class BagLayoutError(EmbeddingError, ValueError):
    """Bag IDs that are neither 2-D without offsets nor 1-D with offsets.

    2-D IDs with offsets, 1-D IDs without, or IDs of another rank (a scalar ID, 3-D IDs).
    """

    template = (
        "embedding bags take 2-D IDs without offsets or 1-D IDs with offsets, "
        "got {rank}-D IDs with offsets_given={offsets_given}"
    )
    rank: int
    offsets_given: bool


OffsetRule = Literal["container", "empty", "integer", "range", "first", "increasing", "last"]


class OffsetsError(EmbeddingError, TypeError, ValueError, IndexError):
    """Offsets of an embedding bag that break a ``rule``; ``bound`` is ``N``, the number of IDs.

    Checked in this order. ``container``: not a sequence or a 1-D integer array (an int, a ``str``,
    a 2-D array, a masked array), or a sequence that yields another number of items than its
    ``len()``. ``empty``: no offset at all (PyTorch crashes on them when there are IDs). Then, in
    order, the first offset that is not an ``integer`` (``bool``, ``float``, ``None``; a non-empty
    float array reports position 0) or lies out of ``range`` ``[0, N]``. ``first``: the first offset
    is not 0, so the IDs before it would belong to no bag. ``increasing``: the first offset smaller
    than the one before it (``bound`` is that one; PyTorch returns rows of garbage). ``last``: with
    ``include_last_offset=True``, a last offset that is not ``N`` (PyTorch silently drops the IDs
    after it).
    """

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
    """Per-sample weights of an embedding bag that break a ``rule``.

    ``mode``: weights with a mode other than ``"sum"`` (``value`` is the mode). ``type``: weights
    that are not a ``TensorValue`` or ``Tensor`` of the table's dtype (``expected``) or a real NumPy
    array: a list, a masked array, an array of a non-real dtype, a ``TensorValue`` or ``Tensor`` of
    the other float dtype (``value`` names what was given). ``shape``: weights whose shape is not
    the IDs' shape ``[N]`` or ``[B, L]`` (``expected``).
    """

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
