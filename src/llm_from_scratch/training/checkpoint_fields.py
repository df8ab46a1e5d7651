"""The fields of a training checkpoint's metadata read as typed, bounded values (JSON read exactly
by :func:`llm_from_scratch.files.load_json`): an ``int`` where an integer goes, never a ``bool``,
a ``float`` or a string. A field that fails is a :class:`FieldError` naming it.

    >>> integer(3, "position.epoch", 0, 5)
    3
    >>> try:
    ...     integer(1.5, "position.epoch", 0, 5)
    ... except FieldError as error:
    ...     print(error)
    position.epoch: 1.5 is not an integer
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.files import load_json
from llm_from_scratch.training.options import TrainOptions, option_fields
from llm_from_scratch.training.vocabulary import UNKNOWN_TOKEN
from llm_from_scratch.training.words import WORDS, Reading, compiled
from llm_from_scratch.vectors.table_pair import vocabulary_fingerprint

ENCODINGS: Final = ("utf-8", "latin-1")
"""The encodings a corpus file is read in (``latin-1`` once UTF-8 fails)."""
HEX_DIGEST: Final = re.compile(r"[0-9a-f]{64}")
"""A SHA-256 digest as 64 lower-case hexadecimal digits."""
SHOWN: Final = 40
"""The most characters of a refused value a message shows."""


class FieldError(ValueError):
    """A metadata field of the wrong type or out of its range: ``field`` names it."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field


@dataclass(frozen=True)
class SavedFile:
    """A corpus file as a checkpoint records it: its name below the corpus path (``.`` for a
    corpus of one file), its size, its encoding and the SHA-256 of its bytes."""

    name: str
    size: int
    encoding: str
    digest: str


def shown(value: object) -> str:
    """``value``'s ``repr``, cut to :data:`SHOWN` characters."""
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}..."


def json_field(metadata: Mapping[str, str], key: str) -> object:
    """The JSON value of the metadata entry ``key``."""
    if key not in metadata:
        raise FieldError(key, "missing")
    try:
        return load_json(metadata[key])
    except ValueError as error:
        raise FieldError(key, f"not JSON ({error})") from None


def integer(value: object, field: str, low: int, high: int) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) from ``low`` to ``high``."""
    if type(value) is not int:
        raise FieldError(field, f"{shown(value)} is not an integer")
    if not low <= value <= high:
        raise FieldError(field, f"{shown(value)} is not from {low} to {high}")
    return value


def number(value: object, field: str, low: float, high: float) -> float:
    """``value`` as a ``float`` if it is a finite ``int`` or ``float`` from ``low`` to ``high``."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise FieldError(field, f"{shown(value)} is not a number")
    if not (math.isfinite(value) and low <= value <= high):
        raise FieldError(field, f"{shown(value)} is not from {low} to {high}")
    return float(value)


def text(value: object, field: str) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise FieldError(field, f"{shown(value)} is not a non-empty string")
    return value


def digest(value: object, field: str) -> str:
    """``value`` if it is a SHA-256 digest in hexadecimal."""
    if not isinstance(value, str) or HEX_DIGEST.fullmatch(value) is None:
        raise FieldError(field, f"{shown(value)} is not 64 lower-case hexadecimal digits")
    return value


def record(value: object, field: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """``value`` if it is a JSON object of exactly ``keys``."""
    if not isinstance(value, dict):
        raise FieldError(field, f"{shown(value)} is not an object")
    for key in keys:
        if key not in value:
            raise FieldError(f"{field}.{key}", "missing")
    for key in value:
        if key not in keys:
            raise FieldError(f"{field}.{key}", "is no field of a checkpoint")
    return value


def items(value: object, field: str, count: int | None = None) -> list[Any]:
    """``value`` if it is a JSON array (of ``count`` items, if given)."""
    if not isinstance(value, list):
        raise FieldError(field, f"{shown(value)} is not an array")
    if count is not None and len(value) != count:
        raise FieldError(field, f"has {len(value)} items, not {count}")
    return value


def saved_options(value: object, names: tuple[str, ...]) -> dict[str, Any]:
    """The options ``names`` of a checkpoint's ``options`` entry, each of its option's type and
    range (``epochs`` at least 1; ``null`` only for a number whose default is None)."""
    found = record(value, "options", names)
    checked: dict[str, Any] = {}
    unset = {item.name for item in dataclasses.fields(TrainOptions) if item.default is None}
    for name, spec, kind in option_fields():
        if name not in names:
            continue
        field, item = f"options.{name}", found[name]
        if item is None and name in unset and kind in (int, float):
            checked[name] = None
        elif kind is bool:
            if type(item) is not bool:
                raise FieldError(field, f"{shown(item)} is not true or false")
            checked[name] = item
        elif kind is int:
            low = 1 if name == "epochs" else int(spec.minimum or 0)
            high = int(spec.maximum) if spec.maximum is not None else 2**63 - 1
            checked[name] = integer(item, field, low, high)
        elif kind is float:
            checked[name] = number(item, field, spec.minimum or 0, spec.maximum or math.inf)
        else:
            checked[name] = text(item, field)
            if spec.choices and checked[name] not in spec.choices:
                raise FieldError(field, f"{shown(item)} is not one of {', '.join(spec.choices)}")
    return checked


def saved_corpus(value: object) -> tuple[SavedFile, ...]:
    """The files of a checkpoint's ``corpus`` entry: ``[name, size, encoding, digest]`` each,
    names unique, ``.`` only alone, none leaving the corpus folder."""
    entries = items(value, "corpus")
    if not entries:
        raise FieldError("corpus", "lists no file")
    files: dict[str, SavedFile] = {}
    for index, entry in enumerate(entries):
        field = f"corpus[{index}]"
        name, size, encoding, sha = items(entry, field, 4)
        name = text(name, f"{field}.name")
        parts = name.split("/")
        if (name == "." and len(entries) > 1) or (
            name != "." and any(part in ("", ".", "..") for part in parts)
        ):
            raise FieldError(f"{field}.name", f"{shown(name)} is not a file of the corpus")
        if name in files:
            raise FieldError(f"{field}.name", f"{shown(name)} is listed twice")
        if encoding not in ENCODINGS:
            raise FieldError(f"{field}.encoding", f"{shown(encoding)} is not one of {ENCODINGS}")
        size = integer(size, f"{field}.size", 0, 2**63 - 1)
        files[name] = SavedFile(name, size, encoding, digest(sha, f"{field}.digest"))
    return tuple(files.values())


def checked_words(
    field: str,
    data: npt.NDArray[np.uint8],
    rows: int,
    fingerprint: str,
    reading: Reading = WORDS,
) -> tuple[str, ...]:
    """The words of a vocabulary's UTF-8 bytes (a line feed between two), if there are
    ``rows`` of them, each a word of ``reading`` (no longer than it counts) seen once, then
    ``[UNK]``, with this :func:`vocabulary_fingerprint`."""
    try:
        words = tuple(data.tobytes().decode("utf-8").split("\n"))
    except UnicodeDecodeError as error:
        raise FieldError(field, f"not UTF-8 ({error.reason} at byte {error.start})") from None
    if len(words) != rows:
        raise FieldError(field, f"holds {len(words)} words, not {rows} (a row each)")
    if words[-1] != UNKNOWN_TOKEN:
        raise FieldError(field, f"ends with {shown(words[-1])}, not {UNKNOWN_TOKEN!r}")
    seen: set[str] = set()
    pattern, longest = compiled(reading.word_pattern), reading.longest
    for word_id, word in enumerate(words[:-1]):
        too_long = longest is not None and len(word) > longest
        if too_long or pattern.fullmatch(word) is None:
            raise FieldError(field, f"{shown(word)} (ID {word_id}) is not a word")
        if word in seen:
            raise FieldError(field, f"{shown(word)} (ID {word_id}) appears twice")
        seen.add(word)
    if vocabulary_fingerprint(words) != fingerprint:
        raise FieldError("vocabulary_fingerprint", "differs from the vocabulary's words")
    return words


def checked_counts(
    field: str,
    counts: npt.NDArray[np.int64],
    words: tuple[str, ...],
    least: int,
    total: int,
    *,
    ordered: bool = True,
) -> npt.NDArray[np.int64]:
    """``counts`` if each word's is from ``least`` to ``total``, falling with the ID (ties by
    the word) if ``ordered``, ``[UNK]``'s 0, and their sum from 1 to ``total`` (the corpus's
    words)."""
    kept = counts[:-1]
    if counts[-1] != 0:
        raise FieldError(field, f"[UNK]'s count is {counts[-1]}, not 0")
    low, high = int(kept.min()), int(kept.max())
    if low < least or high > total:
        word_id = int(np.argmin(kept)) if low < least else int(np.argmax(kept))
        detail = f"ID {word_id} has {kept[word_id]}, not from {least} (min_count) to {total}"
        raise FieldError(field, detail)
    for word_id in np.flatnonzero(kept[1:] >= kept[:-1]).tolist() if ordered else ():
        if kept[word_id + 1] > kept[word_id] or words[word_id + 1] < words[word_id]:
            raise FieldError(field, f"ID {word_id + 1} is out of order (falling, ties by word)")
    summed = sum(kept.tolist())
    if summed > total:
        raise FieldError(field, f"the counts sum to {summed}, more than corpus_words {total}")
    if summed == 0:  # a run counts at least one word of its vocabulary (corpus.no-known-words)
        raise FieldError(field, "every count is 0: the run would draw no noise word")
    return counts
