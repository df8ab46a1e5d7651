"""Each way a file can break the safetensors format gives its own CheckpointError."""

from __future__ import annotations

import errno
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.nn import CheckpointError, load_metadata, load_parameters
from llm_from_scratch.nn.checkpoint import (
    CheckpointPathTypeError,
    CheckpointReadError,
    DuplicateTensorKeyError,
    HeaderJsonError,
    HeaderSizeError,
    LoadDtypeError,
    MetadataFormatError,
    TensorEntryError,
    TensorNameError,
    TensorNamesTypeError,
    TensorOffsetsError,
    TensorSizeMismatchError,
    TrailingDataError,
    TruncatedCheckpointError,
    UnsupportedDtypeError,
)
from llm_from_scratch.nn.init import EmptyNameSegmentError, InvalidNameByteError

from checkpoint_support import (
    entry,
    file_with_header,
    folder_everyone_enters,
    known_table_file,
    outcome_without_privileges,
    safetensors_file,
    write_file,
)


def load_error(tmp_path: Path, content: bytes, **options: Any) -> CheckpointError:
    path = write_file(tmp_path, content)
    with pytest.raises(CheckpointError) as caught:
        load_parameters(path, **options)
    assert caught.value.path == str(path)  # type: ignore[attr-defined]
    return caught.value


def fields(error: BaseException, *names: str) -> tuple[object, ...]:
    return tuple(getattr(error, name) for name in names)


# Sizes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 7])
def test_a_file_under_eight_bytes_is_truncated(tmp_path: Path, size: int) -> None:
    error = load_error(tmp_path, known_table_file()[:size])
    assert type(error) is TruncatedCheckpointError
    assert fields(error, "expected", "actual") == (8, size)


def test_a_file_cut_inside_the_header_is_truncated(tmp_path: Path) -> None:
    whole = known_table_file()
    length = struct.unpack("<Q", whole[:8])[0]
    error = load_error(tmp_path, whole[:20])
    assert type(error) is TruncatedCheckpointError
    assert fields(error, "expected", "actual") == (8 + length, 20)


def test_a_file_cut_inside_the_data_is_truncated(tmp_path: Path) -> None:
    whole = known_table_file()
    error = load_error(tmp_path, whole[:-3])
    assert type(error) is TruncatedCheckpointError
    assert fields(error, "expected", "actual") == (len(whole), len(whole) - 3)


def test_bytes_after_the_last_tensor_are_trailing_data(tmp_path: Path) -> None:
    whole = known_table_file()
    error = load_error(tmp_path, whole + b"\x00" * 5)
    assert type(error) is TrailingDataError
    assert fields(error, "expected", "actual") == (len(whole), len(whole) + 5)


@pytest.mark.parametrize("length", [100_000_001, 2**63, 2**64 - 1])
def test_an_absurd_header_length_is_a_header_size_error(tmp_path: Path, length: int) -> None:
    error = load_error(tmp_path, struct.pack("<Q", length) + b"{}")
    assert type(error) is HeaderSizeError
    assert fields(error, "length", "limit") == (length, 100_000_000)


def test_text_and_image_files_are_refused_as_not_safetensors(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    assert type(load_error(tmp_path, png)) is HeaderSizeError
    text = b"vocabulary_size = 4\nembedding_width = 2\n"
    assert isinstance(load_error(tmp_path, text), HeaderSizeError | TruncatedCheckpointError)


# The header text --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "detail_part"),
    [
        (b"\xff\xfe{}", "utf-8"),
        (b"{", "Expecting"),
        (b"[1, 2]", "JSON array, not an object"),
        (b'"text"', "JSON string, not an object"),
        (b'{"w": NaN}', "NaN is not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "maximum recursion depth"),
    ],
)
def test_a_header_that_is_not_one_json_object_is_a_header_json_error(
    tmp_path: Path, header: bytes, detail_part: str
) -> None:
    error = load_error(tmp_path, file_with_header(header))
    assert type(error) is HeaderJsonError
    assert detail_part.lower() in error.detail.lower()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "header",
    [
        '{"__metadata__":{"note":"\\ud800"}}',
        '{"__metadata__":{"\\udc00x":"note"}}',
        '{"w":{"dtype":"F64","shape":[],"data_offsets":[0,8],"extra":["\\ud83d"]}}',
    ],
)
def test_an_escaped_lone_surrogate_is_not_text(tmp_path: Path, header: str) -> None:
    error = load_error(tmp_path, file_with_header(header, bytes(8 if "w" in header else 0)))
    assert type(error) is HeaderJsonError
    assert "escapes a lone UTF-16 surrogate" in error.detail  # type: ignore[attr-defined]


def test_an_escaped_surrogate_pair_is_text(tmp_path: Path) -> None:
    path = write_file(tmp_path, file_with_header('{"__metadata__":{"note":"\\ud83d\\ude00"}}'))
    assert load_metadata(path) == {"note": "\U0001f600"}


def test_a_key_listed_twice_is_a_duplicate_even_with_equal_entries(tmp_path: Path) -> None:
    tensor = '{"dtype":"F64","shape":[1],"data_offsets":[0,8]}'
    header = '{"w":' + tensor + ',"v":' + tensor + ',"w":' + tensor + "}"
    error = load_error(tmp_path, file_with_header(header, bytes(8)))
    assert type(error) is DuplicateTensorKeyError and error.name == "w"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("metadata", "detail"),
    [
        ('"text"', "got a JSON string"),
        ('{"a":"1","b":2}', "the value of 'b' is a JSON number"),
        ('{"a":"1","a":"2"}', "key 'a' appears twice"),
        ('{"a":null}', "the value of 'a' is a JSON null"),
    ],
)
def test_metadata_must_map_strings_to_strings(tmp_path: Path, metadata: str, detail: str) -> None:
    error = load_error(tmp_path, file_with_header('{"__metadata__":' + metadata + "}"))
    assert type(error) is MetadataFormatError and error.detail == detail  # type: ignore[attr-defined]
    path = write_file(tmp_path, file_with_header('{"__metadata__":' + metadata + "}"))
    with pytest.raises(MetadataFormatError):
        load_metadata(path)


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ([1, 2], "the entry is a JSON array, not an object"),
        ({"shape": [1], "data_offsets": [0, 8]}, "unknown dtype None"),
        (entry("f64", [1], 0, 8), "unknown dtype 'f64'"),
        (entry("F64", [1.0], 0, 8), "shape must be a list of non-negative integers"),  # type: ignore[list-item]
        (entry("F64", [-1], 0, 8), "shape must be a list of non-negative integers"),
        (entry("F64", [True], 0, 8), "shape must be a list of non-negative integers"),
        ({"dtype": "F64", "data_offsets": [0, 8]}, "shape must be a list of non-negative integers"),
        (
            entry("F64", [2**62, 2**62, 0], 0, 0),
            "shape [4611686018427387904, 4611686018427387904, 0] does not fit a 64-bit layout",
        ),
        (entry("F64", [1], 8, 0), "data_offsets must be two integers 0 <= begin <= end"),
        (entry("F64", [1], -8, 0), "data_offsets must be two integers 0 <= begin <= end"),
        (
            {"dtype": "F64", "shape": [1], "data_offsets": [0, 8, 16]},
            "data_offsets must be two integers 0 <= begin <= end",
        ),
        ({"dtype": "F64", "shape": [1]}, "data_offsets must be two integers 0 <= begin <= end"),
    ],
)
def test_a_malformed_tensor_entry_is_a_tensor_entry_error(
    tmp_path: Path, value: object, detail: str
) -> None:
    error = load_error(tmp_path, file_with_header({"w": value}, bytes(8)))
    assert type(error) is TensorEntryError
    assert fields(error, "name", "detail") == ("w", detail)


def test_a_field_listed_twice_in_an_entry_is_a_tensor_entry_error(tmp_path: Path) -> None:
    header = '{"w":{"dtype":"F64","shape":[1],"shape":[1],"data_offsets":[0,8]}}'
    error = load_error(tmp_path, file_with_header(header, bytes(8)))
    assert type(error) is TensorEntryError
    assert fields(error, "name", "detail") == ("w", "key 'shape' appears twice")


def test_a_shape_numpy_cannot_hold_is_a_tensor_entry_error(tmp_path: Path) -> None:
    error = load_error(tmp_path, file_with_header({"w": entry("F64", [1] * 65, 0, 8)}, bytes(8)))
    assert type(error) is TensorEntryError and "NumPy cannot hold it" in error.detail  # type: ignore[attr-defined]


# Sizes and offsets that lie ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "shape", "span", "expected"),
    [("F64", [4, 2], 32, 64), ("F32", [3], 16, 12), ("F16", [], 4, 2), ("F4", [3], 1, 2)],
)
def test_offsets_spanning_another_byte_count_than_the_shape_needs_are_a_size_mismatch(
    tmp_path: Path, dtype: str, shape: list[int], span: int, expected: int
) -> None:
    error = load_error(tmp_path, file_with_header({"w": entry(dtype, shape, 0, span)}, bytes(span)))
    assert type(error) is TensorSizeMismatchError
    assert fields(error, "name", "dtype", "shape", "expected", "actual") == (
        "w",
        dtype,
        tuple(shape),
        expected,
        span,
    )


@pytest.mark.parametrize(
    ("entries", "culprit", "begin", "end", "expected"),
    [
        ({"a": ("F64", 8, 16), "b": ("F64", 16, 24)}, "a", 8, 16, 0),  # nothing at byte 0
        ({"a": ("F64", 0, 8), "b": ("F64", 16, 24)}, "b", 16, 24, 8),  # a gap
        ({"a": ("F64", 0, 16), "b": ("F64", 8, 24)}, "b", 8, 24, 16),  # an overlap
        ({"a": ("F64", 0, 8), "b": ("F64", 0, 8)}, "b", 0, 8, 8),  # the same bytes twice
    ],
)
def test_tensors_that_leave_gaps_or_overlap_are_an_offsets_error(
    tmp_path: Path,
    entries: dict[str, tuple[str, int, int]],
    culprit: str,
    begin: int,
    end: int,
    expected: int,
) -> None:
    header = {
        name: entry(dtype, [(stop - start) // 8], start, stop)
        for name, (dtype, start, stop) in entries.items()
    }
    error = load_error(tmp_path, file_with_header(header, bytes(32)))
    assert type(error) is TensorOffsetsError
    assert fields(error, "name", "begin", "end", "expected") == (culprit, begin, end, expected)


def test_zero_length_tensors_may_share_an_offset(tmp_path: Path) -> None:
    header = {
        "a": entry("F32", [0], 0, 0),
        "b": entry("F64", [1], 0, 8),
        "c": entry("F64", [0, 5], 8, 8),
    }
    path = write_file(tmp_path, file_with_header(header, struct.pack("<d", 7.0)))
    loaded = load_parameters(path)
    assert loaded.names() == ("a", "b", "c")
    assert loaded["b"].tensor.numpy().tolist() == [7.0]


def test_offsets_beyond_the_end_of_the_file_are_truncation(tmp_path: Path) -> None:
    content = file_with_header({"w": entry("F64", [4], 0, 32)}, bytes(16))
    error = load_error(tmp_path, content)
    assert type(error) is TruncatedCheckpointError
    assert error.expected - error.actual == 16  # type: ignore[attr-defined]


# Which tensors can be loaded --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "cause", "index"),
    [("LayerNorm.weight", InvalidNameByteError, 0), ("a..b", EmptyNameSegmentError, 2)],
)
def test_a_key_that_breaks_the_name_rules_is_named_with_its_cause(
    tmp_path: Path, key: str, cause: type, index: int
) -> None:
    error = load_error(tmp_path, safetensors_file([(key, np.ones(2))]))
    assert type(error) is TensorNameError and error.name == key  # type: ignore[attr-defined]
    assert type(error.cause) is cause and error.cause.index == index  # type: ignore[attr-defined]
    assert error.__cause__ is error.cause  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("array", "code"),
    [
        (np.arange(3, dtype=np.int64), "I64"),
        (np.arange(3, dtype=np.int32), "I32"),
        (np.array([True, False]), "BOOL"),
        (np.arange(3, dtype=np.uint8), "U8"),
    ],
)
def test_a_tensor_that_is_not_a_float_is_an_unsupported_dtype(
    tmp_path: Path, array: np.ndarray, code: str
) -> None:
    error = load_error(tmp_path, safetensors_file([("ids", array)]), dtype=np.float32)
    assert type(error) is UnsupportedDtypeError
    assert fields(error, "name", "dtype") == ("ids", code)


@pytest.mark.parametrize(
    ("code", "count", "length"),
    [("F8_E4M3", 4, 4), ("F8_E5M2FNUZ", 4, 4), ("C64", 2, 16), ("U64", 1, 8), ("F6_E2M3", 4, 3)],
)
def test_every_format_dtype_is_known_and_the_non_floats_are_unsupported(
    tmp_path: Path, code: str, count: int, length: int
) -> None:
    content = file_with_header({"x": entry(code, [count], 0, length)}, bytes(length))
    error = load_error(tmp_path, content)
    assert type(error) is UnsupportedDtypeError and error.dtype == code  # type: ignore[attr-defined]


# Arguments and paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [5, None, b"model.safetensors", ["a"]])
def test_a_path_that_is_not_a_path_is_a_type_error(path: object) -> None:
    with pytest.raises(CheckpointPathTypeError) as caught:
        load_parameters(path)  # type: ignore[arg-type]
    assert caught.value.path_type == type(path).__name__
    assert isinstance(caught.value, TypeError)


@pytest.mark.parametrize("dtype", [np.float16, np.int64, "f8x", int, object()])
def test_a_dtype_other_than_float32_or_float64_is_refused(dtype: object) -> None:
    with pytest.raises(LoadDtypeError) as caught:
        load_parameters("model.safetensors", dtype=dtype)  # type: ignore[arg-type]
    assert caught.value.dtype is dtype


@pytest.mark.parametrize(
    ("names", "detail"),
    [("w", "a str"), (b"w", "a bytes"), (5, "a int"), (["w", 5], "a int at position 1")],
)
def test_names_must_be_an_iterable_of_str(names: object, detail: str) -> None:
    with pytest.raises(TensorNamesTypeError) as caught:
        load_parameters("model.safetensors", names=names)  # type: ignore[arg-type]
    assert caught.value.detail == detail


def test_a_missing_file_or_a_directory_is_a_read_error(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.safetensors", tmp_path):
        with pytest.raises(CheckpointReadError) as caught:
            load_parameters(path)
        assert caught.value.path == str(path) and isinstance(caught.value.cause, OSError)
        assert caught.value.__cause__ is caught.value.cause


def test_a_file_the_user_may_not_read_is_a_read_error() -> None:
    with folder_everyone_enters() as folder:
        path = write_file(folder, known_table_file())
        path.chmod(0o000)
        report = outcome_without_privileges(lambda: load_parameters(path))
        assert report == f"CheckpointReadError PermissionError {errno.EACCES}"


def test_the_header_is_checked_before_any_tensor_is_considered(tmp_path: Path) -> None:
    content = file_with_header(
        {"ids": entry("I64", [1], 0, 8), "w": entry("F64", [1], 8, 16)}, bytes(24)
    )
    assert type(load_error(tmp_path, content)) is TrailingDataError
