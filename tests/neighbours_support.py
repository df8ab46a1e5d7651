"""Support for the neighbour and exercise tests: a whole-word tokenizer, small tables, the
exercises' right answers worked out independently, and one failing public call per rule of the
pretrained, neighbours and exercises modules, by rule code (for the error catalogue)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.exercise_data import KINDS, check_exercises
from llm_from_scratch.demos.ch18_token_embeddings.exercises import read_answers
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    id_neighbour_ids,
    word_neighbours,
    word_piece,
)
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import (
    PretrainedFiles,
    checked_files,
    load_pretrained_embedding,
    load_word_pieces,
    open_table,
    packaged_files,
)
from llm_from_scratch.nn import Embedding, NamedParameter, NamedParameters, save_parameters
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.vectors.table_pair import (
    VOCABULARY_SIZE_KEY,
    tokenizer_metadata,
)

from conftest import KNOWN_TABLE, KNOWN_UPSTREAM, require_tokenizers

CHECKED = [number for number, kind in KINDS.items() if kind != "explanation"]


def independent_answers() -> dict[str, object]:
    """Every checked answer, computed here from the chapter's table and seed."""
    table = np.array(KNOWN_TABLE).reshape(4, 2)
    ids = np.array([[2, 1, 2]])
    upstream = np.array(KNOWN_UPSTREAM).reshape(1, 3, 2)
    one_hot = (np.arange(4) == 2).astype(int)
    gradient = np.zeros_like(table)
    for position, token_id in enumerate(ids.reshape(-1)):
        gradient[token_id] += upstream.reshape(-1, 2)[position]
    return {
        "1": table[ids].tolist(),
        "2": {"one_hot": one_hot.tolist(), "product": (one_hot @ table).tolist()},
        "3": gradient.tolist(),
        "5": [[2, 3, 2], [2], [0, 2]],
        "6": {"order": ["shape", "count", "id"], "first": {"id": 4, "position": 1}},
        "8": False,
        "10": False,
        "11": False,
    }


@dataclass(frozen=True)
class WholeWords:
    """A tokenizer that maps each whitespace-separated word to its index in ``tokens``, or to
    the unknown token ``[UNK]`` when ``tokens`` has it and the word is not there."""

    tokens: tuple[str, ...]

    @property
    def unknown_token(self) -> str | None:
        return "[UNK]" if "[UNK]" in self.tokens else None

    def pieces(self, word: str) -> tuple[tuple[str, int], ...]:
        found = []
        for part in word.split():
            token = part if part in self.tokens else "[UNK]"
            found.append((token, self.tokens.index(token)))
        return tuple(found)

    def token(self, token_id: int) -> str | None:
        return self.tokens[token_id] if 0 <= token_id < len(self.tokens) else None


def layer_of(rows: Sequence[Sequence[float]], name: str = "token_embedding.weight") -> Embedding:
    """An embedding layer over the given rows (float64)."""
    array = np.asarray(rows, dtype=float)
    table = NamedParameter.from_tensor(name, Tensor(array.shape, array.reshape(-1)))
    return Embedding.from_parameter(table)


def saved_table(folder: Path, name: str = "token_embedding.weight") -> Path:
    """A safetensors file holding one 4x2 table named ``name``."""
    path = folder / "table.safetensors"
    save_parameters(path, NamedParameters([layer_of([[1, 0], [0, 1], [1, 1], [2, 0]], name).table]))
    return path


def pair_files(
    folder: Path, rows: int, tokens: Sequence[str], metadata: dict[str, str] | None = None
) -> PretrainedFiles:
    """In ``folder``: a table of ``rows`` distinct rows of width 2 (``token_embedding.weight``,
    with ``metadata``) and a whole-word ``tokenizer.json`` of ``tokens`` (the first at ID 0,
    ``[UNK]`` the unknown token)."""
    tokenizers = require_tokenizers()
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "table.safetensors"
    layer = layer_of([[1.0, row + 1.0] for row in range(rows)])
    save_parameters(table, NamedParameters([layer.table]), metadata)
    vocabulary = {token: token_id for token_id, token in enumerate(tokens)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    return PretrainedFiles(table, folder / "tokenizer.json", None)


PAIR_TOKENS = ("[UNK]", "sun", "moon", "star")


def mismatched_pair(difference: str) -> object:
    """Open a table and a tokenizer that differ by ``difference``: ``rows``,
    ``vocabulary-size`` or ``fingerprint``."""
    folder = Path(tempfile.mkdtemp())
    if difference == "rows":
        return open_table(pair_files(folder, 3, PAIR_TOKENS))
    metadata = tokenizer_metadata(PAIR_TOKENS[::-1])  # the same size, another order
    if difference == "vocabulary-size":
        metadata[VOCABULARY_SIZE_KEY] = "5"
    return open_table(pair_files(folder, 4, PAIR_TOKENS, metadata))


def _without_tokenizers() -> object:
    saved = sys.modules.get("tokenizers")
    sys.modules["tokenizers"] = None  # type: ignore[assignment]
    try:
        return load_word_pieces(Path("tokenizer.json"))
    finally:
        if saved is None:
            del sys.modules["tokenizers"]
        else:
            sys.modules["tokenizers"] = saved


def _unreadable_tokenizer() -> object:
    require_tokenizers()
    folder = Path(tempfile.mkdtemp())
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    return load_word_pieces(folder / "tokenizer.json")


def _zero_row() -> object:
    table = CosineTable.of(layer_of([[1, 0], [0, 0], [0, 1]]))
    return word_neighbours(table, WholeWords(("a", "b", "c")), "b", 1)


NEIGHBOURS_TRIGGERS: dict[str, Callable[[], object]] = {
    "pretrained.package": lambda: packaged_files("no_such_table_package"),
    "tokenizers.package": _without_tokenizers,
    "pretrained.missing-file": lambda: checked_files(
        PretrainedFiles(Path("/no/such/model.safetensors"), Path("/no/such/tokenizer.json"))
    ),
    "tokenizer.file": _unreadable_tokenizer,
    "table.unknown-tensor": lambda: load_pretrained_embedding(
        saved_table(Path(tempfile.mkdtemp())), "embeddings.word_embeddings.weight"
    ),
    "neighbours.count": lambda: id_neighbour_ids(0, 4, 4),
    "word.empty": lambda: word_piece(WholeWords(("a",)), " "),
    "word.unknown": lambda: word_piece(WholeWords(("[UNK]", "a")), "b"),
    "word.pieces": lambda: word_piece(WholeWords(("a", "b")), "a b"),
    "word.zero-vector": _zero_row,
    "exercises.data": lambda: check_exercises("en", {}),
    "answers.file": lambda: read_answers(Path("/no/such/answers.json")),
    "pair.rows": lambda: mismatched_pair("rows"),
    "pair.vocabulary-size": lambda: mismatched_pair("vocabulary-size"),
    "pair.fingerprint": lambda: mismatched_pair("fingerprint"),
}
