"""Property: a corrupted file gives an error of a checkpoint rule or a correct load, nothing else.

Each example starts from a valid file of a few small float tensors, corrupts it one way
(truncation, a byte flip in the header or the data, lying offsets, a lying header length, or a
random edit of the header's JSON), and loads it. The only outcomes allowed are an error of a
``checkpoint.*`` rule, or a load whose values equal what the safetensors package itself reads
from the same bytes.
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
from hypothesis import event, given
from hypothesis import strategies as st
from safetensors import SafetensorError

from llm_from_scratch.errors import FormatError, LlmError
from llm_from_scratch.nn import load_metadata, load_parameters

from checkpoint_support import file_with_header, safetensors_file, write_file

NAMES = ("token_embedding.weight", "output.bias", "norm.scale")
DTYPES = (np.float32, np.float64, np.float16)


@st.composite
def valid_files(draw: st.DrawFn) -> bytes:
    count = draw(st.integers(1, 3))
    tensors = []
    for name in NAMES[:count]:
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
        dtype = draw(st.sampled_from(DTYPES))
        values = draw(
            st.lists(
                st.floats(-1e4, 1e4, width=16),
                min_size=int(np.prod(shape)),
                max_size=int(np.prod(shape)),
            )
        )
        tensors.append((name, np.array(values, dtype=dtype).reshape(shape)))
    metadata = draw(st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4)))
    return safetensors_file(tensors, metadata)


def split(content: bytes) -> tuple[dict[str, Any], bytes]:
    length = struct.unpack("<Q", content[:8])[0]
    return json.loads(content[8 : 8 + length]), content[8 + length :]


def check_outcome(content: bytes) -> None:
    """Load ``content``; any error must be a checkpoint rule's, any success must be right."""
    with tempfile.TemporaryDirectory() as folder:
        path = write_file(Path(folder), content)
        try:
            loaded = load_parameters(path, dtype=np.float64)
        except LlmError as error:
            assert error.rule.startswith("checkpoint."), error
            event(error.rule)
            if error.rule in ("checkpoint.tensor-size", "checkpoint.data-size"):
                with pytest.raises(SafetensorError):  # our header check refuses only what the
                    safetensors.deserialize(content)  # package refuses too
            # The metadata reader stops after the header, so it may succeed where the loader
            # failed later; it must not fail in any other way.
            try:
                load_metadata(path)
            except LlmError as metadata_error:
                assert metadata_error.rule.startswith("checkpoint."), metadata_error
            return
        event("loaded")
        with safetensors.safe_open(path, framework="np") as opened:
            assert load_metadata(path) == (opened.metadata() or {})
    reference = dict(safetensors.deserialize(content))  # the package's own reading
    assert set(loaded.names()) == set(reference)
    for parameter in loaded:
        expected = reference_values(reference[parameter.name])
        assert parameter.tensor.numpy().tobytes() == expected.tobytes()


def reference_values(tensor: dict[str, Any]) -> np.ndarray:
    """A tensor the package read, as float64: its raw bytes decoded by dtype code."""
    raw = bytes(tensor["data"])
    if tensor["dtype"] == "BF16":
        values = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        values = np.frombuffer(raw, {"F16": "<f2", "F32": "<f4", "F64": "<f8"}[tensor["dtype"]])
    return values.astype(np.float64).reshape(tensor["shape"])


@given(valid_files(), st.data())
def test_truncation_anywhere_is_a_checkpoint_error(content: bytes, data: st.DataObject) -> None:
    length = data.draw(st.integers(0, len(content) - 1))
    check_outcome(content[:length])


@given(valid_files(), st.data())
def test_a_byte_flip_in_the_header_or_the_data_is_an_error_or_a_correct_load(
    content: bytes, data: st.DataObject
) -> None:
    data_start = 8 + struct.unpack("<Q", content[:8])[0]
    in_data = data_start < len(content) and data.draw(st.booleans())
    position = data.draw(st.integers(data_start if in_data else 0, len(content) - 1))
    flip = data.draw(st.integers(1, 255))
    corrupted = bytearray(content)
    corrupted[position] ^= flip
    check_outcome(bytes(corrupted))


@given(valid_files(), st.data())
def test_lying_offsets_are_an_error_or_a_correct_load(content: bytes, data: st.DataObject) -> None:
    header, body = split(content)
    name = data.draw(st.sampled_from(sorted(key for key in header if key != "__metadata__")))
    size = len(body)
    near = st.integers(-2, size + 9)
    offsets = data.draw(
        st.tuples(near, near).map(list)
        | st.lists(near | st.integers(0, 2**64), min_size=0, max_size=3)
    )
    header[name]["data_offsets"] = offsets
    check_outcome(file_with_header(header, body))


@given(valid_files(), st.integers(17, 2**64 - 1) | st.integers(-16, -1) | st.integers(1, 16))
def test_a_lying_header_length_is_an_error_or_a_correct_load(content: bytes, lie: int) -> None:
    length = struct.unpack("<Q", content[:8])[0]
    told = lie if lie > 16 else max(0, length + lie)
    check_outcome(struct.pack("<Q", told) + content[8:])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats() | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def json_edits(draw: st.DrawFn, header: dict[str, Any]) -> dict[str, Any]:
    """One random edit of the header object: a whole entry, one field, or the metadata."""
    keys = sorted(header)
    key = draw(st.sampled_from([*keys, "__metadata__", "new.tensor"]))
    kind = draw(st.sampled_from(["delete", "replace", "field", "dtype", "shape"]))
    edited = json.loads(json.dumps(header))
    if kind == "delete":
        edited.pop(key, None)
    elif kind == "replace" or not isinstance(edited.get(key), dict):
        edited[key] = draw(json_values)
    elif kind == "field":
        field = draw(st.sampled_from(["dtype", "shape", "data_offsets", "extra"]))
        edited[key][field] = draw(json_values)
    elif kind == "dtype":
        edited[key]["dtype"] = draw(st.sampled_from(["F32", "F64", "F16", "BF16", "I64", "F4"]))
    else:
        edited[key]["shape"] = draw(st.lists(st.integers(0, 9), max_size=3))
    return edited


@given(valid_files(), st.data())
def test_random_json_edits_of_the_header_are_an_error_or_a_correct_load(
    content: bytes, data: st.DataObject
) -> None:
    header, body = split(content)
    edited = data.draw(json_edits(header))
    check_outcome(file_with_header(json.dumps(edited, allow_nan=True), body))


@pytest.mark.parametrize("seed", range(3))
def test_every_prefix_of_a_file_is_refused_and_a_cut_in_the_data_says_how_many_bytes(
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    content = safetensors_file(
        [
            ("a.weight", rng.standard_normal((3, 2))),
            ("b.weight", rng.standard_normal(5).astype(np.float32)),
        ],
        {"note": "x" * seed},
    )
    data_start = 8 + struct.unpack("<Q", content[:8])[0]
    with tempfile.TemporaryDirectory() as folder:
        for length in range(len(content)):
            path = write_file(Path(folder), content[:length])
            with pytest.raises(FormatError) as caught:
                load_parameters(path)
            error = caught.value
            if length < data_start:
                assert error.rule == "checkpoint.invalid", length
                assert type(error.cause) is SafetensorError, length
            else:
                assert error.rule == "checkpoint.data-size", length
                assert (error.needed, error.given) == (
                    len(content) - data_start,
                    length - data_start,
                )
