"""Checkpoints: named parameters in safetensors files, checked by the ``safetensors`` package
before they are read, plus what it lacks: atomic saves, loads that check all before they change a
parameter, finiteness, parameter names, F16/BF16 conversion; bytes go straight between the file
and each array (``docs/performance.md``)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeGuard

import numpy as np
from safetensors import SafetensorError, safe_open

from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import parameter_from_owned_array, update_leaves_in_place
from llm_from_scratch.errors import (
    AllocationError,
    FileAccessError,
    FormatError,
    MismatchError,
    NonFiniteError,
    OptionError,
    TableError,
)
from llm_from_scratch.files import check_text, open_file, path_text, replace_file, writable_path
from llm_from_scratch.nn.init import NamedParameter, NamedParameters, validate_parameter_name
from llm_from_scratch.tensor.storage import SUPPORTED_DTYPES, Shape

if TYPE_CHECKING:
    import numpy.typing as npt

RESERVED_NAMES: Final = frozenset({"__metadata__"})  # keys of the header that are no tensor
HEADER_LIMIT: Final = 100_000_000  # the largest header the safetensors package reads
CHUNK: Final = 1 << 20  # elements per step of a conversion or a finiteness check
IO_CHUNK: Final = 1 << 26  # the most bytes one read or write call moves (64 MiB)
SPECS: Final = dict(F64="<f8", F32="<f4", F16="<f2", BF16="<u2", I64="<i8", I32="<i4", I16="<i2")
SPECS.update(I8="i1", U64="<u8", U32="<u4", U16="<u2", U8="u1", BOOL="?", C64="<c8")
STORED: Final = {code: np.dtype(spec) for code, spec in SPECS.items()}  # bytes as in a file
CODES: Final = {dtype: code for code, dtype in STORED.items()}  # <u2 is U16 (listed after BF16)
_F8: Final = ("F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ")
#: Bytes per element of each whole-byte dtype the package knows (F4 and F6 pack below a byte).
ITEM_BYTES: Final = {code: dtype.itemsize for code, dtype in STORED.items()} | dict.fromkeys(_F8, 1)


class StoredTensor(NamedTuple):  # a tensor of a checked file, and where its bytes start
    name: str
    dtype: str
    shape: Shape
    offset: int


def save_parameters(
    path: str | os.PathLike[str],
    parameters: Iterable[NamedParameter],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save named parameters as one safetensors file (float64 tensors first, then float32, each
    in the order given), replaced atomically. The path (``checkpoint.argument``), the parameters
    (as :class:`NamedParameters`) and the metadata are checked, then as :func:`write_arrays`."""
    file_name, collection = checked_path(path), NamedParameters(parameters)
    rule = "a mapping of str to str"
    if metadata is not None and not isinstance(metadata, Mapping):
        raise _argument("metadata", rule, type(metadata).__name__)
    entries = dict(metadata or {})
    for key, value in entries.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise _argument("metadata", rule, f"the entry {key!r}: {value!r}")
    arrays = [(parameter.name, parameter.tensor.numpy()) for parameter in collection]
    write_arrays(file_name, arrays, entries)


def write_arrays(
    path: str, arrays: Sequence[tuple[str, np.ndarray[Any, Any]]], metadata: Mapping[str, str]
) -> None:
    """Write named arrays, unchanged meanwhile, as one file over ``path``, atomically. Checked
    before anything is created: ``checkpoint.reserved-name``, ``.argument`` (text), ``.write``
    (the path), ``.non-finite``, ``.invalid`` (a header over the limit)."""
    # Not safetensors.numpy.save_file: it writes by path, sorts by name and reports a failed
    # write as text, not as the OSError (ENOSPC) our error carries (docs/performance.md).
    _check_header_text(path, [name for name, _ in arrays], metadata)
    try:
        writable_path(path)
    except OSError as error:
        raise FileAccessError("checkpoint.write", path=path, cause=error) from error
    for name, array in arrays:
        found = first_non_finite(array) if array.dtype.kind == "f" else None
        if found is not None:
            raise _non_finite(path, name, found)
    ordered = sorted(arrays, key=lambda named: -named[1].itemsize)
    entries: dict[str, object] = {"__metadata__": dict(metadata)}
    entries, offset = (entries if metadata else {}), 0
    for name, array in ordered:
        code, end = CODES[array.dtype.newbyteorder("<")], offset + array.nbytes
        entries[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, end]}
        offset = end
    text = json.dumps(entries, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    if len(text) > HEADER_LIMIT:
        detail = f"the header would take {len(text)} bytes, over the limit of {HEADER_LIMIT}"
        raise FormatError("checkpoint.invalid", path=path, cause=ValueError(detail))
    data = [np.ascontiguousarray(a, a.dtype.newbyteorder("<")).reshape(-1) for _, a in ordered]
    parts: list[Any] = [len(text).to_bytes(8, "little") + text, *(a.view(np.uint8) for a in data)]
    try:
        replace_file(path, [memoryview(part) for part in parts], IO_CHUNK)
    except OSError as error:
        raise FileAccessError("checkpoint.write", path=path, cause=error) from error


def _check_header_text(path: str, names: Sequence[str], metadata: Mapping[str, str]) -> None:
    """No tensor under a reserved name, and every string of the header text UTF-8 encodes."""
    for name in names:
        if name in RESERVED_NAMES:
            raise FormatError("checkpoint.reserved-name", path=path, name=name)
    checked = [("tensor names", "the name", name) for name in names]
    checked += [("metadata", "the key", key) for key in metadata]
    checked += [("metadata", f"the value of {key!r}", value) for key, value in metadata.items()]
    for argument, which, text in checked:
        try:
            check_text(text)
        except ValueError as error:
            shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}..."
            detail = f"{which} {shown}, where {error}"
            raise _argument(argument, "text", detail) from error


def load_parameters(
    path: str | os.PathLike[str],
    *,
    into: Iterable[NamedParameter] | None = None,
    dtype: npt.DTypeLike | None = None,
    names: Iterable[str] | None = None,
) -> NamedParameters:
    """Load named parameters from a safetensors file: new leaves in file order, or ``into``'s
    parameters, written in place once the whole file was checked and read (revisions bumped).

    Args:
        path: a ``str`` or an ``os.PathLike`` of ``str``.
        into: parameters that must name exactly the tensors to load, each of its tensor's shape
            and dtype.
        dtype: None (F32 and F64 load as they are), ``numpy.float32`` or ``numpy.float64``
            (also F16 and BF16 load, exactly converted).
        names: the tensors to load (leave out those that are no parameter).

    Raises:
        In this order: OptionError ``checkpoint.argument``; TableError (``into``);
        FileAccessError ``checkpoint.read``; FormatError ``checkpoint.invalid``,
        ``checkpoint.tensor-size``, ``checkpoint.data-size``; MismatchError
        ``checkpoint.names``; FormatError ``checkpoint.tensor-dtype`` (a key that is no
        parameter name, or a dtype no parameter holds); MismatchError ``checkpoint.into``;
        AllocationError ``checkpoint.allocation``; NonFiniteError ``checkpoint.non-finite``.
    """
    file_name, target, wanted = checked_path(path), _checked_dtype(dtype), _checked_names(names)
    receivers = None if into is None else NamedParameters(into)
    with opened(file_name) as (file, tensors, _):
        if wanted is not None:
            present = {tensor.name for tensor in tensors}
            missing = tuple(dict.fromkeys(name for name in wanted if name not in present))
            if missing:
                raise MismatchError("checkpoint.names", path=file_name, missing=missing)
            tensors = [tensor for tensor in tensors if tensor.name in set(wanted)]
        plan = [(tensor, _loaded_dtype(file_name, tensor, target)) for tensor in tensors]
        if receivers is not None:
            _check_receivers(file_name, plan, receivers)
        arrays = [read_tensor(file_name, file, tensor, loaded, True) for tensor, loaded in plan]
    if receivers is None:
        return NamedParameters(
            NamedParameter.from_value(tensor.name, parameter_from_owned_array(array))
            for tensor, array in zip(tensors, arrays, strict=True)
        )
    leaves = [receivers[tensor.name].tensor for tensor in tensors]
    writes = [partial(np.copyto, src=array) for array in arrays]
    update_leaves_in_place(leaves, lambda: writes)  # one step, holding every leaf's lock
    return receivers


def load_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors file (empty if none), checked as by
    :func:`load_parameters` up to ``checkpoint.data-size``."""
    with opened(checked_path(path)) as (_, _, metadata):
        return metadata


def checked_path(path: object) -> str:
    """``path`` as a plain ``str``, if it is a ``str`` or an ``os.PathLike`` of ``str``."""
    resolved = path_text(path)
    if resolved is None:
        raise _argument("path", "a str or an os.PathLike of str", type(path).__name__)
    return resolved


@contextlib.contextmanager
def opened(path: str) -> Iterator[tuple[io.FileIO, list[StoredTensor], dict[str, str]]]:
    """The file (unbuffered, regular), its tensors in file order and its metadata, once checked."""
    try:
        file = open_file(path, regular=True)
    except OSError as error:
        raise FileAccessError("checkpoint.read", path=path, cause=error) from error
    with file:
        yield (file, *read_header(path, file))


def read_header(path: str, file: io.FileIO) -> tuple[list[StoredTensor], dict[str, str]]:
    """The tensors of ``file`` in file order and its metadata, once the package has checked it
    (a file replaced meanwhile is ``checkpoint.read``)."""
    opened_as = os.fstat(file.fileno())
    length, header = _plain_header(file, opened_as.st_size)
    if header is not None:
        check_sizes(path, opened_as.st_size - 8 - length, header)
    try:
        with safe_open(path, framework="numpy") as checked:
            slices = {key: checked.get_slice(key) for key in checked.keys()}  # noqa: SIM118
        now = os.stat(path)
    except SafetensorError as error:
        raise FormatError("checkpoint.invalid", path=path, cause=error) from error
    except OSError as error:
        raise FileAccessError("checkpoint.read", path=path, cause=error) from error
    if len({(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns) for s in (opened_as, now)}) > 1:
        replaced = FileExistsError("the file was replaced as it was opened")
        raise FileAccessError("checkpoint.read", path=path, cause=replaced)
    if header is None:  # the package read a header Python's JSON cannot
        cause = ValueError("the header is no JSON object")
        raise FormatError("checkpoint.invalid", path=path, cause=cause)
    tensors = [
        StoredTensor(key, part.get_dtype(), tuple(part.get_shape()), 8 + length + offset)
        for key, part in slices.items()
        for offset in [header[key]["data_offsets"][0]]
    ]
    return sorted(tensors, key=lambda tensor: tensor.offset), dict(header.get("__metadata__") or {})


def _plain_header(file: io.FileIO, size: int) -> tuple[int, dict[str, Any] | None]:
    """The header's length and its JSON object, read once; None where it is none."""
    try:
        length = int.from_bytes(os.pread(file.fileno(), 8, 0), "little")
        if size < 8 or not 0 < length <= min(HEADER_LIMIT, size - 8):
            return 0, None
        header = json.loads(os.pread(file.fileno(), length, 8))
    except (OSError, ValueError, RecursionError):
        return 0, None
    return length, header if isinstance(header, dict) else None


def check_sizes(path: str, data_bytes: int, header: dict[str, Any]) -> None:
    """Check before the package, whose error names neither the tensor nor the counts, each
    tensor's bytes in offset order (``checkpoint.tensor-size``) and the data's
    (``checkpoint.data-size``); other faults are left to the package."""
    entries, end = _plain_entries(header), 0
    if entries is None:
        return
    for name, dtype, shape, offsets in sorted(entries, key=lambda entry: entry[3]):
        if offsets[0] != end or offsets[1] < end:
            return  # offsets that do not follow one another: the package names the tensor
        needed, given, end = math.prod(shape) * ITEM_BYTES[dtype], offsets[1] - end, offsets[1]
        if needed != given:
            facts = {"name": name, "dtype": dtype, "shape": shape, "offsets": offsets}
            raise FormatError(
                "checkpoint.tensor-size", path=path, needed=needed, given=given, **facts
            )
    if end != data_bytes:
        raise FormatError("checkpoint.data-size", path=path, needed=end, given=data_bytes)


_Entry = tuple[str, str, tuple[int, ...], tuple[int, ...]]  # name, dtype, shape, offsets


def _plain_entries(header: dict[str, Any]) -> list[_Entry] | None:
    """The header's tensor entries, or None if any is not plain."""
    entries = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            return None
        dtype, shape, offsets = (entry.get(key) for key in ("dtype", "shape", "data_offsets"))
        if not (isinstance(dtype, str) and _counts(shape) and _counts(offsets)):
            return None
        if dtype not in ITEM_BYTES or len(offsets) != 2:
            return None
        entries.append((name, dtype, tuple(shape), tuple(offsets)))
    return entries


def _counts(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(type(item) is int and item >= 0 for item in value)


def read_tensor(
    path: str, file: io.FileIO, tensor: StoredTensor, loaded: np.dtype[Any], finite: bool
) -> np.ndarray[Any, Any]:
    """The tensor's values in a new array of dtype ``loaded`` (checked ``finite`` if asked), read
    straight into it or converted through a buffer of :data:`CHUNK` elements."""
    try:
        array = np.empty(tensor.shape, dtype=loaded)
    except MemoryError as error:
        count = int(np.prod(tensor.shape, dtype=object))
        raise AllocationError(
            "checkpoint.allocation", path=path, elements=count, name=tensor.name
        ) from error
    except ValueError as error:  # more axes than NumPy's 64
        raise FormatError("checkpoint.invalid", path=path, cause=error) from error
    flat, stored = array.reshape(-1), STORED[tensor.dtype]
    if stored == loaded:
        _read(path, file, tensor.offset, flat.view(np.uint8))
    else:
        buffer = np.empty(min(CHUNK, flat.size), dtype=stored)
        for start in range(0, flat.size, CHUNK):
            part = buffer[: flat.size - start]
            _read(path, file, tensor.offset + start * stored.itemsize, part.view(np.uint8))
            if tensor.dtype == "BF16":  # the top 16 bits of a float32: widening is a shift
                part = (part.astype(np.uint32) << 16).view(np.float32)
            with np.errstate(over="ignore", invalid="ignore"):  # overflow: inf, refused below
                np.copyto(flat[start : start + CHUNK], part, casting="unsafe")
    found = first_non_finite(array) if finite else None
    if found is not None:
        raise _non_finite(path, tensor.name, found)
    return array


def _read(path: str, file: io.FileIO, offset: int, buffer: Any) -> Any:
    """Fill ``buffer`` (a bytearray or a uint8 array) with the file's bytes from ``offset``."""
    view, filled = memoryview(buffer), 0
    try:
        file.seek(offset)
        while filled < len(view):
            count = file.readinto(view[filled : filled + IO_CHUNK])
            if not count:
                detail = f"the file ends at byte {offset + filled}, not {offset + len(view)}"
                raise FormatError("checkpoint.invalid", path=path, cause=EOFError(detail))
            filled += count
    except OSError as error:
        raise FileAccessError("checkpoint.read", path=path, cause=error) from error
    return buffer


def _checked_dtype(dtype: object) -> np.dtype[Any] | None:
    with contextlib.suppress(TypeError):
        resolved = None if dtype is None else np.dtype(dtype)  # type: ignore[call-overload]
        if resolved is None or resolved in SUPPORTED_DTYPES:
            return resolved
    raise _argument("dtype", "None, numpy.float32 or numpy.float64", repr(dtype))


def _checked_names(names: object) -> tuple[str, ...] | None:
    if isinstance(names, str | bytes) or not isinstance(names, Iterable | None):
        raise _argument("names", "an iterable of str", f"a {type(names).__name__}")
    checked = None if names is None else tuple(names)
    for position, name in enumerate(checked or ()):
        if not isinstance(name, str):
            detail = f"a {type(name).__name__} at position {position}"
            raise _argument("names", "an iterable of str", detail)
    return checked


def _loaded_dtype(path: str, tensor: StoredTensor, target: np.dtype[Any] | None) -> np.dtype[Any]:
    """The dtype a tensor loads as, once its key and dtype may make a parameter."""
    try:
        validate_parameter_name(tensor.name)
    except TableError as error:
        rule = f"its key must be a parameter name ({error}); leave it out with names="
        raise _tensor_error(path, tensor, rule) from error
    if tensor.dtype not in ("F64", "F32", "F16", "BF16"):
        rule = "parameters load from F32, F64, F16 or BF16 (leave it out with names=)"
        raise _tensor_error(path, tensor, rule)
    if target is None and tensor.dtype in ("F16", "BF16"):
        rule = "pass dtype=numpy.float32 or numpy.float64 to convert it"
        raise _tensor_error(path, tensor, rule)
    return target if target is not None else STORED[tensor.dtype].newbyteorder("=")


def _check_receivers(
    path: str, plan: list[tuple[StoredTensor, np.dtype[Any]]], receivers: NamedParameters
) -> None:
    """One ``checkpoint.into`` listing every difference between the tensors and ``receivers``."""
    loaded = {tensor.name for tensor, _ in plan}
    missing = tuple(name for name in receivers.names() if name not in loaded)
    unexpected = tuple(
        name if name not in receivers.frozen else f"{name} ({receivers.absence(name)})"
        for name in (tensor.name for tensor, _ in plan if tensor.name not in receivers)
    )
    differing = []
    for tensor, dtype in plan:
        if tensor.name not in receivers:
            continue
        leaf = receivers[tensor.name].tensor
        if leaf.shape != tensor.shape:
            shapes = f"shape {list(tensor.shape)} in the file, {list(leaf.shape)} in into="
            differing.append(f"{tensor.name}: {shapes}")
        if leaf.dtype != dtype:
            differing.append(f"{tensor.name}: loads as {dtype}, {leaf.dtype} in into=")
    if missing or unexpected or differing:
        lists = {"missing": missing, "unexpected": unexpected, "differing": tuple(differing)}
        raise MismatchError("checkpoint.into", path=path, **lists)


def _argument(argument: str, requirement: str, detail: str) -> OptionError:
    facts = {"argument": argument, "requirement": requirement, "detail": detail}
    return OptionError("checkpoint.argument", **facts)


def _tensor_error(path: str, tensor: StoredTensor, requirement: str) -> FormatError:
    facts = {"name": tensor.name, "dtype": tensor.dtype, "requirement": requirement}
    return FormatError("checkpoint.tensor-dtype", path=path, **facts)


def _non_finite(path: str, name: str, found: tuple[int, float]) -> NonFiniteError:
    where = {"name": name, "position": found[0], "value": found[1]}
    return NonFiniteError("checkpoint.non-finite", path=path, **where)
