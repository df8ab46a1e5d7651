"""A file the safetensors package refuses is one FormatError (``checkpoint.invalid``) that names
the file and carries the package's error; the checks that stay ours (arguments, reading, keys,
dtypes) each give their own rule."""

from __future__ import annotations

import errno
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
from safetensors import SafetensorError

import llm_from_scratch.nn.checkpoint as checkpoint_module
from llm_from_scratch.errors import FileAccessError, FormatError, LlmError, OptionError
from llm_from_scratch.nn import load_metadata, load_parameters

from checkpoint_support import (
    entry,
    file_with_header,
    folder_everyone_enters,
    known_table_file,
    outcome_without_privileges,
    safetensors_file,
    write_file,
)
from checks import raises_rule


def load_error(tmp_path: Path, content: bytes, **options: Any) -> LlmError:
    path = write_file(tmp_path, content)
    with pytest.raises(LlmError) as caught:
        load_parameters(path, **options)
    assert caught.value.rule.startswith("checkpoint.")
    assert caught.value.path == str(path)  # type: ignore[attr-defined]
    return caught.value


def fields(error: BaseException, *names: str) -> tuple[object, ...]:
    return tuple(getattr(error, name) for name in names)


# Files the package refuses ----------------------------------------------------------------------

KNOWN = known_table_file()
TWO = {"a": entry("F64", [1], 0, 8), "b": entry("F64", [1], 8, 16)}
REFUSED = {
    "empty": b"",
    "under eight bytes": KNOWN[:7],
    "cut inside the header": KNOWN[:20],
    "an absurd header length": struct.pack("<Q", 2**63) + b"{}",
    "a header over 100,000,000 bytes": struct.pack("<Q", 100_000_001) + b"{}",
    "a PNG image": b"\x89PNG\r\n\x1a\n" + bytes(64),
    "a text file": b"vocabulary_size = 4\nembedding_width = 2\n",
    "not UTF-8": file_with_header(b"\xff\xfe{}"),
    "not JSON": file_with_header(b"{"),
    "a JSON array": file_with_header(b"[1, 2]"),
    "a JSON string": file_with_header(b'"text"'),
    "deeply nested JSON": file_with_header(b"[" * 100_000 + b"]" * 100_000),
    "NaN": file_with_header(b'{"w": NaN}'),
    "a lone surrogate": file_with_header('{"__metadata__":{"note":"\\ud800"}}'),
    "metadata twice": file_with_header('{"__metadata__":{},"__metadata__":{}}'),
    "a metadata number": file_with_header('{"__metadata__":{"rows":4}}'),
    "a metadata null": file_with_header('{"__metadata__":{"rows":null}}'),
    "metadata that is a string": file_with_header('{"__metadata__":"text"}'),
    "a field twice": file_with_header(
        '{"w":{"dtype":"F64","shape":[1],"shape":[1],"data_offsets":[0,8]}}', bytes(8)
    ),
    "an entry without a dtype": file_with_header({"w": {"shape": [1], "data_offsets": [0, 8]}}),
    "an entry without offsets": file_with_header({"w": {"dtype": "F64", "shape": [1]}}),
    "an entry that is an array": file_with_header({"w": [1, 2]}, bytes(8)),
    "an unknown dtype": file_with_header({"w": entry("F80", [1], 0, 10)}, bytes(10)),
    "a negative extent": file_with_header({"w": entry("F64", [-1], 0, 8)}, bytes(8)),
    "a float extent": file_with_header('{"w":{"dtype":"F64","shape":[1e0],"data_offsets":[0,8]}}'),
    "a -0 offset": file_with_header('{"w":{"dtype":"F64","shape":[0],"data_offsets":[-0,0]}}'),
    "a -0 extent": file_with_header('{"w":{"dtype":"F64","shape":[-0],"data_offsets":[0,0]}}'),
    "a float offset": file_with_header(
        '{"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8.0]}}', bytes(8)
    ),
    "a leading zero": file_with_header(
        '{"w":{"dtype":"F64","shape":[01],"data_offsets":[0,8]}}', bytes(8)
    ),
    "an extent overflowing 64 bits": file_with_header({"w": entry("F64", [2**62, 2**62, 0], 0, 0)}),
    "offsets the wrong way round": file_with_header({"w": entry("F64", [1], 8, 0)}, bytes(8)),
    "three offsets": file_with_header(
        {"w": {**entry("F64", [1], 0, 8), "data_offsets": [0, 8, 16]}}
    ),
    "a sub-byte size mismatch": file_with_header({"w": entry("F4", [3], 0, 1)}, bytes(1)),
    "a gap": file_with_header({**TWO, "b": entry("F64", [1], 16, 24)}, bytes(24)),
    "an overlap": file_with_header({**TWO, "b": entry("F64", [1], 0, 8)}, bytes(16)),
}


@pytest.mark.parametrize("content", REFUSED.values(), ids=REFUSED)
def test_a_file_the_package_refuses_is_a_format_error_carrying_the_package_error(
    tmp_path: Path, content: bytes
) -> None:
    with pytest.raises(SafetensorError):
        safetensors.deserialize(content)  # the package's own verdict on the same bytes
    error = load_error(tmp_path, content, names=[], dtype=np.float32)
    assert (type(error), error.rule) == (FormatError, "checkpoint.invalid")
    assert type(error.cause) is SafetensorError and error.__cause__ is error.cause
    assert str(error) == f"checkpoint {error.path} is not a valid safetensors file: {error.cause}"
    with raises_rule(FormatError, "checkpoint.invalid"):
        load_metadata(error.path)


# Sizes the header lies about: named by us, before the package's check -------------------------

SIZE_LIES = {
    "a shape that needs more bytes than its offsets give": (
        {"w": entry("F64", [4, 2], 0, 32)},
        ("w", "F64", (4, 2), (0, 32), 64, 32),
    ),
    "a shape that needs fewer bytes": (
        {"w": entry("F32", [2, 2], 0, 32)},
        ("w", "F32", (2, 2), (0, 32), 16, 32),
    ),
    "the second tensor in offset order": (
        {"w": entry("F64", [3], 8, 16), "ids": entry("I64", [1], 0, 8)},
        ("w", "F64", (3,), (8, 16), 24, 8),
    ),
    "extents whose product overflows 64 bits": (
        {"w": entry("F32", [2**62, 2**62], 0, 8)},
        ("w", "F32", (2**62, 2**62), (0, 8), 2**126, 8),
    ),
    "an 8-bit float": ({"w": entry("F8_E4M3", [3], 0, 2)}, ("w", "F8_E4M3", (3,), (0, 2), 3, 2)),
}
PACKAGE_SIZE_ERRORS = "invalid shape, data type, or offset for tensor|overflow computing buffer"


@pytest.mark.parametrize(("header", "facts"), SIZE_LIES.values(), ids=SIZE_LIES)
def test_a_size_lie_names_the_tensor_its_dtype_shape_and_byte_counts(
    tmp_path: Path, header: dict[str, object], facts: tuple[Any, ...]
) -> None:
    name, dtype, shape, offsets, needed, given = facts
    content = file_with_header(header, bytes(offsets[1]))  # the last tensor's end
    with pytest.raises(SafetensorError, match=PACKAGE_SIZE_ERRORS):
        safetensors.deserialize(content)  # the package's verdict names no tensor and no count
    error = load_error(tmp_path, content, names=[])
    assert type(error) is FormatError and error.__cause__ is None
    names = ("rule", "name", "dtype", "shape", "offsets", "needed", "given")
    assert fields(error, *names) == ("checkpoint.tensor-size", *facts)
    assert str(error) == (
        f"checkpoint {error.path} is not a valid safetensors file: tensor {name!r} ({dtype}, "
        f"shape {list(shape)}) needs {needed} bytes, but its data_offsets {list(offsets)} "
        f"give {given}"
    )
    with raises_rule(FormatError, "checkpoint.tensor-size"):
        load_metadata(error.path)


DATA_LIES = {
    "cut inside the data": (KNOWN[:-3], 64, 61),
    "trailing bytes": (KNOWN + bytes(5), 64, 69),
    "offsets beyond the end": (
        file_with_header({"w": entry("F64", [4], 0, 32)}, bytes(16)),
        32,
        16,
    ),
    "trailing bytes after an I64": (
        file_with_header(
            {"ids": entry("I64", [1], 0, 8), "w": entry("F64", [1], 8, 16)}, bytes(24)
        ),
        16,
        24,
    ),
}


@pytest.mark.parametrize(("content", "needed", "given"), DATA_LIES.values(), ids=DATA_LIES)
def test_data_of_another_length_than_the_tensors_take_gives_both_counts(
    tmp_path: Path, content: bytes, needed: int, given: int
) -> None:
    with pytest.raises(SafetensorError, match="incomplete metadata, file not fully covered"):
        safetensors.deserialize(content)
    error = load_error(tmp_path, content, names=[])
    assert type(error) is FormatError and error.__cause__ is None
    assert fields(error, "rule", "needed", "given") == ("checkpoint.data-size", needed, given)
    assert str(error) == (
        f"checkpoint {error.path} is not a valid safetensors file: its tensors take {needed} bytes "
        f"after the header, but the file holds {given} bytes there"
    )


def test_lying_offsets_that_do_not_follow_one_another_stay_the_package_s_error(
    tmp_path: Path,
) -> None:
    content = file_with_header({**TWO, "b": entry("F64", [2], 16, 32)}, bytes(32))  # a gap
    error = load_error(tmp_path, content)
    assert (type(error), error.rule) == (FormatError, "checkpoint.invalid")
    assert str(error.cause).endswith("invalid offset for tensor `b`")


def test_a_file_that_ends_while_it_is_read_is_a_format_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read = checkpoint_module.read_header

    def shrinking(file_name: str, file: Any) -> Any:
        checked = real_read(file_name, file)
        Path(file_name).write_bytes(KNOWN[:-8])  # shrinks in place, after the package's check
        return checked

    monkeypatch.setattr(checkpoint_module, "read_header", shrinking)
    error = load_error(tmp_path, KNOWN)
    assert (type(error), error.rule) == (FormatError, "checkpoint.invalid")
    assert type(error.cause) is EOFError
    assert str(error.cause) == f"the file ends at byte {len(KNOWN) - 8}, not {len(KNOWN)}"


def test_a_file_replaced_between_the_package_check_and_our_read_is_a_read_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file(tmp_path, KNOWN)
    real_open = checkpoint_module.safe_open

    def replaced(file_name: str, **options: Any) -> Any:
        other = write_file(tmp_path, safetensors_file([("w", np.ones(3))]), "other.safetensors")
        other.replace(file_name)  # another save renames its file over ours
        return real_open(file_name, **options)

    monkeypatch.setattr(checkpoint_module, "safe_open", replaced)
    with raises_rule(FileAccessError, "checkpoint.read") as caught:
        load_parameters(path)
    assert caught.value.path == str(path) and isinstance(caught.value.cause, FileExistsError)


def test_a_tensor_numpy_cannot_hold_is_a_format_error(tmp_path: Path) -> None:
    error = load_error(tmp_path, file_with_header({"w": entry("F64", [1] * 65, 0, 8)}, bytes(8)))
    assert (type(error), error.rule) == (FormatError, "checkpoint.invalid")
    assert type(error.cause) is ValueError


# What the package accepts -----------------------------------------------------------------------


def test_an_escaped_surrogate_pair_is_text(tmp_path: Path) -> None:
    path = write_file(tmp_path, file_with_header('{"__metadata__":{"note":"\\ud83d\\ude00"}}'))
    assert load_metadata(path) == {"note": "\U0001f600"}


def test_a_key_listed_twice_loads_its_last_entry_as_the_package_reads_it(tmp_path: Path) -> None:
    header = (
        '{"w":{"dtype":"F64","shape":[9],"data_offsets":[100,172]},'
        '"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}'
    )
    content = file_with_header(header, struct.pack("<d", 2.5))
    ((name, tensor),) = safetensors.deserialize(content)
    assert (name, tensor["shape"]) == ("w", [1])
    assert load_parameters(write_file(tmp_path, content))["w"].tensor.numpy().tolist() == [2.5]


def test_zero_length_tensors_may_share_an_offset(tmp_path: Path) -> None:
    header = {
        "a": entry("F32", [0], 0, 0),
        "b": entry("F64", [1], 0, 8),
        "c": entry("F64", [0, 5], 8, 8),
    }
    path = write_file(tmp_path, file_with_header(header, struct.pack("<d", 7.0)))
    loaded = load_parameters(path)
    assert set(loaded.names()) == {"a", "b", "c"} and loaded.names()[-1] == "c"
    assert loaded["b"].tensor.numpy().tolist() == [7.0]


# Which tensors can be loaded --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "cause", "index"),
    [("LayerNorm.weight", "name.byte", 0), ("a..b", "name.segment", 2)],
)
def test_a_key_that_breaks_the_name_rules_is_named_with_its_cause(
    tmp_path: Path, key: str, cause: str, index: int
) -> None:
    error = load_error(tmp_path, safetensors_file([(key, np.ones(2))]))
    assert (type(error), error.rule) == (FormatError, "checkpoint.tensor-dtype")
    assert fields(error, "name", "dtype") == (key, "F64")
    assert error.__cause__.rule == cause and error.__cause__.index == index  # type: ignore[attr-defined]
    assert error.requirement == (  # type: ignore[attr-defined]
        f"its key must be a parameter name ({error.__cause__}); leave it out with names="
    )


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (safetensors_file([("ids", np.arange(3, dtype=np.int64))]), "I64"),
        (safetensors_file([("ids", np.arange(3, dtype=np.int32))]), "I32"),
        (safetensors_file([("ids", np.array([True, False]))]), "BOOL"),
        (safetensors_file([("ids", np.arange(3, dtype=np.uint8))]), "U8"),
        (file_with_header({"ids": entry("F8_E4M3", [4], 0, 4)}, bytes(4)), "F8_E4M3"),
        (file_with_header({"ids": entry("F8_E5M2FNUZ", [4], 0, 4)}, bytes(4)), "F8_E5M2FNUZ"),
        (file_with_header({"ids": entry("C64", [2], 0, 16)}, bytes(16)), "C64"),
        (file_with_header({"ids": entry("U64", [1], 0, 8)}, bytes(8)), "U64"),
        (file_with_header({"ids": entry("F6_E2M3", [4], 0, 3)}, bytes(3)), "F6_E2M3"),
    ],
)
def test_a_tensor_that_is_not_a_float_cannot_be_a_parameter(
    tmp_path: Path, content: bytes, code: str
) -> None:
    error = load_error(tmp_path, content, dtype=np.float32)
    assert (type(error), error.rule) == (FormatError, "checkpoint.tensor-dtype")
    assert fields(error, "name", "dtype", "requirement") == (
        "ids",
        code,
        "parameters load from F32, F64, F16 or BF16 (leave it out with names=)",
    )


AN_OBJECT = object()


# Arguments and paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "argument", "requirement", "detail"),
    [
        ({"path": 5}, "path", "a str or an os.PathLike of str", "int"),
        ({"path": None}, "path", "a str or an os.PathLike of str", "NoneType"),
        ({"path": b"m.safetensors"}, "path", "a str or an os.PathLike of str", "bytes"),
        ({"path": ["a"]}, "path", "a str or an os.PathLike of str", "list"),
        (
            {"dtype": np.float16},
            "dtype",
            "None, numpy.float32 or numpy.float64",
            "<class 'numpy.float16'>",
        ),
        (
            {"dtype": np.int64},
            "dtype",
            "None, numpy.float32 or numpy.float64",
            "<class 'numpy.int64'>",
        ),
        ({"dtype": "f8x"}, "dtype", "None, numpy.float32 or numpy.float64", "'f8x'"),
        ({"dtype": int}, "dtype", "None, numpy.float32 or numpy.float64", "<class 'int'>"),
        ({"dtype": AN_OBJECT}, "dtype", "None, numpy.float32 or numpy.float64", repr(AN_OBJECT)),
        ({"names": "w"}, "names", "an iterable of str", "a str"),
        ({"names": b"w"}, "names", "an iterable of str", "a bytes"),
        ({"names": 5}, "names", "an iterable of str", "a int"),
        ({"names": ["w", 5]}, "names", "an iterable of str", "a int at position 1"),
    ],
)
def test_an_argument_of_the_wrong_kind_is_an_argument_error(
    options: dict[str, Any], argument: str, requirement: str, detail: str
) -> None:
    with raises_rule(OptionError, "checkpoint.argument") as caught:
        load_parameters(**{"path": "model.safetensors", **options})
    error = caught.value
    assert (error.argument, error.requirement, error.detail) == (argument, requirement, detail)
    assert isinstance(error, TypeError)
    assert str(error) == f"checkpoint {argument} must be {requirement}, got {detail}"


def test_a_missing_file_or_a_directory_is_a_read_error(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.safetensors", tmp_path):
        with raises_rule(FileAccessError, "checkpoint.read") as caught:
            load_parameters(path)
        assert caught.value.path == str(path) and isinstance(caught.value.cause, OSError)
        assert caught.value.__cause__ is caught.value.cause


def test_a_file_the_user_may_not_read_is_a_read_error() -> None:
    with folder_everyone_enters() as folder:
        path = write_file(folder, known_table_file())
        path.chmod(0o000)
        report = outcome_without_privileges(lambda: load_parameters(path))
        assert report == f"FileAccessError checkpoint.read PermissionError {errno.EACCES}"
