"""What the tests of ``llm_from_scratch.vectors`` share: small tables, gensim's own test files,
and a public call for each rule the vectors raise (``VECTORS_TRIGGERS``)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from llm_from_scratch.vectors import WordVectors

#: gensim's test data, installed with it (the word2vec files, WordSim-353, SimLex-999, analogies).
GENSIM_DATA = Path(__import__("gensim").__file__).parent / "test" / "test_data"


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
    "vectors.read": lambda: WordVectors.load_word2vec_format(Path("no-such-folder", "v.vec")),
    "vectors.write": lambda: small_vectors().save_word2vec_format(Path("no-such-folder", "v.vec")),
}
