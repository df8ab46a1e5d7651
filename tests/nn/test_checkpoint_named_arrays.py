"""The checkpoint package's own functions for named arrays of any dtype NumPy and the format
share (``write_arrays``, ``load_arrays``), which the optimizer state files use: what they
write, the safetensors package reads, and the other way round; ``load_parameters`` keeps its
rules. Also: JSON integers the safetensors package does not take as extents or offsets."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
from safetensors.numpy import load_file, save_file

from llm_from_scratch.nn import load_parameters
from llm_from_scratch.nn.checkpoint import (
    HeaderJsonError,
    NonFiniteValueError,
    TensorEntryError,
    UnsupportedDtypeError,
)
from llm_from_scratch.nn.checkpoint.header import Header
from llm_from_scratch.nn.checkpoint.reading import load_arrays
from llm_from_scratch.nn.checkpoint.writing import write_arrays

from checkpoint_support import entry, file_with_header, safetensors_file, write_file

ARRAYS: list[tuple[str, np.ndarray]] = [
    ("table.exp_avg", np.arange(6, dtype=np.float32).reshape(3, 2)),
    ("step", np.array(7, dtype=np.int64)),
    ("bias.sum", np.array([0.5, 0.25])),
    ("empty", np.zeros((0, 4), dtype=np.float32)),
    ("count", np.array([-3, 2**40], dtype=np.int64)),
]


ARRAYS_BY_NAME = dict(ARRAYS)


def accept_all(header: Header) -> None:
    return None


def described(arrays: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    return {key: (str(a.dtype), a.shape, a.tobytes()) for key, a in arrays.items()}


def test_written_arrays_are_what_the_safetensors_package_reads(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), ARRAYS, {"kind": "test"})
    assert described(load_file(path)) == described(dict(ARRAYS))
    with safetensors.safe_open(path, framework="np") as opened:
        assert opened.metadata() == {"kind": "test"}
    assert os.listdir(tmp_path) == [path.name]


def test_read_arrays_keep_their_dtype_and_shape_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    save_file(dict(ARRAYS), str(path))  # the package's own layout
    loaded = load_arrays(str(path), accept_all)
    assert described(loaded) == described(dict(ARRAYS))
    assert loaded["step"].shape == () and loaded["step"].flags.writeable
    content = path.read_bytes()
    header = json.loads(content[8 : 8 + struct.unpack("<Q", content[:8])[0]])
    assert list(loaded) == sorted(ARRAYS_BY_NAME, key=lambda name: header[name]["data_offsets"])


@pytest.mark.parametrize(
    "array",
    [
        np.array([True, False]),
        np.array([1, 255], dtype=np.uint8),
        np.array([-1, 2], dtype=np.int16),
        np.array([-1, 2], dtype=np.int32),
        np.array([2**63 + 1], dtype=np.uint64),
        np.array([1.5, -2.0], dtype=np.float16),
    ],
    ids=str,
)
def test_any_dtype_numpy_holds_round_trips(tmp_path: Path, array: np.ndarray) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), [("a", array)], {})
    assert described(load_file(path)) == described({"a": array})
    assert described(load_arrays(str(path), accept_all)) == described({"a": array})


def test_the_accepting_function_sees_the_header_before_anything_is_read(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), ARRAYS, {"kind": "test"})
    seen: list[Header] = []

    class RefusedError(Exception):
        pass

    def refuse(header: Header) -> None:
        seen.append(header)
        raise RefusedError

    with pytest.raises(RefusedError):
        load_arrays(str(path), refuse)
    (header,) = seen
    assert header.metadata == {"kind": "test"}
    assert [(record.name, record.dtype, record.shape) for record in header.tensors][:2] == [
        ("step", "I64", ()),
        ("bias.sum", "F64", (2,)),
    ]


def test_a_dtype_numpy_cannot_hold_is_refused_unless_the_caller_refused_it_first(
    tmp_path: Path,
) -> None:
    path = write_file(
        tmp_path, safetensors_file([("w", np.ones(2, np.uint16))], codes={"w": "BF16"})
    )
    with pytest.raises(UnsupportedDtypeError) as caught:
        load_arrays(str(path), accept_all)
    assert (caught.value.name, caught.value.dtype) == ("w", "BF16")


def test_values_load_as_stored_but_a_non_finite_float_is_never_written(tmp_path: Path) -> None:
    path = write_file(tmp_path, safetensors_file([("w", np.array([1.0, np.nan]))]))
    assert np.isnan(load_arrays(str(path), accept_all)["w"][1])  # the caller checks values
    with pytest.raises(NonFiniteValueError) as caught:
        write_arrays(str(tmp_path / "new.safetensors"), [("w", np.array([np.inf]))], {})
    assert (caught.value.name, caught.value.position) == ("w", 0)
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]


def test_load_parameters_still_refuses_integer_tensors(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), ARRAYS[:3], {})
    with pytest.raises(UnsupportedDtypeError) as caught:
        load_parameters(path)
    assert (caught.value.name, caught.value.dtype) == ("step", "I64")


# JSON integers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"w":{"dtype":"F64","shape":[-0],"data_offsets":[0,0]}}', TensorEntryError),
        ('{"w":{"dtype":"F64","shape":[0],"data_offsets":[-0,0]}}', TensorEntryError),
        ('{"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8.0]}}', TensorEntryError),
        ('{"w":{"dtype":"F64","shape":[1e0],"data_offsets":[0,8]}}', TensorEntryError),
        ('{"w":{"dtype":"F64","shape":[01],"data_offsets":[0,8]}}', HeaderJsonError),
    ],
)
def test_a_number_the_safetensors_package_refuses_as_an_extent_or_offset_is_refused(
    tmp_path: Path, text: str, error: type[Exception]
) -> None:
    content = file_with_header(text, bytes(8) if '"data_offsets":[0,8' in text else b"")
    with pytest.raises(safetensors.SafetensorError):
        safetensors.deserialize(content)
    path = write_file(tmp_path, content)
    with pytest.raises(error):
        load_parameters(path)


def test_a_plain_zero_extent_and_offset_load(tmp_path: Path) -> None:
    content = file_with_header({"w": entry("F64", [0], 0, 0)})
    assert [name for name, _ in safetensors.deserialize(content)] == ["w"]
    assert load_parameters(write_file(tmp_path, content))["w"].tensor.shape == (0,)
