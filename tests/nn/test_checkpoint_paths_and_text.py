"""Checkpoints take any path and any text from outside the process, typed: a path the system
cannot take, a folder or a missing folder is ``checkpoint.write`` or ``checkpoint.read`` (never a
raw ``ValueError`` or ``UnicodeEncodeError``) before anything is created; metadata that is not
text is ``checkpoint.argument``; a tensor under the format's reserved name ``__metadata__``
``checkpoint.reserved-name``.

The path property takes its oracle from the system (plain ``open(..., "xb")`` of the same name
in a folder of its own); the metadata and name properties from the round trip through the
``safetensors`` package.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import safetensors
from hypothesis import event, given
from hypothesis import strategies as st

from llm_from_scratch.errors import FileAccessError, FormatError, OptionError
from llm_from_scratch.nn import NamedParameter, load_metadata, load_parameters, save_parameters
from llm_from_scratch.nn.checkpoint import write_arrays
from llm_from_scratch.tensor import Tensor

from checkpoint_support import known_parameters
from checks import raises_rule, system_creates, within_seconds
from conftest import KNOWN_TABLE, unavailable
from strategies import path_names

EMOJI_NAME = "😀" * 60  # 240 bytes in UTF-8: a name open() creates
#: Any text, lone surrogates (which UTF-8 cannot encode) drawn often enough to matter.
any_text = st.text(
    st.one_of(st.characters(codec=None, categories=None), st.sampled_from("\ud800\udcff\udfff")),
    max_size=12,
)


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loaded_values(path: str) -> list[float]:
    return load_parameters(path)["token_embedding.weight"].tensor.numpy().reshape(-1).tolist()


# Paths ------------------------------------------------------------------------------------------


@given(path_names())
def test_any_path_saves_and_loads_or_is_a_typed_error_that_creates_nothing(name: str) -> None:
    with tempfile.TemporaryDirectory() as oracle, tempfile.TemporaryDirectory() as folder:
        expected = system_creates(oracle, name)
        path = f"{folder}/{name}"
        try:
            save_parameters(path, known_parameters(), {"name": "kept"})
        except FileAccessError as error:
            assert error.rule == "checkpoint.write"
            event(f"write error {errno.errorcode.get(error.cause.errno or 0, '?')}")
            assert not expected and error.path == path and isinstance(error.cause, OSError)
            assert "\n" not in str(error.cause)
            assert os.listdir(folder) == []
            with raises_rule(FileAccessError, "checkpoint.read") as caught:
                load_metadata(path)
            assert caught.value.path == path and isinstance(caught.value.cause, OSError)
            return
        event("saved")
        assert expected
        assert loaded_values(path) == list(KNOWN_TABLE)
        assert load_metadata(path) == {"name": "kept"}
        assert os.listdir(folder) == os.listdir(oracle)


@pytest.mark.parametrize("given_as", [str, Path])
def test_a_240_byte_name_of_60_emoji_saves_and_loads(tmp_path: Path, given_as: type) -> None:
    path = given_as(tmp_path / EMOJI_NAME)
    save_parameters(path, known_parameters())
    assert loaded_values(str(path)) == list(KNOWN_TABLE)
    save_parameters(path, known_parameters(), {"again": "yes"})  # over the first, atomically
    assert load_metadata(path) == {"again": "yes"}
    assert os.listdir(tmp_path) == [EMOJI_NAME]


PATH_FAULTS = [
    pytest.param("model\0.safetensors", errno.EINVAL, id="NUL"),
    pytest.param("\ud800.safetensors", errno.EILSEQ, id="lone surrogate"),
    pytest.param("😀" * 64, errno.ENAMETOOLONG, id="256 bytes"),
    pytest.param("missing/model.safetensors", errno.ENOENT, id="missing folder"),
    pytest.param("", errno.EISDIR, id="the folder"),
]


@pytest.mark.parametrize(("name", "code"), PATH_FAULTS)
def test_a_path_the_system_cannot_take_is_typed_for_each_call(
    tmp_path: Path, name: str, code: int
) -> None:
    path = f"{tmp_path}/{name}"
    calls: list[tuple[str, Callable[[], object]]] = [
        ("checkpoint.write", lambda: save_parameters(path, known_parameters())),
        ("checkpoint.read", lambda: load_parameters(path)),
        ("checkpoint.read", lambda: load_metadata(path)),
    ]
    for rule, call in calls:
        with raises_rule(FileAccessError, rule, path=path) as caught:
            call()
        error = caught.value
        if rule == "checkpoint.write" or code != errno.ENOENT:
            assert error.cause.errno == code  # type: ignore[attr-defined]
    assert os.listdir(tmp_path) == []


def test_a_fifo_is_refused_at_once_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    with within_seconds(5.0), raises_rule(FileAccessError, "checkpoint.read") as caught:
        load_parameters(fifo)
    assert caught.value.cause.errno == errno.EINVAL
    assert str(caught.value.cause).endswith("not a regular file (a pipe or a device)")


def test_an_endless_device_is_refused_at_once() -> None:
    if not os.path.exists("/dev/zero"):
        unavailable("needs a /dev/zero device", ci_provides=True)
    with within_seconds(1.0), raises_rule(FileAccessError, "checkpoint.read") as caught:
        load_metadata("/dev/zero")
    assert caught.value.cause.errno == errno.EINVAL


# Text in the header -----------------------------------------------------------------------------


@given(st.dictionaries(any_text, any_text, max_size=4))
def test_any_metadata_round_trips_or_is_refused_before_anything_is_written(
    metadata: dict[str, str],
) -> None:
    fine = all(encodable(key) and encodable(value) for key, value in metadata.items())
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.safetensors")
        try:
            save_parameters(path, known_parameters(), metadata)
        except OptionError as error:
            assert error.rule == "checkpoint.argument"
            event("not text")
            assert not fine and error.argument == "metadata" and error.requirement == "text"
            assert "lone surrogate" in error.detail and "\n" not in str(error)
            assert os.listdir(folder) == []
            return
        event("round trip")
        assert fine
        assert load_metadata(path) == metadata
        with open(path, "rb") as stream:
            assert safetensors.deserialize(stream.read())[0][0] == "token_embedding.weight"


def test_metadata_that_is_not_text_is_refused_before_the_path() -> None:
    with raises_rule(OptionError, "checkpoint.argument") as caught:
        save_parameters("/no/such/folder/m.safetensors", known_parameters(), {"a": "\ud800"})
    error = caught.value
    assert (error.argument, error.requirement) == ("metadata", "text")
    assert error.detail == (
        "the value of 'a' '\\ud800', where '\\ud800' at index 0 is a lone surrogate, which "
        "UTF-8 cannot encode"
    )


names = st.one_of(any_text, st.sampled_from(["__metadata__", "step", "a.b", ""]))


@given(st.lists(names, min_size=1, max_size=4, unique=True), st.dictionaries(any_text, any_text))
def test_tensor_names_round_trip_unless_reserved_or_not_text(
    tensor_names: list[str], metadata: dict[str, str]
) -> None:
    arrays = [(name, np.full(2, float(index))) for index, name in enumerate(tensor_names)]
    texts = [*tensor_names, *metadata, *metadata.values()]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "arrays.safetensors")
        try:
            write_arrays(path, arrays, metadata)
        except FormatError as error:
            assert error.rule == "checkpoint.reserved-name"
            event("reserved")
            assert error.name == "__metadata__" in tensor_names
            assert os.listdir(folder) == []
            return
        except OptionError as error:
            assert error.rule == "checkpoint.argument"
            event(f"not text: {error.argument}")
            assert "__metadata__" not in tensor_names
            assert not all(encodable(text) for text in texts)
            assert os.listdir(folder) == []
            return
        event("round trip")
        assert "__metadata__" not in tensor_names and all(encodable(text) for text in texts)
        with open(path, "rb") as stream:
            found = safetensors.deserialize(stream.read())
        assert sorted(name for name, _ in found) == sorted(tensor_names)
        assert load_metadata(path) == metadata


def test_a_parameter_named_like_the_metadata_is_refused_by_name_before_the_path() -> None:
    reserved = NamedParameter.from_tensor("__metadata__", Tensor((2,), [1.0, 2.0]))
    path = "/no/such/folder/m.safetensors"
    with raises_rule(FormatError, "checkpoint.reserved-name") as caught:
        save_parameters(path, [*known_parameters(), reserved])
    assert (caught.value.path, caught.value.name) == (path, "__metadata__")
    assert "'__metadata__' is reserved by the safetensors format" in str(caught.value)
