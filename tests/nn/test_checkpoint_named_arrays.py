"""The checkpoint module's package-internal functions for named arrays of any dtype NumPy and
the format share (``write_arrays``, ``opened`` and ``read_tensor``), which the optimizer state
files use: what they write, the safetensors package reads byte for byte, and the other way
round; ``load_parameters`` keeps its rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
from safetensors.numpy import load_file, save_file

from llm_from_scratch.errors import FormatError, NonFiniteError, OptionError
from llm_from_scratch.nn import load_parameters
from llm_from_scratch.nn.checkpoint import STORED, StoredTensor, opened, read_tensor, write_arrays

from checkpoint_support import entry, file_with_header, safetensors_file, write_file
from checks import raises_rule

ARRAYS: list[tuple[str, np.ndarray]] = [
    ("table.exp_avg", np.arange(6, dtype=np.float32).reshape(3, 2)),
    ("step", np.array(7, dtype=np.int64)),
    ("bias.sum", np.array([0.5, 0.25])),
    ("empty", np.zeros((0, 4), dtype=np.float32)),
    ("count", np.array([-3, 2**40], dtype=np.int64)),
]


def described(arrays: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    return {key: (str(a.dtype), a.shape, a.tobytes()) for key, a in arrays.items()}


def read_all(path: Path, finite: bool = False) -> dict[str, np.ndarray]:
    """Every tensor as stored, as the state files read them."""
    with opened(str(path)) as (file, tensors, _):
        return {
            tensor.name: read_tensor(
                str(path), file, tensor, STORED[tensor.dtype].newbyteorder("="), finite
            )
            for tensor in tensors
        }


def test_written_arrays_are_what_the_safetensors_package_reads(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), ARRAYS, {"kind": "test"})
    assert described(load_file(path)) == described(dict(ARRAYS))
    with safetensors.safe_open(path, framework="np") as opened_file:
        assert opened_file.metadata() == {"kind": "test"}
    assert os.listdir(tmp_path) == [path.name]


@pytest.mark.parametrize(
    "metadata", [None, {"note": "é"}]
)  # the package's metadata order is random
def test_written_files_are_byte_for_byte_the_package_files_when_the_order_agrees(
    tmp_path: Path, metadata: dict[str, str] | None
) -> None:
    arrays = dict(ARRAYS, half=np.ones(3, np.float16), flag=np.array([True, False]))
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_file(arrays, str(theirs), metadata=metadata)
    with safetensors.safe_open(theirs, framework="np") as opened_file:
        order = opened_file.offset_keys()  # by dtype, then by name: ours keeps the order given
    write_arrays(str(ours), [(name, arrays[name]) for name in order], metadata or {})
    assert ours.read_bytes() == theirs.read_bytes()


def test_read_arrays_keep_their_dtype_and_shape_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    save_file(dict(ARRAYS), str(path))  # the package's own layout
    loaded = read_all(path)
    assert described(loaded) == described(dict(ARRAYS))
    assert loaded["step"].shape == () and loaded["step"].flags.writeable
    with safetensors.safe_open(path, framework="np") as opened_file:
        assert list(loaded) == opened_file.offset_keys()


@pytest.mark.parametrize(
    "array",
    [
        np.array([True, False]),
        np.array([1, 255], dtype=np.uint8),
        np.array([-1, 2], dtype=np.int16),
        np.array([-1, 2], dtype=np.int32),
        np.array([2**63 + 1], dtype=np.uint64),
        np.array([1.5, -2.0], dtype=np.float16),
        np.array([1 + 2j], dtype=np.complex64),
        np.arange(12.0).reshape(3, 4)[:, ::2],  # not contiguous
        np.arange(4, dtype=">f8"),  # big-endian
    ],
    ids=str,
)
def test_any_dtype_numpy_holds_round_trips(tmp_path: Path, array: np.ndarray) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), [("a", array)], {})
    native = array.astype(array.dtype.newbyteorder("="))
    assert described(load_file(path)) == described({"a": native})
    assert described(read_all(path)) == described({"a": native})


def test_opened_gives_the_checked_tensors_and_metadata_before_any_data_is_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), ARRAYS, {"kind": "test"})
    header_end = path.stat().st_size - sum(array.nbytes for _, array in ARRAYS)
    with opened(str(path)) as (file, tensors, metadata):
        assert file.tell() == 0  # the header is read by position: the file's own is untouched
    assert metadata == {"kind": "test"}
    assert tensors[:3] == [
        StoredTensor("step", "I64", (), header_end),
        StoredTensor("bias.sum", "F64", (2,), header_end + 8),
        StoredTensor("count", "I64", (2,), header_end + 24),
    ]


def test_values_read_as_stored_unless_asked_but_a_non_finite_float_is_never_written(
    tmp_path: Path,
) -> None:
    path = write_file(tmp_path, safetensors_file([("w", np.array([1.0, np.nan]))]))
    assert np.isnan(read_all(path)["w"][1])  # the caller checks values
    with raises_rule(NonFiniteError, "checkpoint.non-finite") as caught:
        read_all(path, finite=True)
    assert (caught.value.name, caught.value.position) == ("w", 1)
    with raises_rule(NonFiniteError, "checkpoint.non-finite") as caught:
        write_arrays(str(tmp_path / "new.safetensors"), [("w", np.array([np.inf]))], {})
    assert (caught.value.name, caught.value.position) == ("w", 0)
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]


def test_a_tensor_named_like_the_metadata_is_refused_by_name_and_never_written(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "new.safetensors")
    arrays = [("step", np.array(1)), ("__metadata__", np.ones(1))]
    with raises_rule(FormatError, "checkpoint.reserved-name") as caught:
        write_arrays(path, arrays, {"__metadata__": "a metadata key may be any text"})
    assert (caught.value.path, caught.value.name) == (path, "__metadata__")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["\ud800", "step\udcff", "\udfff.x"])
def test_a_tensor_name_that_is_not_text_is_refused_before_anything_is_written(
    tmp_path: Path, name: str
) -> None:
    path = str(tmp_path / "new.safetensors")
    with raises_rule(OptionError, "checkpoint.argument") as caught:
        write_arrays(path, [("step", np.array(1)), (name, np.ones(1))], {})
    assert (caught.value.argument, caught.value.requirement) == ("tensor names", "text")
    assert caught.value.detail.startswith(f"the name {name!r}, where ")
    assert os.listdir(tmp_path) == []


def test_load_parameters_still_refuses_integer_tensors(tmp_path: Path) -> None:
    path = tmp_path / "arrays.safetensors"
    write_arrays(str(path), ARRAYS[:3], {})
    with raises_rule(FormatError, "checkpoint.tensor-dtype") as caught:
        load_parameters(path)
    assert (caught.value.name, caught.value.dtype) == ("step", "I64")


def test_a_plain_zero_extent_and_offset_load(tmp_path: Path) -> None:
    content = file_with_header({"w": entry("F64", [0], 0, 0)})
    assert [name for name, _ in safetensors.deserialize(content)] == ["w"]
    assert load_parameters(write_file(tmp_path, content))["w"].tensor.shape == (0,)
