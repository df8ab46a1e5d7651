"""The tables the embedding layers own, and the three ways they are built.

A layer holds a :class:`~llm_from_scratch.nn.init.NamedParameter` (a trainable table) or a
:class:`FrozenTable` (a named constant: lookups from it carry no gradient and it never changes).

- ``new``: a Xavier-uniform table drawn from a ``SplitMix64`` (:func:`drawn_table`), with the
  padding row, if any, set to zeros after the whole table is drawn, so every other row is the
  one a layer without padding draws;
- ``from_parameter``: an existing named parameter, the same leaf (:func:`checked_parameter_size`);
- ``from_pretrained``: a 2-D NumPy array, a ``Tensor`` or a named parameter, copied into a new
  parameter leaf or frozen into a constant (:class:`PretrainedSource`).

:func:`new_table` and :func:`pretrained_table` run the checks of ``new`` and ``from_pretrained``
in the order both layers promise, with the layer's own options built in between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import constant_from_owned_array, parameter_from_owned_array
from llm_from_scratch.errors import AllocationError, NonFiniteError, TableError
from llm_from_scratch.nn.embedding_errors import (
    EmbeddingInitializationError,
    EmptyVocabularyError,
    PretrainedTableTypeError,
    ZeroEmbeddingWidthError,
)
from llm_from_scratch.nn.init import (
    InitializationError,
    NamedParameter,
    Seed,
    ZeroFanInError,
    ZeroFanOutError,
    validate_parameter_name,
    xavier_scale,
    xavier_uniform_array,
)
from llm_from_scratch.nn.options import checked_flag
from llm_from_scratch.tensor.storage import FloatArray, Tensor, is_masked_array, plain_view

TABLE_NAME: Final = "token_embedding.weight"
"""The name a layer's table gets unless it is given one (the course's)."""


@dataclass(frozen=True, eq=False, repr=False)
class FrozenTable:
    """A named ``[V, d]`` table that never changes: ``tensor`` is a constant leaf.

    Lookups from it are constants (they carry no gradient), and no optimizer, checkpoint load or
    ``max_norm`` ever writes it: with ``max_norm`` a lookup returns the renormalized rows and the
    table stays as it is. ``Embedding.from_pretrained(..., freeze=True)`` builds one.

    Args:
        name: a valid parameter name (checked, like a :class:`NamedParameter`'s).
        tensor: a rank-two constant ``TensorValue`` of finite values (a frozen table holds
            what a parameter can hold, as ``from_pretrained`` checks it).

    Raises:
        ParameterNameError, ParameterNameTypeError: the name.
        TypeError: ``tensor`` is not a rank-two constant ``TensorValue``.
        NonFiniteParameterError: a NaN or infinity in ``tensor``, the first in flat order.

    Unpickling and ``copy.copy`` rebuild through this constructor, so a crafted pickle meets
    the same checks.
    """

    name: str
    tensor: TensorValue

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", validate_parameter_name(self.name))
        tensor = self.tensor
        if not (isinstance(tensor, TensorValue) and tensor.kind == "constant"):
            raise TypeError(f"a FrozenTable holds a constant TensorValue, got {tensor!r}")
        if len(tensor.shape) != 2:
            raise TypeError(f"a FrozenTable holds a rank-two table, got shape {tensor.shape}")
        found = first_non_finite(tensor.numpy())
        if found is not None:
            raise NonFiniteError("parameter.non-finite", value=found[1], position=found[0])

    def __repr__(self) -> str:
        return f"FrozenTable(name={self.name!r}, shape={self.tensor.shape})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle through the constructor, so an unpickled table is checked."""
        return FrozenTable, (self.name, self.tensor)

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenTable:
        return self  # a constant never changes: sharing it is copying it


Table: TypeAlias = "NamedParameter | FrozenTable"


class _TableOptions(Protocol):
    @property
    def padding_idx(self) -> int | None: ...


_O = TypeVar("_O", bound=_TableOptions)


def checked_sizes(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(V, d)`` of a table shape.

    Raises:
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: in this order.
    """
    if len(shape) != 2:
        raise TableError("table.rank", rank=len(shape))
    if shape[0] == 0:
        raise EmptyVocabularyError()
    if shape[1] == 0:
        raise ZeroEmbeddingWidthError()
    return shape[0], shape[1]


def checked_parameter_size(table: object) -> tuple[int, int]:
    """``(V, d)`` of a named parameter a layer can wrap.

    Raises:
        TypeError: ``table`` is not a NamedParameter.
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: in this order.
    """
    if not isinstance(table, NamedParameter):
        raise TypeError(f"from_parameter needs a NamedParameter, got {type(table).__name__}")
    return checked_sizes(table.tensor.shape)


def checked_name_and_sizes(
    name: object, vocabulary_size: object, width: object
) -> tuple[str, int, int]:
    """The name, then ``V`` and ``d`` of a table to draw, read once each.

    Raises:
        EmbeddingInitializationError: a bad name, or a fan that is not a non-negative integer.
        EmptyVocabularyError, ZeroEmbeddingWidthError: ``V == 0``, ``d == 0``.
    """
    try:
        checked = validate_parameter_name(name)
        scale = xavier_scale(vocabulary_size, width)  # type: ignore[arg-type]
    except ZeroFanInError as error:
        raise EmptyVocabularyError() from error
    except ZeroFanOutError as error:
        raise ZeroEmbeddingWidthError() from error
    except InitializationError as error:
        raise EmbeddingInitializationError(error) from error
    return checked, scale.fan_in, scale.fan_out


def drawn_table(
    name: str,
    vocabulary_size: int,
    width: int,
    rng: Seed,
    dtype: npt.DTypeLike,
    padding_row: int | None,
) -> NamedParameter:
    """A Xavier-uniform parameter from checked sizes; its padding row, if any, is zeroed after
    the whole table is drawn. ``rng`` advances only on success.

    Raises:
        EmbeddingInitializationError: the generator or the dtype, or no memory for the table.
    """
    try:
        values = xavier_uniform_array(vocabulary_size, width, rng, dtype)
    except InitializationError as error:
        raise EmbeddingInitializationError(error) from error
    if padding_row is not None:
        values[padding_row] = 0.0
    return NamedParameter.from_value(name, parameter_from_owned_array(values))


def new_table(
    name: str,
    vocabulary_size: int,
    embedding_width: int,
    rng: Seed,
    dtype: npt.DTypeLike,
    options_for: Callable[[int], _O],
) -> tuple[NamedParameter, _O]:
    """The table and options of a layer's ``new``, checked in this order: the name and the
    sizes, then the options; then the table is drawn (:func:`drawn_table`, the padding row
    zeroed). ``rng`` advances only on success.

    Args:
        name, vocabulary_size, embedding_width, rng, dtype: as the layer's ``new`` takes them.
        options_for: builds the layer's checked options for a table of ``V`` rows.

    Shape:
        the table: ``[vocabulary_size, embedding_width]``.

    Raises:
        EmbeddingInitializationError: a bad name or fan (see :func:`checked_name_and_sizes`).
        EmptyVocabularyError, ZeroEmbeddingWidthError: ``V == 0``, ``d == 0``.
        The errors of ``options_for``.
        EmbeddingInitializationError: the generator or the dtype, or no memory for the table.
    """
    checked, rows, width = checked_name_and_sizes(name, vocabulary_size, embedding_width)
    options = options_for(rows)
    return drawn_table(checked, rows, width, rng, dtype, options.padding_idx), options


def pretrained_table(
    table: object, name: str, freeze: bool, options_for: Callable[[int], _O]
) -> tuple[Table, _O]:
    """The table and options of a layer's ``from_pretrained``, checked in this order: the
    table's type and shape, the name, the options, ``freeze``, and last the table's values
    (:meth:`PretrainedSource.table`).

    Args:
        table, name, freeze: as the layer's ``from_pretrained`` takes them.
        options_for: builds the layer's checked options for a table of ``V`` rows.

    Raises:
        PretrainedTableTypeError, TableRankError, EmptyVocabularyError,
            ZeroEmbeddingWidthError: the table (see :func:`pretrained_source`).
        EmbeddingInitializationError: a bad name (``__cause__`` is the name error).
        The errors of ``options_for``, then OptionTypeError for ``freeze``.
        OutputAllocationError: the copy of an array or ``Tensor`` cannot be allocated.
        NonFiniteParameterError: a NaN or infinity in a copied table.
    """
    source = pretrained_source(table)
    checked, _, _ = checked_name_and_sizes(name, *source.shape)
    options = options_for(source.shape[0])
    frozen = checked_flag("freeze", freeze)
    return source.table(checked, frozen), options


@dataclass(frozen=True)
class PretrainedSource:
    """A table given to ``from_pretrained``, taken apart without reading or copying a value.

    Build it with :func:`pretrained_source`; :meth:`table` makes the layer's table.
    """

    shape: tuple[int, int]
    array: FloatArray | None
    parameter: NamedParameter | None
    dtype: np.dtype[Any]

    def table(self, name: str, freeze: bool) -> Table:
        """The layer's table named ``name``: a constant copy (``freeze``), or the given
        parameter's own leaf, or a new parameter leaf holding a copy.

        Raises:
            OutputAllocationError: the copy cannot be allocated (``leaf copy``), for example a
                stride-0 view whose logical size no array can hold; nothing was copied.
            NonFiniteParameterError: a NaN or infinity in a copied array, the first in flat
                order.
        """
        if self.parameter is not None:
            if not freeze:
                return NamedParameter.from_value(name, self.parameter.tensor)
            snapshot = self.parameter.tensor.value_snapshot().numpy()  # finite, one revision
            return FrozenTable(name, constant_from_owned_array(snapshot))
        assert self.array is not None  # one of the two is set by pretrained_source
        try:
            values = np.array(self.array, dtype=self.dtype, order="C", copy=True)
        except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
            elements = self.shape[0] * self.shape[1]
            raise AllocationError(
                "output.allocation", elements=elements, operation="leaf copy"
            ) from error
        if freeze:  # the frozen table checks its values itself
            return FrozenTable(name, constant_from_owned_array(values))
        found = first_non_finite(values)
        if found is not None:
            raise NonFiniteError("parameter.non-finite", value=found[1], position=found[0])
        return NamedParameter.from_value(name, parameter_from_owned_array(values))


def pretrained_source(table: object) -> PretrainedSource:
    """Check a ``from_pretrained`` table's type, dtype and shape.

    An ndarray subclass is read through its plain data (a masked array is refused); float32 and
    float64 arrays keep their dtype, integer arrays become float64.

    Raises:
        PretrainedTableTypeError: not a NumPy array of float32, float64 or integers, a Tensor
            or a NamedParameter.
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: in this order.
    """
    if isinstance(table, NamedParameter):
        shape = checked_sizes(table.tensor.shape)
        return PretrainedSource(shape, None, table, table.tensor.dtype)
    if isinstance(table, Tensor):
        array = table.numpy()
    elif isinstance(table, np.ndarray) and not is_masked_array(table):
        array = plain_view(table)
    else:
        raise PretrainedTableTypeError(qualified_type_name(table))
    dtype = _kept_dtype(array)
    shape = checked_sizes(tuple(int(extent) for extent in array.shape))
    return PretrainedSource(shape, array, None, dtype)


def qualified_type_name(value: object) -> str:
    """``list`` for a built-in type, ``torch.Tensor`` for another library's (its module's top
    name and its own name), so that a ``torch.Tensor`` is not mistaken for a ``Tensor``.

    Example:
        >>> qualified_type_name([1]), qualified_type_name(np.zeros(1))
        ('list', 'numpy.ndarray')
    """
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"


def _kept_dtype(array: np.ndarray[Any, Any]) -> np.dtype[Any]:
    if array.dtype.kind == "f" and array.dtype.itemsize in (4, 8):
        return np.dtype(f"f{array.dtype.itemsize}")  # native byte order
    if array.dtype.kind in "iu":
        return np.dtype(np.float64)
    raise PretrainedTableTypeError(f"ndarray of dtype {array.dtype}")
