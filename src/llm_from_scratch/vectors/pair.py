"""A table file and its ``tokenizer.json``, read as a pair: the table's tensor, the tokenizer's
word pieces (the ``tokenizers`` package), and the check that the two belong together (as many
rows as tokens, and the size and fingerprint the table file records of its tokenizer)."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import FormatError, MismatchError, MissingPackageError
from llm_from_scratch.files import TOKENIZER_BYTE_LIMIT, read_file
from llm_from_scratch.nn import load_metadata, load_parameters
from llm_from_scratch.vectors.table_pair import (
    FINGERPRINT_KEY,
    VOCABULARY_SIZE_KEY,
    vocabulary_fingerprint,
)

#: The packaged table's tensor: one 384-wide row per word piece.
TABLE_TENSOR: Final = "embeddings.word_embeddings.weight"
#: The tensor ``ch18 train`` writes: the chapter's embedding table.
TRAINED_TENSOR: Final = "token_embedding.weight"
#: The tensors a table file is read from without ``--tensor``, the first the file holds.
DEFAULT_TENSORS: Final = (TABLE_TENSOR, TRAINED_TENSOR)
#: What installs the table and the tokenizer.
INSTALL_COMMAND: Final = "make pretrained"


class PairPaths(Protocol):
    """The two files of a pair."""

    @property
    def table(self) -> Path: ...

    @property
    def tokenizer(self) -> Path: ...


def read_table(table_path: Path, tensor_name: str | None) -> tuple[str, npt.NDArray[np.float32]]:
    """One tensor of a safetensors file as float32 (no other tensor read) and its name;
    ``tensor_name`` None reads the first of :data:`DEFAULT_TENSORS` the file holds.

    Raises:
        MismatchError: ``table.unknown-tensor``, the file has no such tensor (``name``: the
            names tried, joined by ``or``; ``cause``: the checkpoint's error).
        The checkpoint's errors for the file.
    """
    names = DEFAULT_TENSORS if tensor_name is None else (tensor_name,)
    for name in names[:-1]:
        with contextlib.suppress(MismatchError):
            return name, _tensor(table_path, name)
    try:
        return names[-1], _tensor(table_path, names[-1])
    except MismatchError as error:
        fields = {"path": str(table_path), "name": " or ".join(names), "cause": error}
        raise MismatchError("table.unknown-tensor", **fields) from error


class TokenNames(Protocol):
    """What :func:`pair_words` reads of a tokenizer: each ID's token, and the unknown token."""

    @property
    def unknown_token(self) -> str | None: ...

    def token(self, token_id: int) -> str | None: ...


def pair_words(rows: int, pieces: TokenNames) -> tuple[list[str], list[int]]:
    """The tokens of a table's rows that are words, and their rows: the unknown token's row
    (``[UNK]``), rows without a token and tokens that are empty or hold a space or a line break
    are left out."""
    unknown = pieces.unknown_token
    words: list[str] = []
    kept: list[int] = []
    for row in range(rows):
        token = pieces.token(row)
        if token and token != unknown and " " not in token and "\n" not in token:
            words.append(token)
            kept.append(row)
    return words, kept


def _tensor(table_path: Path, name: str) -> npt.NDArray[np.float32]:
    loaded = load_parameters(table_path, names=[name], dtype=np.float32)
    array: npt.NDArray[np.float32] = loaded[name].tensor.numpy()
    return array


def load_word_pieces(tokenizer_path: Path) -> HubTokenizerPieces:
    """Read a ``tokenizer.json`` (at most ``TOKENIZER_BYTE_LIMIT`` bytes of UTF-8) with the
    ``tokenizers`` package, padding and truncation off.

    Raises:
        MissingPackageError: ``tokenizers.package``, the package is not installed.
        FormatError: ``tokenizer.file``, the file cannot be read (a path the system cannot take,
            a folder, no permission), is too large or not UTF-8, or the package refuses it
            (``detail``: the first line of what it said).
    """
    if importlib.util.find_spec("tokenizers") is None:
        raise MissingPackageError("tokenizers.package", install=INSTALL_COMMAND)
    from tokenizers import Tokenizer

    path = str(tokenizer_path)
    try:
        text = read_file(tokenizer_path, TOKENIZER_BYTE_LIMIT).decode("utf-8")
    except OSError as error:
        detail = error.strerror or str(error)
        raise FormatError("tokenizer.file", path=path, detail=detail) from error
    except UnicodeDecodeError as error:
        raise FormatError("tokenizer.file", path=path, detail=str(error)) from error
    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as error:  # the package raises plain Exception for a bad file
        detail = (str(error).splitlines() or [type(error).__name__])[0]
        raise FormatError("tokenizer.file", path=path, detail=detail) from error
    # A saved tokenizer may pad or cut every encoding to a fixed length (MiniLM's pads to 128).
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return HubTokenizerPieces(tokenizer, _unknown_id(tokenizer))


def _unknown_id(tokenizer: Any) -> int | None:
    unknown = getattr(tokenizer.model, "unk_token", None)
    found = tokenizer.token_to_id(unknown) if unknown else None
    return None if found is None else int(found)


@dataclass(frozen=True)
class HubTokenizerPieces:
    """A ``tokenizers.Tokenizer`` seen as :class:`WordPieces` (whose docstring says each method)."""

    tokenizer: Any
    unknown_id: int | None

    @property
    def unknown_token(self) -> str | None:
        return None if self.unknown_id is None else self.token(self.unknown_id)

    def pieces(self, word: str) -> tuple[tuple[str, int], ...]:
        encoding = self.tokenizer.encode(word, add_special_tokens=False)
        pairs = zip(encoding.tokens, encoding.ids, strict=True)
        return tuple((str(token), int(token_id)) for token, token_id in pairs)

    def token(self, token_id: int) -> str | None:
        found = self.tokenizer.id_to_token(token_id)
        return None if found is None else str(found)

    @property
    def vocabulary_size(self) -> int:
        """The number of tokens, added tokens included (the package's ``get_vocab_size``)."""
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def tokens(self) -> list[str]:
        """Every token, added tokens included, in ID order."""
        vocabulary = self.tokenizer.get_vocab(with_added_tokens=True)
        return [str(token) for token, _ in sorted(vocabulary.items(), key=lambda item: item[1])]


def check_pair(files: PairPaths, rows: int, pieces: HubTokenizerPieces) -> None:
    """Check that a table of ``rows`` rows goes with the tokenizer: a row for every token (more
    rows are padding, as GPT-2's 50,304 rows for 50,257 tokens: rows without a token), and the
    vocabulary size and fingerprint its metadata records.

    Raises:
        MismatchError: ``pair.rows`` (fewer rows than tokens), ``pair.vocabulary-size``, then
            ``pair.fingerprint`` (the values as text, as the metadata holds them).
    """
    for rule, table_value, tokenizer_value in _mismatches(files, rows, pieces):
        paths = {"table": str(files.table), "tokenizer": str(files.tokenizer)}
        values = {"table_value": table_value, "tokenizer_value": tokenizer_value}
        raise MismatchError(rule, **paths, **values)


def _mismatches(
    files: PairPaths, rows: int, pieces: HubTokenizerPieces
) -> Iterator[tuple[str, str, str]]:
    size = pieces.vocabulary_size
    if rows < size:
        yield "pair.rows", str(rows), str(size)
    recorded = load_metadata(files.table)
    if recorded.get(VOCABULARY_SIZE_KEY, str(size)) != str(size):
        yield "pair.vocabulary-size", recorded[VOCABULARY_SIZE_KEY], str(size)
    if FINGERPRINT_KEY in recorded:
        fingerprint = vocabulary_fingerprint(pieces.tokens())
        if recorded[FINGERPRINT_KEY] != fingerprint:
            yield "pair.fingerprint", recorded[FINGERPRINT_KEY], fingerprint
