"""Property: a corrupted state file gives a typed error and changes nothing, or loads exactly
what the safetensors package reads from the same bytes.

Each example saves a trained optimizer's state (Adam, AdamW or Adagrad over a float32 or
float64 table and a bias), corrupts the file one way (truncation, one byte changed anywhere, or
a random edit of the header's JSON text) and loads it into an optimizer of the same kind and
hyperparameters. The only outcomes allowed are an error of a ``checkpoint.*`` or an
``optimizer.state*`` rule with nothing changed, or a load whose state equals the file's tensors
as ``safetensors.deserialize`` reads them.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import safetensors
from hypothesis import event, given
from hypothesis import strategies as st

from llm_from_scratch.errors import LlmError
from llm_from_scratch.optim import load_state, save_state

from state_file_support import FACTORIES, new_model, snapshot, steps_for, train

KINDS = ("adagrad", "adam", "adamw")
NUMPY_DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}


def saved_content(name: str, dtype: str) -> bytes:
    model = new_model("numpy", dtype)
    optimizer = FACTORIES[name](model.parameters())
    train(model, optimizer, steps_for("numpy", dtype, 2), "row_sparse")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.safetensors"
        save_state(path, optimizer)
        return path.read_bytes()


CONTENT = {
    (name, dtype): saved_content(name, dtype) for name in KINDS for dtype in ("float32", "float64")
}


@st.composite
def corrupted(draw: st.DrawFn) -> tuple[str, str, bytes]:
    name = draw(st.sampled_from(KINDS))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    content = CONTENT[name, dtype]
    way = draw(st.sampled_from(["truncate", "byte", "header text"]))
    if way == "truncate":
        return name, dtype, content[: draw(st.integers(0, len(content) - 1))]
    if way == "byte":
        position = draw(st.integers(0, len(content) - 1))
        value = content[position] ^ draw(st.integers(1, 255))  # another byte
        return name, dtype, content[:position] + bytes([value]) + content[position + 1 :]
    length = struct.unpack("<Q", content[:8])[0]
    text = content[8 : 8 + length].decode("utf-8")
    start = draw(st.integers(0, len(text)))
    stop = draw(st.integers(start, min(len(text), start + 12)))
    insert = draw(st.text(alphabet='{}[]",:0123456789.-eEIF_ abst', max_size=8))
    edited = (text[:start] + insert + text[stop:]).encode("utf-8")
    return name, dtype, struct.pack("<Q", len(edited)) + edited + content[8 + length :]


def reference_state(content: bytes) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """The tensors as the safetensors package reads them: dtype name, shape and bytes."""
    read = {}
    for key, tensor in safetensors.deserialize(content):
        array = np.frombuffer(bytes(tensor["data"]), dtype=NUMPY_DTYPES[tensor["dtype"]])
        native = array.astype(array.dtype.newbyteorder("="))
        read[key] = (str(native.dtype), tuple(tensor["shape"]), native.tobytes())
    return read


@given(corrupted())
def test_a_corrupted_state_file_is_a_typed_error_that_changes_nothing_or_a_correct_load(
    case: tuple[str, str, bytes],
) -> None:
    name, dtype, content = case
    model = new_model("numpy", dtype, seed=21)
    optimizer = FACTORIES[name](model.parameters())
    train(model, optimizer, steps_for("numpy", dtype, 1, seed=22), "row_sparse")
    before = snapshot(model, optimizer)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.safetensors"
        path.write_bytes(content)
        try:
            load_state(path, optimizer)
        except LlmError as error:
            assert error.rule.startswith(("checkpoint.", "optimizer.state")), error
            event(type(error).__name__)
            assert snapshot(model, optimizer) == before
            return
    event("loaded")
    state: dict[str, Any] = {
        key: (str(array.dtype), array.shape, array.tobytes())
        for key, array in optimizer.state_dict().items()
    }
    assert state == reference_state(content)
