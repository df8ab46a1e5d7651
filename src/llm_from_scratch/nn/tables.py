"""The tables the embedding layers own, a :class:`~llm_from_scratch.nn.init.NamedParameter` or
a :class:`FrozenTable` (a named constant), and how ``new`` and ``from_pretrained`` build them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import constant_from_owned_array, parameter_from_owned_array
from llm_from_scratch.errors import AllocationError, NonFiniteError, TableError
from llm_from_scratch.nn.init import (
    NamedParameter,
    Seed,
    XavierScale,
    validate_parameter_name,
    xavier_uniform_array,
)
from llm_from_scratch.nn.options import BagOptions, LookupOptions, checked_flag
from llm_from_scratch.tensor.storage import FloatArray, Tensor, is_masked_array, plain_view

TABLE_NAME: Final = "token_embedding.weight"  # a layer's table's name unless given one


@dataclass(frozen=True, eq=False, repr=False)
class FrozenTable:
    """A named ``[V, d]`` table that never changes: lookups from it are constants, and no
    optimizer, checkpoint load or ``max_norm`` writes it (pickles rebuild through this class).

    Args:
        name: a valid parameter name (else its ``TableError``).
        tensor: a rank-two constant ``TensorValue`` (else ``TypeError``) of finite values (else
            ``parameter.non-finite`` at the first NaN or infinity).
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
        check_finite(tensor.numpy())

    def __repr__(self) -> str:
        return f"FrozenTable(name={self.name!r}, shape={self.tensor.shape})"

    def __reduce__(self) -> tuple[Any, ...]:
        return FrozenTable, (self.name, self.tensor)

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenTable:
        return self  # a constant never changes: sharing it is copying it


Table: TypeAlias = "NamedParameter | FrozenTable"
Options: TypeAlias = "LookupOptions | BagOptions"


def check_finite(values: FloatArray) -> None:
    """Raise ``parameter.non-finite`` at the first NaN or infinity of ``values``, in flat order."""
    found = first_non_finite(values)
    if found is not None:
        raise NonFiniteError("parameter.non-finite", value=found[1], position=found[0])


def checked_sizes(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(V, d)`` of a table shape (``table.rank``, ``.empty-vocabulary``, ``.zero-width``)."""
    if len(shape) != 2:
        raise TableError("table.rank", rank=len(shape))
    if shape[0] == 0:
        raise TableError("table.empty-vocabulary", vocabulary_size=0)
    if shape[1] == 0:
        raise TableError("table.zero-width", embedding_width=0)
    return shape[0], shape[1]


def checked_parameter_size(table: object) -> tuple[int, int]:
    """``(V, d)`` of a named parameter a layer can wrap (``TypeError`` for anything else)."""
    if not isinstance(table, NamedParameter):
        raise TypeError(f"from_parameter needs a NamedParameter, got {type(table).__name__}")
    return checked_sizes(table.tensor.shape)


def checked_name_and_sizes(name: object, rows: object, width: object) -> tuple[str, int, int]:
    """The name, ``V`` and ``d`` of a table, read once each: ``table.empty-vocabulary``,
    ``.zero-width``, or ``.initialization`` (the name's or the fan's error as cause)."""
    try:
        checked = validate_parameter_name(name)
        scale = XavierScale(rows, width)  # type: ignore[arg-type]
    except TableError as error:
        if error.rule == "fan.zero-in":
            raise TableError("table.empty-vocabulary", vocabulary_size=0) from error
        if error.rule == "fan.zero-out":
            raise TableError("table.zero-width", embedding_width=0) from error
        raise TableError("table.initialization", cause=error) from error
    return checked, scale.fan_in, scale.fan_out


def new_table(
    name: str,
    vocabulary_size: int,
    embedding_width: int,
    rng: Seed,
    dtype: npt.DTypeLike,
    options_for: Callable[[int], Options],
) -> tuple[NamedParameter, Options]:
    """The table and options of a layer's ``new``, checked and drawn as ``Embedding.new`` says."""
    checked, rows, width = checked_name_and_sizes(name, vocabulary_size, embedding_width)
    options = options_for(rows)
    try:
        values = xavier_uniform_array(rows, width, rng, dtype)
    except TableError as error:
        raise TableError("table.initialization", cause=error) from error
    if options.padding_idx is not None:
        values[options.padding_idx] = 0.0
    return NamedParameter(checked, parameter_from_owned_array(values)), options


def pretrained_table(
    table: object, name: str, freeze: bool, options_for: Callable[[int], Options]
) -> tuple[Table, Options]:
    """The table and options of a layer's ``from_pretrained``, checked as it says."""
    source = table if isinstance(table, NamedParameter) else _pretrained_array(table)
    rows, width = checked_sizes(
        source.tensor.shape if isinstance(source, NamedParameter) else source.shape
    )
    checked, _, _ = checked_name_and_sizes(name, rows, width)
    options = options_for(rows)
    frozen = checked_flag("freeze", freeze)
    if isinstance(source, NamedParameter):
        if not frozen:
            return NamedParameter(checked, source.tensor), options
        values = source.tensor.value_snapshot().numpy()  # finite, of one revision
    else:
        values = _copy(source)
        if not frozen:
            check_finite(values)
            return NamedParameter(checked, parameter_from_owned_array(values)), options
    return FrozenTable(checked, constant_from_owned_array(values)), options


def _pretrained_array(table: object) -> np.ndarray[Any, Any]:
    """The plain values of a ``Tensor`` or a NumPy array of float32, float64 or integers."""
    if isinstance(table, Tensor):
        return table.numpy()
    if not isinstance(table, np.ndarray) or is_masked_array(table):
        raise TableError("table.pretrained-type", table_type=qualified_type_name(table))
    array = plain_view(table)
    kind, size = array.dtype.kind, array.dtype.itemsize
    if not (kind in "iu" or (kind == "f" and size in (4, 8))):
        raise TableError("table.pretrained-type", table_type=f"ndarray of dtype {array.dtype}")
    return array


def _copy(array: np.ndarray[Any, Any]) -> FloatArray:
    """A new C-ordered copy in native byte order (an integer table becomes float64)."""
    dtype = np.dtype(f"f{array.dtype.itemsize}") if array.dtype.kind == "f" else np.float64
    try:
        return np.array(array, dtype=dtype, order="C", copy=True)
    except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
        elements = int(array.shape[0]) * int(array.shape[1])
        raise AllocationError(
            "output.allocation", elements=elements, operation="leaf copy"
        ) from error


def qualified_type_name(value: object) -> str:
    """``list`` for a built-in type, ``numpy.ndarray`` or ``torch.Tensor`` for another library's."""
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
