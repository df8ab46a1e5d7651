"""The errors of :mod:`llm_from_scratch.nn.checkpoint`: one family, ``CheckpointError``.

Every error about a file names it (``path``); an error about one tensor also names the tensor
(``name``, its key in the file).
"""

from __future__ import annotations

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.nn.init import ParameterNameError
from llm_from_scratch.tensor.storage import Shape


class CheckpointError(StructuredError):
    """Base class of every error raised by :mod:`llm_from_scratch.nn.checkpoint`."""


# Arguments --------------------------------------------------------------------------------------


class CheckpointPathTypeError(CheckpointError, TypeError):
    """A path that is neither a ``str`` nor an ``os.PathLike`` of ``str``."""

    template = "a checkpoint path must be a str or an os.PathLike of str, got {path_type}"
    path_type: str


class LoadDtypeError(CheckpointError, TypeError):
    """A ``dtype`` argument other than None, float32 or float64."""

    template = (
        "checkpoint {path}: dtype must be None, numpy.float32 or numpy.float64, got {dtype!r}"
    )
    path: str
    dtype: object


class TensorNamesTypeError(CheckpointError, TypeError):
    """A ``names`` argument that is not an iterable of ``str`` (a single ``str`` included)."""

    template = "checkpoint {path}: names must be an iterable of str, got {detail}"
    path: str
    detail: str


class MetadataTypeError(CheckpointError, TypeError):
    """A ``metadata`` argument that is not a ``dict`` of ``str`` to ``str``."""

    template = "checkpoint {path}: metadata must be a dict of str to str: {detail}"
    path: str
    detail: str


# The file ---------------------------------------------------------------------------------------


class CheckpointReadError(CheckpointError, OSError):
    """The file cannot be opened or read (missing, a directory, no permission, an I/O error)."""

    template = "cannot read checkpoint {path}: {cause}"
    path: str
    cause: OSError


class CheckpointWriteError(CheckpointError, OSError):
    """The new file cannot be written, flushed to disk or renamed into place."""

    template = "cannot write checkpoint {path}: {cause}; any earlier file there is unchanged"
    path: str
    cause: OSError


class TruncatedCheckpointError(CheckpointError, ValueError):
    """A file shorter than its header says it is (or than the 8-byte header length)."""

    template = "checkpoint {path} is truncated: {expected} bytes expected, {actual} found"
    path: str
    expected: int
    actual: int


class TrailingDataError(CheckpointError, ValueError):
    """A file longer than its header accounts for."""

    template = (
        "checkpoint {path}: the header accounts for {expected} bytes, but the file has {actual}"
    )
    path: str
    expected: int
    actual: int


# The header -------------------------------------------------------------------------------------


class HeaderSizeError(CheckpointError, ValueError):
    """A header length above the format's limit (a file that is not safetensors, usually)."""

    template = (
        "checkpoint {path}: header length {length} exceeds the safetensors limit of {limit} bytes"
    )
    path: str
    length: int
    limit: int


class HeaderJsonError(CheckpointError, ValueError):
    """A header that is not UTF-8 JSON text of one object."""

    template = "checkpoint {path}: the header is not a safetensors JSON object: {detail}"
    path: str
    detail: str


class DuplicateTensorKeyError(CheckpointError, ValueError):
    """A tensor key that the header lists twice."""

    template = "checkpoint {path}: the header lists tensor {name!r} twice"
    path: str
    name: str


class MetadataFormatError(CheckpointError, ValueError):
    """A ``__metadata__`` entry that is not an object of strings."""

    template = "checkpoint {path}: __metadata__ must map strings to strings: {detail}"
    path: str
    detail: str


class TensorEntryError(CheckpointError, ValueError):
    """A tensor entry without a known ``dtype``, a valid ``shape`` or two ``data_offsets``."""

    template = "checkpoint {path}: tensor {name!r}: {detail}"
    path: str
    name: str
    detail: str


class TensorSizeMismatchError(CheckpointError, ValueError):
    """A tensor whose offsets span another byte count than its shape and dtype need."""

    template = (
        "checkpoint {path}: tensor {name!r} of dtype {dtype} and shape {shape} needs {expected} "
        "bytes, but its data offsets span {actual}"
    )
    path: str
    name: str
    dtype: str
    shape: Shape
    expected: int
    actual: int


class TensorOffsetsError(CheckpointError, ValueError):
    """A tensor that leaves a gap after, or overlaps, the data before it (in offset order)."""

    template = (
        "checkpoint {path}: tensor {name!r} occupies data bytes [{begin}, {end}), but the data "
        "before it ends at byte {expected}"
    )
    path: str
    name: str
    begin: int
    end: int
    expected: int


# The tensors to load ----------------------------------------------------------------------------


class MissingTensorsError(CheckpointError, ValueError):
    """Names asked for with ``names=`` that the file does not hold (all of them, in order)."""

    template = "checkpoint {path} has no tensors named {names}"
    path: str
    names: tuple[str, ...]


class TensorNameError(CheckpointError, ValueError):
    """A tensor key to load that breaks the parameter-name rules; ``cause`` says where."""

    template = "checkpoint {path}: tensor key {name!r} is not a parameter name: {cause}"
    path: str
    name: str
    cause: ParameterNameError


class UnsupportedDtypeError(CheckpointError, ValueError):
    """A tensor to load whose dtype is not a float parameters can hold (I64, BOOL, F8, ...)."""

    template = (
        "checkpoint {path}: tensor {name!r} has dtype {dtype}; parameters load from F32, F64, "
        "F16 or BF16 (leave it out with names=)"
    )
    path: str
    name: str
    dtype: str


class ConversionRequiredError(CheckpointError, ValueError):
    """An F16 or BF16 tensor to load without ``dtype=``."""

    template = (
        "checkpoint {path}: tensor {name!r} is {dtype}; pass dtype=numpy.float32 or "
        "numpy.float64 to convert it"
    )
    path: str
    name: str
    dtype: str


class ParameterSetMismatchError(CheckpointError, ValueError):
    """``into=`` parameters whose names differ from the tensors to load."""

    template = (
        "checkpoint {path} does not match the parameters: missing {missing}, "
        "unexpected {unexpected}"
    )
    path: str
    missing: tuple[str, ...]
    unexpected: tuple[str, ...]


class ParameterShapeMismatchError(CheckpointError, ValueError):
    """A tensor whose shape differs from the ``into=`` parameter of its name."""

    template = (
        "checkpoint {path}: tensor {name!r} has shape {actual}, but the parameter has {expected}"
    )
    path: str
    name: str
    expected: Shape
    actual: Shape


class ParameterDtypeMismatchError(CheckpointError, TypeError):
    """A tensor that loads as another dtype than the ``into=`` parameter of its name."""

    template = (
        "checkpoint {path}: tensor {name!r} loads as {actual}, but the parameter is {expected}"
    )
    path: str
    name: str
    expected: str
    actual: str


class CheckpointAllocationError(CheckpointError, MemoryError):
    """The array for a tensor cannot be allocated."""

    template = "checkpoint {path}: could not allocate {elements} values for tensor {name!r}"
    path: str
    name: str
    elements: int


class NonFiniteValueError(CheckpointError, ValueError):
    """A NaN or infinity in a tensor to save or load (after any dtype conversion)."""

    template = (
        "checkpoint {path}: tensor {name!r} has non-finite value {value} at flat position "
        "{position}"
    )
    path: str
    name: str
    position: int
    value: float
