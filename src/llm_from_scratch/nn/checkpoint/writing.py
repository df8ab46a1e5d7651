"""Saving named parameters, or any named arrays, to a safetensors file.

The writer streams each array's bytes from the array itself into the file (no copy of the
table), after the header that :func:`~llm_from_scratch.nn.checkpoint.header.encode_header`
builds, through :func:`~llm_from_scratch.nn.checkpoint.files.replace_atomically`.
:func:`save_parameters` checks its arguments and hands the parameters' arrays to
:func:`write_arrays`, which the package's other files (optimizer state) use too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from llm_from_scratch.nn.checkpoint.errors import (
    HeaderSizeError,
    MetadataTypeError,
    NonFiniteValueError,
)
from llm_from_scratch.nn.checkpoint.files import checked_path, replace_atomically
from llm_from_scratch.nn.checkpoint.header import (
    HEADER_LIMIT,
    LENGTH_BYTES,
    dtype_code,
    encode_header,
)
from llm_from_scratch.nn.checkpoint.values import first_non_finite
from llm_from_scratch.nn.init import NamedParameter, NamedParameters


def save_parameters(
    path: str | os.PathLike[str],
    parameters: Iterable[NamedParameter],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save named parameters as one safetensors file: keys are the names, dtypes are kept.

    The float64 tensors come first, then the float32 ones, each in the order of
    ``parameters``; :func:`load_parameters` gives them back in that order. The file is written
    to a temporary file in the same folder, flushed to disk and renamed over ``path``: if
    anything fails (a full disk, a crash), an earlier file at ``path`` is as it was and no
    temporary file is left.

    Args:
        path: the file (a ``str`` or ``os.PathLike``); its folder must exist.
        parameters: a :class:`NamedParameters` or an iterable of :class:`NamedParameter`.
        metadata: text stored in the header's ``__metadata__``, a mapping of ``str`` to ``str``.

    Raises:
        CheckpointPathTypeError: ``path`` is not a path.
        ParameterCollectionTypeError, NotANamedParameterError, DuplicateParameterNameError:
            ``parameters`` is not a valid collection.
        MetadataTypeError: ``metadata`` is not a mapping of ``str`` to ``str``.
        NonFiniteValueError: a parameter holds a NaN or an infinity (a file no load accepts).
        HeaderSizeError: the header would exceed the format's limit.
        CheckpointWriteError: the file cannot be written, flushed or renamed.
    """
    file_name = checked_path(path)
    collection = (
        parameters if isinstance(parameters, NamedParameters) else NamedParameters(parameters)
    )
    text = _checked_metadata(file_name, metadata)
    write_arrays(
        file_name, [(parameter.name, parameter.tensor.numpy()) for parameter in collection], text
    )


def write_arrays(
    path: str,
    arrays: Sequence[tuple[str, np.ndarray[Any, Any]]],
    metadata: Mapping[str, str],
) -> None:
    """Write named arrays as one safetensors file, replacing ``path`` atomically (package-
    internal: the public functions check their arguments, then call this).

    Each array may have any dtype the format and NumPy share (``F64``, ``F32`` and ``I64``
    among them) and any shape, ``[]`` for a 0-d array. The wider dtypes come first, each in the
    given order. The arrays are read while the file is written: the caller keeps them from
    changing until this returns.

    Raises:
        NonFiniteValueError: a float array holds a NaN or an infinity (a file no load accepts),
            before anything is written.
        HeaderSizeError: the header would exceed the format's limit.
        CheckpointWriteError: the file cannot be written, flushed or renamed.
    """
    for name, array in arrays:
        found = first_non_finite(array) if array.dtype.kind == "f" else None
        if found is not None:
            raise NonFiniteValueError(path, name, found[0], found[1])
    # Wider dtypes first (a stable sort): every tensor then starts at a multiple of its item
    # size, as the safetensors package lays files out, so readers that map the file can use the
    # bytes in place.
    ordered = sorted(arrays, key=lambda named: -named[1].itemsize)
    header = encode_header(
        ((name, dtype_code(array.dtype), array.shape) for name, array in ordered), metadata
    )
    if len(header) - LENGTH_BYTES > HEADER_LIMIT:
        raise HeaderSizeError(path, len(header) - LENGTH_BYTES, HEADER_LIMIT)

    def write(emit: Callable[[memoryview], None]) -> None:
        emit(memoryview(header))
        for _, array in ordered:
            emit(_little_endian_bytes(array))

    replace_atomically(path, write)


def _checked_metadata(path: str, metadata: object) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise MetadataTypeError(path, f"got a {type(metadata).__name__}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            detail = f"the entry {key!r}: {value!r} is {type(key).__name__}: {type(value).__name__}"
            raise MetadataTypeError(path, detail)
    return dict(metadata)


def _little_endian_bytes(array: np.ndarray[Any, Any]) -> memoryview:
    """The array's bytes in the file's byte order (a view, except on a big-endian machine)."""
    ordered = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return ordered.reshape(-1).view(np.uint8).data
