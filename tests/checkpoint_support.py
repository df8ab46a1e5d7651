"""Support for the checkpoint tests: safetensors files built byte by byte, and one failing
public call per checkpoint rule (for the error catalogue).

The builders do not use the library: a file is 8 bytes of little-endian header length, the JSON
header, then the data. ``safetensors_file`` lays tensors out the way the format requires;
``file_with_header`` takes any header text (a lying one included).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt

import llm_from_scratch.nn.checkpoint as checkpoint_module
from llm_from_scratch.errors import LlmError
from llm_from_scratch.nn import (
    Embedding,
    NamedParameter,
    NamedParameters,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.tensor import Tensor

from checks import NumpyWithFailing
from conftest import KNOWN_TABLE

KNOWN_TABLE_HEADER = (
    b'{"token_embedding.weight":{"dtype":"F64","shape":[4,2],"data_offsets":[0,64]}}'
)
"""The header our writer produces for the chapter's 4x2 float64 table (before padding)."""

CODES = {
    np.dtype("<f8"): "F64",
    np.dtype("<f4"): "F32",
    np.dtype("<f2"): "F16",
    np.dtype("<i8"): "I64",
    np.dtype("<i4"): "I32",
    np.dtype("bool"): "BOOL",
    np.dtype("uint8"): "U8",
}


def file_with_header(header: bytes | str | object, data: bytes = b"", *, pad: bool = True) -> bytes:
    """The bytes of a file with this header (JSON text, or an object dumped as JSON) and data.

    With ``pad``, the header is padded with spaces so that the data starts at a multiple of 8.
    """
    if isinstance(header, str):
        text = header.encode("utf-8")
    elif isinstance(header, bytes):
        text = header
    else:
        text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if pad:
        text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_file(
    tensors: Sequence[tuple[str, npt.NDArray[np.generic]]],
    metadata: dict[str, str] | None = None,
    *,
    codes: dict[str, str] | None = None,
) -> bytes:
    """A valid file holding ``tensors`` in the given order; ``codes`` overrides a tensor's
    dtype code (for BF16, whose bits are given as ``uint16``)."""
    header: dict[str, object] = {} if metadata is None else {"__metadata__": metadata}
    data = b""
    for name, array in tensors:
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        code = (codes or {}).get(name) or CODES[array.dtype.newbyteorder("<")]
        header[name] = {
            "dtype": code,
            "shape": list(array.shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    return file_with_header(header, data)


def known_table_file() -> bytes:
    """The chapter's 4x2 table as a float64 file."""
    table = np.array([[10, 11], [20, 21], [30, 31], [40, 41]], dtype=np.float64)
    return safetensors_file([("token_embedding.weight", table)])


def failing_after(limit: int, error: BaseException) -> Callable[[int, memoryview], int]:
    """An ``os.write`` that writes ``limit`` bytes in all, then raises ``error``."""
    real_write = os.write
    written = [0]

    def write(descriptor: int, data: memoryview) -> int:
        if written[0] >= limit:
            raise error
        count = real_write(descriptor, data[: limit - written[0]])
        written[0] += count
        return count

    return write


def write_file(folder: Path, content: bytes, name: str = "model.safetensors") -> Path:
    path = folder / name
    path.write_bytes(content)
    return path


# Without root's override of file permissions ---------------------------------------------------


def outcome(call: Callable[[], object]) -> str:
    """``"ok"``, or the checkpoint error's family and rule, and its cause's class and errno."""
    try:
        call()
    except LlmError as error:
        if not error.rule.startswith("checkpoint."):
            raise
        cause = getattr(error, "cause", None)
        errno = getattr(cause, "errno", None)
        return f"{type(error).__name__} {error.rule} {type(cause).__name__} {errno}"
    return "ok"


def outcome_without_privileges(call: Callable[[], object]) -> str:
    """:func:`outcome` of ``call`` run by a user whom file permissions bind.

    Root reads and writes anywhere, so as root the call runs in a forked child that has become
    the user ``nobody`` (the files it touches must be in folders every user can enter).
    """
    if os.geteuid() != 0:
        return outcome(call)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the child, which never returns)
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, outcome(call).encode())
        except BaseException as error:
            os.write(write_end, repr(error).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    os.waitpid(child, 0)
    return report


@contextmanager
def folder_everyone_enters() -> Iterator[Path]:
    """A new folder, mode 0755, outside the per-user pytest folders; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="checkpoint-permissions-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


# One failing public call per checkpoint rule ----------------------------------------------------


def known_parameters(shape: tuple[int, int] = (4, 2), dtype: type = np.float64) -> NamedParameters:
    values = np.array(KNOWN_TABLE[: shape[0] * shape[1]])
    table = Tensor(shape, values, dtype=dtype)
    return Embedding.from_parameter(
        NamedParameter.from_tensor("token_embedding.weight", table)
    ).parameters()


def load_from(content: bytes, **options: object) -> Callable[[], object]:
    """A call that loads ``content`` from a file in a new temporary folder."""

    def call() -> object:
        with tempfile.TemporaryDirectory() as folder:
            return load_parameters(write_file(Path(folder), content), **options)  # type: ignore[arg-type]

    return call


def load_without_memory() -> object:
    original = checkpoint_module.np
    checkpoint_module.np = NumpyWithFailing("empty")  # type: ignore[assignment]
    try:
        return load_from(known_table_file())()
    finally:
        checkpoint_module.np = original


def entry(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, object]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


MISSING_FOLDER = Path(tempfile.gettempdir()) / "no-such-folder-for-checkpoints" / "m.safetensors"

CHECKPOINT_TRIGGERS: dict[str, Callable[[], object]] = {
    "checkpoint.argument": lambda: load_parameters(5),  # type: ignore[arg-type]
    "checkpoint.read": lambda: load_parameters(MISSING_FOLDER),
    "checkpoint.write": lambda: save_parameters(MISSING_FOLDER, known_parameters()),
    "checkpoint.reserved-name": lambda: save_parameters(
        Path(tempfile.mkdtemp()) / "m.safetensors",
        [NamedParameter.from_tensor("__metadata__", Tensor((1,), [1.0]))],
    ),
    "checkpoint.invalid": load_from(b""),
    "checkpoint.tensor-size": load_from(
        file_with_header({"w": entry("F64", [4, 2], 0, 32)}, bytes(32)), names=[]
    ),
    "checkpoint.data-size": load_from(known_table_file()[:-1]),
    "checkpoint.names": load_from(known_table_file(), names=["output.weight"]),
    "checkpoint.into": load_from(
        known_table_file(),
        into=[NamedParameter.from_tensor("output.weight", Tensor((4, 2), KNOWN_TABLE))],
    ),
    "checkpoint.tensor-dtype": load_from(safetensors_file([("position_ids", np.arange(2))])),
    "checkpoint.allocation": load_without_memory,
    "checkpoint.non-finite": load_from(safetensors_file([("w", np.array([1.0, np.nan]))])),
}
"""A public call per checkpoint rule, by its code."""
