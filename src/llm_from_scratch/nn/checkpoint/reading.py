"""Loading named parameters, or any named arrays, from a safetensors file.

The reader checks the whole header (see :mod:`~llm_from_scratch.nn.checkpoint.header`) and
every tensor to load before it allocates anything, then reads each tensor's bytes straight into
the NumPy array that becomes its parameter (``readinto``, no intermediate copy of the file), so
loading peaks at about the loaded tensors' bytes. A conversion from F16 or BF16 goes through a
small reused buffer of 2**20 elements. :func:`load_arrays` reads every tensor of a file as it
is stored, for the package's other files (optimizer state).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from llm_from_scratch.autograd.value import parameter_from_owned_array, update_leaves_in_place
from llm_from_scratch.nn.checkpoint.errors import (
    CheckpointAllocationError,
    ConversionRequiredError,
    LoadDtypeError,
    MissingTensorsError,
    NonFiniteValueError,
    ParameterDtypeMismatchError,
    ParameterSetMismatchError,
    ParameterShapeMismatchError,
    TensorEntryError,
    TensorNameError,
    TensorNamesTypeError,
    UnsupportedDtypeError,
)
from llm_from_scratch.nn.checkpoint.files import (
    checked_path,
    file_size,
    opened_for_reading,
    read_bytes,
    read_exactly,
)
from llm_from_scratch.nn.checkpoint.header import (
    LENGTH_BYTES,
    NUMPY_DTYPES,
    Header,
    TensorRecord,
    decode_header,
    header_length,
)
from llm_from_scratch.nn.checkpoint.values import CHUNK, convert_into, first_non_finite
from llm_from_scratch.nn.init import (
    NamedParameter,
    NamedParameters,
    ParameterNameError,
    validate_parameter_name,
)
from llm_from_scratch.tensor.storage import SUPPORTED_DTYPES, FloatArray

if TYPE_CHECKING:
    import numpy.typing as npt

STORED_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # the top 16 bits of a float32, read as raw bits
}
"""The dtype codes a parameter loads from, with the NumPy dtype of their bytes in the file."""

CONVERTED: Final = frozenset({"F16", "BF16"})
"""The codes that load only with an explicit ``dtype=``."""


@dataclass(frozen=True)
class PlannedTensor:
    """A tensor to load: its header record, its dtype in the file and the dtype it loads as."""

    record: TensorRecord
    stored: np.dtype[Any]
    loaded: np.dtype[Any]


def load_parameters(
    path: str | os.PathLike[str],
    *,
    into: Iterable[NamedParameter] | None = None,
    dtype: npt.DTypeLike | None = None,
    names: Iterable[str] | None = None,
) -> NamedParameters:
    """Load named parameters from a safetensors file.

    Each tensor key is a parameter name (it must follow the name rules). F32 and F64 tensors
    load as they are; F16 and BF16 tensors load only with ``dtype=numpy.float32`` or
    ``numpy.float64`` (the conversion is exact). Other dtypes (I64, BOOL, F8, ...) cannot be
    parameters: leave them out with ``names=``. Every value must be finite.

    Nothing is allocated or changed before the whole header and every tensor to load have been
    checked, and with ``into`` no parameter changes unless every tensor has been read.

    Args:
        path: the file (a ``str`` or ``os.PathLike``).
        into: parameters to load into, in place, instead of building new ones. Their names
            must be exactly the names of the tensors to load, and each must have its tensor's
            shape and dtype (after conversion). Each one's value revision is bumped, so a graph
            recorded before the load refuses to run backward; gradients are kept.
        dtype: ``None`` (each tensor keeps its F32 or F64 dtype), ``numpy.float32`` or
            ``numpy.float64`` (every tensor converts to it).
        names: load only these tensors (in file order), for example one table from a model
            file that also holds integer tensors. ``None`` loads every tensor.

    Returns:
        With ``into``: the same parameters. Without it: new parameter leaves in file order
        (the order of the tensors' data offsets).

    Raises:
        CheckpointPathTypeError, LoadDtypeError, TensorNamesTypeError: a bad argument; for
            ``into``, the errors of :class:`NamedParameters`.
        CheckpointReadError: the file cannot be opened or read.
        CheckpointError: a subclass for a file that breaks the format or cannot be loaded, in
            the order listed in ``docs/errors.md``.

    Example:
        >>> import pathlib, tempfile
        >>> from llm_from_scratch.nn import Embedding, SplitMix64, save_parameters
        >>> layer = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "table.safetensors"
        ...     save_parameters(path, layer.parameters())
        ...     loaded = load_parameters(path)
        >>> loaded.names()
        ('token_embedding.weight',)
        >>> loaded["token_embedding.weight"].tensor.value.equals(layer.table.tensor.value)
        True
    """
    file_name = checked_path(path)
    target = _checked_dtype(file_name, dtype)
    wanted = _checked_names(file_name, names)
    receivers = None if into is None else NamedParameters(into)
    with opened_for_reading(file_name) as file:
        header = read_header(file_name, file)
        plan = _planned(file_name, header, wanted, target)
        if receivers is not None:
            _check_receivers(file_name, plan, receivers)
        arrays = [_read_tensor(file_name, file, header.data_start, item) for item in plan]
    if receivers is None:
        return NamedParameters(
            NamedParameter.from_value(item.record.name, parameter_from_owned_array(array))
            for item, array in zip(plan, arrays, strict=True)
        )
    _write_into(receivers, plan, arrays)
    return receivers


def load_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors file (empty if it has none); the whole header is
    checked as :func:`load_parameters` checks it.

    Raises:
        CheckpointPathTypeError, CheckpointReadError, CheckpointError: as
            :func:`load_parameters`.
    """
    file_name = checked_path(path)
    with opened_for_reading(file_name) as file:
        return dict(read_header(file_name, file).metadata)


def load_arrays(path: str, accept: Callable[[Header], None]) -> dict[str, np.ndarray[Any, Any]]:
    """Every tensor of a safetensors file as a new array of its stored dtype (in the machine's
    byte order) and shape (0-d for ``[]``), by key in file order (package-internal: the public
    functions check their arguments, then call this).

    The values are read as they are: no name rule and no finiteness check applies (the caller
    checks what it loads). ``accept`` gets the checked header before anything is allocated
    and raises to refuse the file, for example for a tensor it does not expect.

    Raises:
        CheckpointReadError: the file cannot be opened or read.
        CheckpointError: a subclass for a file that breaks the format, as for
            :func:`load_parameters`; :class:`UnsupportedDtypeError` for a tensor whose dtype
            NumPy cannot hold (BF16, the 8-, 6- and 4-bit floats) that ``accept`` let through.
        Any error ``accept`` raises.
    """
    with opened_for_reading(path) as file:
        header = read_header(path, file)
        accept(header)
        plan = [_planned_array(path, record) for record in header.tensors]
        return {item.record.name: _read_array(path, file, header.data_start, item) for item in plan}


def read_header(path: str, file: io.FileIO) -> Header:
    """Read and check the header of the open file."""
    size = file_size(path, file)
    length = header_length(path, read_bytes(path, file, 0, min(LENGTH_BYTES, size)), size)
    return decode_header(path, read_bytes(path, file, LENGTH_BYTES, length), size)


def _checked_dtype(path: str, dtype: object) -> np.dtype[Any] | None:
    if dtype is None:
        return None
    try:
        resolved: np.dtype[Any] = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError as error:
        raise LoadDtypeError(path, dtype) from error
    if resolved not in SUPPORTED_DTYPES:
        raise LoadDtypeError(path, dtype)
    return resolved


def _checked_names(path: str, names: object) -> tuple[str, ...] | None:
    if names is None:
        return None
    if isinstance(names, str | bytes) or not isinstance(names, Iterable):
        raise TensorNamesTypeError(path, f"a {type(names).__name__}")
    checked = tuple(names)
    for position, name in enumerate(checked):
        if not isinstance(name, str):
            raise TensorNamesTypeError(path, f"a {type(name).__name__} at position {position}")
    return tuple(dict.fromkeys(checked))


def _planned(
    path: str, header: Header, wanted: tuple[str, ...] | None, target: np.dtype[Any] | None
) -> list[PlannedTensor]:
    records = header.tensors
    if wanted is not None:
        present = {record.name for record in records}
        missing = tuple(name for name in wanted if name not in present)
        if missing:
            raise MissingTensorsError(path, missing)
        records = tuple(record for record in records if record.name in set(wanted))
    return [_planned_tensor(path, record, target) for record in records]


def _planned_tensor(path: str, record: TensorRecord, target: np.dtype[Any] | None) -> PlannedTensor:
    try:
        validate_parameter_name(record.name)
    except ParameterNameError as error:
        raise TensorNameError(path, record.name, error) from error
    stored = STORED_DTYPES.get(record.dtype)
    if stored is None:
        raise UnsupportedDtypeError(path, record.name, record.dtype)
    if target is None and record.dtype in CONVERTED:
        raise ConversionRequiredError(path, record.name, record.dtype)
    loaded = target if target is not None else stored.newbyteorder("=")
    return PlannedTensor(record, stored, loaded)


def _planned_array(path: str, record: TensorRecord) -> PlannedTensor:
    stored = NUMPY_DTYPES.get(record.dtype)
    if stored is None:
        raise UnsupportedDtypeError(path, record.name, record.dtype)
    return PlannedTensor(record, stored, stored.newbyteorder("="))


def _check_receivers(path: str, plan: list[PlannedTensor], receivers: NamedParameters) -> None:
    loading = [item.record.name for item in plan]
    missing = tuple(name for name in receivers.names() if name not in set(loading))
    unexpected = tuple(name for name in loading if name not in receivers)
    if missing or unexpected:
        raise ParameterSetMismatchError(path, missing, unexpected)
    for item in plan:
        name, leaf = item.record.name, receivers[item.record.name].tensor
        if leaf.shape != item.record.shape:
            raise ParameterShapeMismatchError(path, name, leaf.shape, item.record.shape)
        if leaf.dtype != item.loaded:
            raise ParameterDtypeMismatchError(path, name, str(leaf.dtype), str(item.loaded))


def _read_tensor(path: str, file: io.FileIO, data_start: int, item: PlannedTensor) -> FloatArray:
    """The tensor's values in a new array, checked to be finite."""
    array = _read_array(path, file, data_start, item)
    found = first_non_finite(array)
    if found is not None:
        raise NonFiniteValueError(path, item.record.name, found[0], found[1])
    return array


def _read_array(
    path: str, file: io.FileIO, data_start: int, item: PlannedTensor
) -> np.ndarray[Any, Any]:
    """The tensor's values in a new array, read straight into it when no conversion is due."""
    record = item.record
    array = _allocated(path, record, item.loaded)
    flat = array.reshape(-1)  # a view of the new array
    offset = data_start + record.begin
    if item.stored == item.loaded:
        read_exactly(path, file, offset, flat.view(np.uint8).data)
    else:
        _read_converted(path, file, offset, item, flat)
    return array


def _allocated(path: str, record: TensorRecord, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    try:
        return np.empty(record.shape, dtype=dtype)
    except MemoryError as error:
        raise CheckpointAllocationError(path, record.name, record.element_count) from error
    except ValueError as error:  # NumPy's rank limit, or a byte count beyond 64 bits
        raise TensorEntryError(path, record.name, f"NumPy cannot hold it: {error}") from error


def _read_converted(
    path: str, file: io.FileIO, offset: int, item: PlannedTensor, flat: np.ndarray[Any, Any]
) -> None:
    buffer = np.empty(min(CHUNK, flat.size), dtype=item.stored)
    for start in range(0, flat.size, CHUNK):
        stop = min(start + CHUNK, flat.size)
        stored = buffer[: stop - start]
        position = offset + start * item.stored.itemsize
        read_exactly(path, file, position, stored.view(np.uint8).data)
        convert_into(item.record.dtype, stored, flat[start:stop])


def _write_into(
    receivers: NamedParameters, plan: list[PlannedTensor], arrays: list[FloatArray]
) -> None:
    """Write every loaded array into its parameter in place, as one step that holds every
    parameter's update lock: a backward commit, ``zero_grad`` or optimizer step on another
    thread sees all the loaded values or none (each revision is bumped)."""
    leaves = [receivers[item.record.name].tensor for item in plan]

    def planned() -> list[Callable[[FloatArray], None]]:
        return [partial(_overwrite, new=array) for array in arrays]

    update_leaves_in_place(leaves, planned)


def _overwrite(values: FloatArray, new: FloatArray) -> None:
    values[...] = new
