"""Saving named parameters to a safetensors file.

The writer streams each parameter's bytes from its own array into the file (no copy of the
table), after the header that :func:`~llm_from_scratch.nn.checkpoint.header.encode_header`
builds, through :func:`~llm_from_scratch.nn.checkpoint.files.replace_atomically`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Final

import numpy as np

from llm_from_scratch.nn.checkpoint.errors import (
    HeaderSizeError,
    MetadataTypeError,
    NonFiniteValueError,
)
from llm_from_scratch.nn.checkpoint.files import checked_path, replace_atomically
from llm_from_scratch.nn.checkpoint.header import HEADER_LIMIT, LENGTH_BYTES, encode_header
from llm_from_scratch.nn.checkpoint.values import first_non_finite
from llm_from_scratch.nn.init import NamedParameter, NamedParameters
from llm_from_scratch.tensor.storage import FloatArray

DTYPE_CODES: Final = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32"}
"""The safetensors code of each parameter dtype."""


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
    values = [(parameter.name, parameter.tensor.numpy()) for parameter in collection]
    for name, array in values:
        found = first_non_finite(array)
        if found is not None:
            raise NonFiniteValueError(file_name, name, found[0], found[1])
    # Wider dtypes first (a stable sort): every tensor then starts at a multiple of its item
    # size, as the safetensors package lays files out, so readers that map the file can use the
    # bytes in place.
    values.sort(key=lambda named: -named[1].itemsize)
    header = encode_header(
        ((name, DTYPE_CODES[array.dtype], array.shape) for name, array in values), text
    )
    if len(header) - LENGTH_BYTES > HEADER_LIMIT:
        raise HeaderSizeError(file_name, len(header) - LENGTH_BYTES, HEADER_LIMIT)

    def write(emit: Callable[[memoryview], None]) -> None:
        emit(memoryview(header))
        for _, array in values:
            emit(_little_endian_bytes(array))

    replace_atomically(file_name, write)


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


def _little_endian_bytes(array: FloatArray) -> memoryview:
    """The array's bytes in the file's byte order (a view, except on a big-endian machine)."""
    ordered = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return ordered.reshape(-1).view(np.uint8).data
