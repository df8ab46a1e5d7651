"""The safetensors header: one grammar for the checkpoint writer and reader.

A safetensors file is three parts:

1. 8 bytes: ``N``, the header length, an unsigned little-endian 64-bit integer;
2. ``N`` bytes: the header, UTF-8 JSON text of one object. Each key except ``__metadata__``
   names a tensor, whose value is ``{"dtype": CODE, "shape": [extents], "data_offsets":
   [begin, end]}``; ``__metadata__``, if present, maps strings to strings. The writer pads the
   text with spaces so that ``8 + N`` is a multiple of 8;
3. the data: each tensor's bytes, row-major and little-endian, at ``[begin, end)`` counted from
   the first byte after the header. Taken in offset order, the tensors follow each other from
   byte 0 without gaps or overlaps, and the last one ends at the end of the file.

:func:`encode_header` writes parts 1 and 2; :func:`decode_header` checks and reads part 2
against the file's size, raising a :class:`~llm_from_scratch.nn.checkpoint.errors.CheckpointError`
for the first rule a file breaks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from llm_from_scratch.nn.checkpoint.errors import (
    DuplicateTensorKeyError,
    HeaderJsonError,
    HeaderSizeError,
    MetadataFormatError,
    TensorEntryError,
    TensorOffsetsError,
    TensorSizeMismatchError,
    TrailingDataError,
    TruncatedCheckpointError,
)
from llm_from_scratch.tensor.storage import INDEX_LIMIT, Shape

LENGTH_BYTES: Final = 8
"""The size of part 1, the header length."""

HEADER_LIMIT: Final = 100_000_000
"""The largest header length the safetensors package accepts."""

METADATA_KEY: Final = "__metadata__"

DTYPE_BITS: Final = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
"""Every dtype code of the format, with the bits one element takes."""

NUMPY_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "BOOL": np.dtype("?"),
    "U8": np.dtype("u1"),
    "I8": np.dtype("i1"),
    "U16": np.dtype("<u2"),
    "I16": np.dtype("<i2"),
    "F16": np.dtype("<f2"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "F32": np.dtype("<f4"),
    "C64": np.dtype("<c8"),
    "U64": np.dtype("<u8"),
    "I64": np.dtype("<i8"),
    "F64": np.dtype("<f8"),
}
"""The codes whose elements NumPy holds as they are, with the NumPy dtype of their bytes in a
file (little-endian). BF16 and the 8-, 6- and 4-bit floats have no NumPy dtype."""


def numpy_dtype(code: str) -> np.dtype[Any] | None:
    """The NumPy dtype (in the machine's byte order) that holds a code's elements, or None.

    Example:
        >>> numpy_dtype("I64"), numpy_dtype("BF16")
        (dtype('int64'), None)
    """
    stored = NUMPY_DTYPES.get(code)
    return None if stored is None else stored.newbyteorder("=")


def dtype_code(dtype: np.dtype[Any]) -> str:
    """The code of a NumPy dtype that :data:`NUMPY_DTYPES` lists (in either byte order).

    Example:
        >>> dtype_code(np.dtype(np.float32)), dtype_code(np.dtype(">i8"))
        ('F32', 'I64')
    """
    return _CODES[dtype.newbyteorder("<")]


_CODES: Final = {stored: code for code, stored in NUMPY_DTYPES.items()}


@dataclass(frozen=True)
class TensorRecord:
    """One tensor of a header: its key, dtype code, shape and data offsets."""

    name: str
    dtype: str
    shape: Shape
    begin: int
    end: int

    @property
    def element_count(self) -> int:
        """The number of elements (one for a scalar)."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class Header:
    """A checked header: the tensors in data-offset order, the metadata, and where the data
    starts in the file."""

    tensors: tuple[TensorRecord, ...]
    metadata: Mapping[str, str]
    data_start: int


def encode_header(tensors: Iterable[tuple[str, str, Shape]], metadata: Mapping[str, str]) -> bytes:
    """Parts 1 and 2 of a file whose tensors, given as ``(name, dtype code, shape)``, follow
    each other in the given order.

    Example:
        >>> encoded = encode_header([("w", "F32", (2,))], {})
        >>> int.from_bytes(encoded[:8], "little"), encoded[8:]
        (56, b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  ')
    """
    entries: dict[str, object] = {METADATA_KEY: dict(metadata)} if metadata else {}
    offset = 0
    for name, dtype, shape in tensors:
        length = byte_length(dtype, shape)
        offsets = [offset, offset + length]
        entries[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": offsets}
        offset += length
    text = json.dumps(entries, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(LENGTH_BYTES + len(text)) % 8)
    return len(text).to_bytes(LENGTH_BYTES, "little") + text


def byte_length(dtype: str, shape: Shape) -> int:
    """The bytes ``shape`` elements of ``dtype`` take (rounded up for sub-byte dtypes)."""
    return -(-math.prod(shape) * DTYPE_BITS[dtype] // 8)


def header_length(path: str, prefix: bytes, file_size: int) -> int:
    """``N``, read from the first 8 bytes, checked against the limit and the file's size."""
    if file_size < LENGTH_BYTES or len(prefix) < LENGTH_BYTES:
        raise TruncatedCheckpointError(path, LENGTH_BYTES, min(file_size, len(prefix)))
    length = int.from_bytes(prefix[:LENGTH_BYTES], "little")
    if length > HEADER_LIMIT:
        raise HeaderSizeError(path, length, HEADER_LIMIT)
    if LENGTH_BYTES + length > file_size:
        raise TruncatedCheckpointError(path, LENGTH_BYTES + length, file_size)
    return length


def decode_header(path: str, text: bytes, file_size: int) -> Header:
    """Check part 2 of a file of ``file_size`` bytes and read its tensors and metadata.

    Raises, for the first rule broken, in this order: :class:`HeaderJsonError`,
    :class:`DuplicateTensorKeyError`; for each entry in header order
    :class:`MetadataFormatError`, :class:`TensorEntryError` or
    :class:`TensorSizeMismatchError`; then :class:`TensorOffsetsError` in offset order;
    then :class:`TruncatedCheckpointError` or :class:`TrailingDataError` for the file's size.
    """
    pairs = _json_object(path, text)
    metadata: dict[str, str] = {}
    records: list[TensorRecord] = []
    seen: set[str] = set()
    for key, value in pairs:
        if key in seen:
            raise DuplicateTensorKeyError(path, key)
        seen.add(key)
        if key == METADATA_KEY:
            metadata = _metadata(path, value)
        else:
            records.append(_record(path, key, value))
    ordered = tuple(sorted(records, key=lambda record: (record.begin, record.end)))
    data_length = _contiguous_length(path, ordered)
    data_start = LENGTH_BYTES + len(text)
    if data_start + data_length > file_size:
        raise TruncatedCheckpointError(path, data_start + data_length, file_size)
    if data_start + data_length < file_size:
        raise TrailingDataError(path, data_start + data_length, file_size)
    return Header(ordered, metadata, data_start)


class _JsonObject(tuple[tuple[str, object], ...]):
    """A JSON object as its key-value pairs in text order, duplicates kept (to be refused)."""


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _integer(text: str) -> int | float:
    """A JSON integer; ``-0`` is the float -0.0, as the safetensors package reads it (so it is
    no extent or offset there, and not here either)."""
    return -0.0 if text == "-0" else int(text)


def _json_object(path: str, text: bytes) -> _JsonObject:
    try:
        parsed = json.loads(
            text.decode("utf-8"),
            object_pairs_hook=_JsonObject,
            parse_constant=_refuse_constant,
            parse_int=_integer,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise HeaderJsonError(path, str(error) or type(error).__name__) from error
    if not isinstance(parsed, _JsonObject):
        raise HeaderJsonError(path, f"the text is a JSON {_json_type(parsed)}, not an object")
    lone = _first_lone_surrogate(parsed)
    if lone is not None:
        raise HeaderJsonError(path, f"the string {lone!r} escapes a lone UTF-16 surrogate")
    return parsed


def _first_lone_surrogate(parsed: _JsonObject) -> str | None:
    """The first string (key or value) that is not Unicode text: ``json`` decodes an escaped
    lone surrogate such as ``"\\ud800"``, which UTF-8 (and the safetensors package) refuse."""
    pending: list[object] = [parsed]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, list | tuple):  # a _JsonObject is a tuple of (key, value) pairs
            pending.extend(item)
    return None


def _metadata(path: str, value: object) -> dict[str, str]:
    if not isinstance(value, _JsonObject):
        raise MetadataFormatError(path, f"got a JSON {_json_type(value)}")
    metadata: dict[str, str] = {}
    for key, text in value:
        if key in metadata:
            raise MetadataFormatError(path, f"key {key!r} appears twice")
        if not isinstance(text, str):
            raise MetadataFormatError(path, f"the value of {key!r} is a JSON {_json_type(text)}")
        metadata[key] = text
    return metadata


def _record(path: str, name: str, value: object) -> TensorRecord:
    fields = _entry_fields(path, name, value)
    dtype = fields.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise TensorEntryError(path, name, f"unknown dtype {dtype!r}")
    shape = _non_negative_integers(fields.get("shape"))
    if shape is None:
        raise TensorEntryError(path, name, "shape must be a list of non-negative integers")
    if math.prod(max(extent, 1) for extent in shape) * DTYPE_BITS[dtype] > 8 * INDEX_LIMIT:
        raise TensorEntryError(path, name, f"shape {list(shape)} does not fit a 64-bit layout")
    offsets = _non_negative_integers(fields.get("data_offsets"))
    if offsets is None or len(offsets) != 2 or offsets[0] > offsets[1]:
        raise TensorEntryError(path, name, "data_offsets must be two integers 0 <= begin <= end")
    begin, end = offsets
    if math.prod(shape) * DTYPE_BITS[dtype] != 8 * (end - begin):
        expected = byte_length(dtype, shape)
        raise TensorSizeMismatchError(path, name, dtype, shape, expected, end - begin)
    return TensorRecord(name, dtype, shape, begin, end)


def _entry_fields(path: str, name: str, value: object) -> dict[str, object]:
    if not isinstance(value, _JsonObject):
        detail = f"the entry is a JSON {_json_type(value)}, not an object"
        raise TensorEntryError(path, name, detail)
    fields: dict[str, object] = {}
    for key, item in value:
        if key in fields:
            raise TensorEntryError(path, name, f"key {key!r} appears twice")
        fields[key] = item
    return fields


def _non_negative_integers(value: object) -> Shape | None:
    if not isinstance(value, list):
        return None
    if not all(type(item) is int and item >= 0 for item in value):
        return None
    return tuple(value)


def _contiguous_length(path: str, ordered: tuple[TensorRecord, ...]) -> int:
    """The data length, if the tensors in offset order follow each other from byte 0."""
    position = 0
    for record in ordered:
        if record.begin != position:
            raise TensorOffsetsError(path, record.name, record.begin, record.end, position)
        position = record.end
    return position


def _json_type(value: object) -> str:
    if isinstance(value, _JsonObject):
        return "object"
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
