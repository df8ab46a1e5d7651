"""What the tests of ``llm_from_scratch.vectors`` share: small tables, gensim's own test files,
and a public call for each rule the vectors raise (``VECTORS_TRIGGERS``)."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import word_pieces
from llm_from_scratch.demos.ch18_token_embeddings.vectors_command import (
    VectorsSource,
    run_evaluate,
)
from llm_from_scratch.vectors import WordVectors

from conftest import import_optional
from neighbours_support import WholeWords


def gensim_data(name: str) -> Path:
    """A file of gensim's test data, installed with it (its word2vec files, WordSim-353,
    SimLex-999, the Google analogies); skip without gensim."""
    gensim = import_optional("gensim")
    return Path(gensim.__file__).parent / "test" / "test_data" / name


def gensim_pair(name: str, binary: bool) -> tuple[Any, WordVectors]:
    """gensim's ``KeyedVectors`` and our ``WordVectors`` of one of gensim's word2vec files."""
    keyed_vectors = import_optional("gensim.models.keyedvectors", "gensim").KeyedVectors
    path = gensim_data(name)
    return keyed_vectors.load_word2vec_format(
        path, binary=binary
    ), WordVectors.load_word2vec_format(path, binary=binary)


#: gensim's word2vec files: the C tool's text output and a binary file.
GENSIM_FILES = [("word2vec_pre_kv_c", False), ("euclidean_vectors.bin", True)]


def small_vectors() -> WordVectors:
    """Four words in two dimensions: king and queen close, apple far."""
    words = ["king", "queen", "man", "apple"]
    return WordVectors(words, [[1.0, 0.2], [0.9, 0.4], [0.8, -0.1], [-0.3, 1.0]])


def file_with(text: bytes, name: str = "vectors.vec") -> Path:
    """A new file holding ``text``, in a folder of its own."""
    path = Path(tempfile.mkdtemp()) / name
    path.write_bytes(text)
    return path


VECTORS_TRIGGERS: dict[str, Callable[[], object]] = {
    "word.not-in-vocabulary": lambda: small_vectors()["kng"],
    "vectors.word": lambda: WordVectors(["a", "a"], np.zeros((2, 2))),
    "vectors.table": lambda: WordVectors(["a", "b"], np.zeros((3, 2))),
    "vectors.argument": lambda: small_vectors().most_similar(positive=[], negative=[]),
    "vectors.file": lambda: WordVectors.load_word2vec_format(file_with(b"two words\n")),
    "vectors.evaluation-file": lambda: small_vectors().evaluate_word_analogies(
        file_with(b"king queen man woman\n", "questions.txt")
    ),
    "vectors.source": lambda: run_evaluate(
        VectorsSource(table=Path("table.safetensors")), Path("pairs.tsv"), None, io.StringIO()
    ),
    "vectors.no-evaluation": lambda: run_evaluate(VectorsSource(), None, None, io.StringIO()),
    "word.several": lambda: word_pieces(WholeWords(("[UNK]", "a")), ["b", "a", "c"]),
    "vectors.read": lambda: WordVectors.load_word2vec_format(Path("no-such-folder", "v.vec")),
    "vectors.write": lambda: small_vectors().save_word2vec_format(Path("no-such-folder", "v.vec")),
}
