"""Crafted versions of a safetensors file: every tensor, shape, dtype and metadata field
changed in turn (for the fuzz tests of the files the package reads, ``tests/files``).

A file is read and written here with the ``safetensors`` package itself, so that a crafted
file breaks only what its mutation names. A JSON metadata entry is changed at every value it
holds (``position.totals.loss``, ``corpus[1][3]``), each to values of other types, out of range
and at the edges.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from safetensors import safe_open
from safetensors.numpy import save_file

Tensors = dict[str, npt.NDArray[Any]]
Metadata = dict[str, str]


@dataclass(frozen=True)
class Stored:
    """A file's tensors (in file order) and metadata."""

    tensors: Tensors
    metadata: Metadata

    @classmethod
    def read(cls, path: Path) -> Stored:
        with safe_open(str(path), framework="numpy") as handle:
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118
            return cls(tensors, dict(handle.metadata() or {}))

    def write(self, path: Path) -> None:
        save_file(self.tensors, str(path), metadata=self.metadata or None)


@dataclass(frozen=True)
class Mutation:
    """A named change of a stored file."""

    label: str
    stored: Stored


def tensor_mutations(stored: Stored) -> Iterator[Mutation]:
    """Each tensor dropped, renamed, added, reshaped, of other dtypes, of edited values."""
    tensors, metadata = stored.tensors, stored.metadata
    for name, array in tensors.items():
        others = {key: value for key, value in tensors.items() if key != name}
        yield Mutation(f"{name} dropped", Stored(others, metadata))
        yield Mutation(f"{name} renamed", Stored({**others, f"{name}.x": array}, metadata))
        for label, changed in _arrays(array):
            yield Mutation(f"{name} {label}", Stored({**tensors, name: changed}, metadata))
    extra = {**tensors, "extra.weight": np.ones((2, 2), dtype=np.float32)}
    yield Mutation("a tensor added", Stored(extra, metadata))


def _arrays(array: npt.NDArray[Any]) -> Iterator[tuple[str, npt.NDArray[Any]]]:
    flat = array.reshape(-1)
    if array.ndim:
        yield "one row fewer", array[:-1].copy()
        yield "one row more", np.concatenate([array, array[-1:]])
        yield "no rows", array[:0].copy()
    yield "flattened", flat.copy()
    yield "with an axis more", array[None].copy()
    if array.ndim == 2:
        yield "transposed", np.ascontiguousarray(array.T)
        yield "one column fewer", np.ascontiguousarray(array[:, :-1])
    for dtype in (np.float64, np.float16, np.float32, np.int32, np.int64, np.uint8, np.bool_):
        if np.dtype(dtype) != array.dtype:
            yield f"as {np.dtype(dtype).name}", array.astype(dtype)
    for label, value in _values(array.dtype):
        changed = flat.copy()
        changed[len(changed) // 2] = value
        yield f"one value {label}", changed.reshape(array.shape)
    yield "all zero", np.zeros_like(array)
    if array.dtype == np.uint8:  # text: a line feed added, a word doubled, a byte not UTF-8
        text = array.tobytes()
        for label, edited in (
            ("an extra line feed", text + b"\n"),
            ("a line feed less", text.replace(b"\n", b"", 1)),
            ("the first word twice", text.split(b"\n")[0] + b"\n" + text),
            ("a byte not UTF-8", b"\xff" + text),
        ):
            yield label, np.frombuffer(edited, dtype=np.uint8).copy()


def _values(dtype: np.dtype[Any]) -> list[tuple[str, Any]]:
    if dtype.kind == "f":
        return [("NaN", np.nan), ("inf", np.inf), ("-1", -1.0), ("1e30", 1e30), ("+1", 1.0)]
    if dtype.kind in "iu":
        found: list[tuple[str, Any]] = [("0", 0), ("huge", np.iinfo(dtype).max), ("+1", 1)]
        return found + ([("-5", -5)] if dtype.kind == "i" else [("10", 10)])
    return [("True", True)]


def metadata_mutations(stored: Stored) -> Iterator[Mutation]:
    """Each metadata entry dropped or replaced by other text; each JSON one changed at every
    value it holds (:func:`json_mutations`)."""
    tensors, metadata = stored.tensors, stored.metadata
    for key, text in metadata.items():
        others = {name: value for name, value in metadata.items() if name != key}
        yield Mutation(f"{key} dropped", Stored(tensors, others))
        for raw in ("", "null", "5", '"x"', "[]", "{}", "1e400", "1" + "0" * 23, "-1", "[1,"):
            yield Mutation(f"{key} = {raw}", Stored(tensors, {**metadata, key: raw}))
        yield Mutation(f"{key} + x", Stored(tensors, {**metadata, key: text + "x"}))
        try:
            value = json.loads(text)
        except ValueError:
            continue
        for label, changed in json_mutations(value, key):
            edited = {**metadata, key: json.dumps(changed)}
            yield Mutation(label, Stored(tensors, edited))
    yield Mutation("an entry added", Stored(tensors, {**metadata, "extra": "1"}))


def json_mutations(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``value`` changed at one place at a time: ``(path = new value, the whole new value)``."""
    for label, replacement in _replacements(value):
        yield f"{path} = {label}", replacement
    children: list[tuple[str, Any, Callable[[Any], Any]]] = []
    if isinstance(value, dict):
        for key in value:
            children.append((f"{path}.{key}", value[key], _setter(value, key)))
        for key in value:
            yield f"{path}.{key} dropped", {k: v for k, v in value.items() if k != key}
        yield f"{path}.extra added", {**value, "extra": 1}
    elif isinstance(value, list):
        for index, item in enumerate(value):
            children.append((f"{path}[{index}]", item, _setter(value, index)))
        if value:
            yield f"{path} last item dropped", value[:-1]
            yield f"{path} first item twice", [value[0], *value]
    for child_path, child, put in children:
        for label, changed in json_mutations(child, child_path):
            yield label, put(changed)


def _setter(container: Any, key: Any) -> Callable[[Any], Any]:
    def put(changed: Any) -> Any:
        if isinstance(container, dict):
            return {**container, key: changed}
        return [changed if index == key else item for index, item in enumerate(container)]

    return put


def _replacements(value: Any) -> list[tuple[str, Any]]:
    kinds: list[tuple[str, Any]] = [("null", None), ("5", 5), ("[]", []), ("{}", {})]
    if isinstance(value, bool):
        return [*kinds, ("1", 1), ('"true"', "true"), (str(not value), not value)]
    if isinstance(value, int):
        edges = [("true", True), ("1.5", 1.5), ('"7"', "7"), ("-1", -1), ("0", 0)]
        large = [("10**23", 10**23), ("2**63", 2**63), ("99", 99), ("32", 32), ("+1", value + 1)]
        return [*kinds, *edges, *large, ("-1 of it", value - 1)]
    if isinstance(value, float):
        return [*kinds, ("-1.0", -1.0), ('"x"', "x"), ("1e308", 1e308), ("twice", value * 2)]
    if isinstance(value, str):
        return [*kinds, ('""', ""), ('"x"', "x"), ("+x", value + "x"), ("../x", "../x")]
    return kinds


def mutations(stored: Stored) -> list[Mutation]:
    """Every mutation of ``stored``, tensors first, each label once (``position = 5`` is both
    text and JSON)."""
    found = {m.label: m for m in reversed([*tensor_mutations(stored), *metadata_mutations(stored)])}
    return list(reversed(found.values()))
