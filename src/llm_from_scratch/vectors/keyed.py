"""``WordVectors``: words and their vectors, with gensim 4's ``KeyedVectors`` names and answers.

    >>> import numpy as np
    >>> wv = WordVectors(["king", "queen", "man"], np.eye(3, dtype=np.float32))
    >>> len(wv), wv.vector_size, "queen" in wv, wv.index_to_key
    (3, 3, True, ['king', 'queen', 'man'])
    >>> wv["man"].tolist(), wv.key_to_index["queen"]
    ([0.0, 0.0, 1.0], 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import TableError, WordError
from llm_from_scratch.tensor.storage import read_only_view

FloatArray = npt.NDArray[np.float32]

#: The characters a word may not hold: the word2vec formats end a word at them.
SEPARATORS: Final = (" ", "\n")


class WordVectors:
    """Words and one float32 vector each, queried as gensim 4's ``KeyedVectors`` is.

    The words and vectors are checked once here and never change; the unit vectors are computed
    on the first query that needs them and kept.

    Args:
        words: distinct non-empty ``str`` words without spaces or line breaks, in row order.
        vectors: one row of finite real numbers per word (converted to float32).

    Shape:
        ``vectors``: ``[len(words), vector_size]``, ``vector_size >= 1``.

    Raises:
        WordError: ``vectors.word``, a word that is no such ``str``, or a word given twice.
        TableError: ``vectors.table``, vectors of another shape, not real, or not finite.

    Example:
        >>> wv = WordVectors(["a", "b"], [[1.0, 0.0], [1.0, 1.0]])
        >>> round(float(wv.similarity("a", "b")), 4)
        0.7071
    """

    def __init__(self, words: Iterable[str], vectors: npt.ArrayLike) -> None:
        listed = checked_words(words)
        table = checked_table(vectors, len(listed))
        self._words: tuple[str, ...] = tuple(listed)
        self._index: dict[str, int] = {word: row for row, word in enumerate(listed)}
        self._vectors: FloatArray = read_only_view(table)

    @classmethod
    def _trusted(cls, words: tuple[str, ...], table: FloatArray) -> WordVectors:
        """Words and a float32 table already checked (by a reader of this package)."""
        made = cls.__new__(cls)
        made._words = words
        made._index = {word: row for row, word in enumerate(words)}
        made._vectors = read_only_view(table)
        return made

    # The table ------------------------------------------------------------------------------

    @property
    def vectors(self) -> FloatArray:
        """The ``[len(self), vector_size]`` float32 table, read-only."""
        return self._vectors

    @property
    def vector_size(self) -> int:
        """The width of every vector."""
        return int(self._vectors.shape[1])

    @cached_property
    def index_to_key(self) -> list[str]:
        """The words in row order (gensim's list; changing it changes no lookup)."""
        return list(self._words)

    @cached_property
    def key_to_index(self) -> Mapping[str, int]:
        """Each word's row, read-only."""
        return MappingProxyType(self._index)

    @cached_property
    def norms(self) -> FloatArray:
        """Each vector's Euclidean length (float32, as gensim's ``fill_norms``), read-only."""
        return read_only_view(np.linalg.norm(self._vectors, axis=1))

    @cached_property
    def _unit(self) -> FloatArray:
        """The vectors divided by their lengths (rows of zeros stay zeros), computed once."""
        norms = self.norms
        with np.errstate(divide="ignore", invalid="ignore"):
            unit = self._vectors / norms[:, np.newaxis]
        unit[norms == 0] = 0.0
        return read_only_view(unit)

    def get_normed_vectors(self) -> FloatArray:
        """Every vector at unit length (rows of zeros stay zeros), read-only."""
        return self._unit

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, word: object) -> bool:
        return self.has_index_for(word)

    def __str__(self) -> str:
        return f"WordVectors<vector_size={self.vector_size}, {len(self)} keys>"

    __repr__ = __str__

    # Words ----------------------------------------------------------------------------------

    def has_index_for(self, key: object) -> bool:
        """Whether ``key`` is a word of the vocabulary, or a row number (as gensim)."""
        if isinstance(key, str):
            return key in self._index
        return _is_row_number(key) and 0 <= int(key) < len(self)  # type: ignore[call-overload]

    def get_index(self, key: str | int, default: int | None = None) -> int:
        """The row of a word (a row number is its own row).

        Raises:
            WordError: ``word.not-in-vocabulary``, without ``default``.
        """
        if isinstance(key, str):
            found = self._index.get(key)
            if found is not None:
                return found
        elif _is_row_number(key) and 0 <= int(key) < len(self):
            return int(key)
        if default is not None:
            return default
        raise WordError("word.not-in-vocabulary", word=key, count=len(self))

    def get_vector(self, key: str | int, norm: bool = False) -> FloatArray:
        """The word's vector, read-only; with ``norm``, at unit length.

        Raises:
            WordError: ``word.not-in-vocabulary``.
        """
        row = self.get_index(key)
        table = self._unit if norm else self._vectors
        vector: FloatArray = table[row]
        return vector

    def __getitem__(self, keys: str | int | Sequence[str | int]) -> FloatArray:
        """One word's vector, or a ``[n, vector_size]`` array for a list of words.

        Raises:
            WordError: ``word.not-in-vocabulary`` for the first word not in the vocabulary.
        """
        if isinstance(keys, str) or _is_row_number(keys):
            return self.get_vector(keys)  # type: ignore[arg-type]
        rows = [self.get_index(key) for key in keys]  # type: ignore[union-attr]
        return np.array(self._vectors[rows], dtype=np.float32)

    # Queries --------------------------------------------------------------------------------

    def similarity(self, w1: str | int, w2: str | int) -> np.float32:
        """The cosine of two words' vectors.

        Raises:
            WordError: ``word.not-in-vocabulary``.
        """
        return np.float32(np.dot(self._unit[self.get_index(w1)], self._unit[self.get_index(w2)]))

    def distance(self, w1: str | int, w2: str | int) -> np.float32:
        """One less the cosine of two words' vectors (gensim's cosine distance)."""
        return np.float32(1 - self.similarity(w1, w2))


def _is_row_number(key: object) -> bool:
    return isinstance(key, int | np.integer) and not isinstance(key, bool)


def checked_words(words: Iterable[str]) -> list[str]:
    """The words as a list, once each is a distinct non-empty ``str`` without a separator.

    Raises:
        WordError: ``vectors.word`` for the first word that is not.
    """
    if isinstance(words, str):
        raise WordError("vectors.word", position=0, requirement="in a list of words", value=words)
    listed = list(words)
    seen: set[str] = set()
    for position, word in enumerate(listed):
        requirement = _broken_word_rule(word, seen)
        if requirement:
            raise WordError("vectors.word", position=position, requirement=requirement, value=word)
        seen.add(word)
    return listed


def _broken_word_rule(word: object, seen: set[str]) -> str:
    if not isinstance(word, str):
        return "a str"
    if not word:
        return "a non-empty str"
    if any(separator in word for separator in SEPARATORS):
        return "a str without spaces or line breaks"
    return "a word not given before" if word in seen else ""


def checked_table(vectors: npt.ArrayLike, rows: int) -> FloatArray:
    """``vectors`` as a new C-ordered float32 array, once it has ``rows`` rows of finite reals.

    Raises:
        TableError: ``vectors.table``.
    """
    try:
        array = np.asarray(vectors)
    except (TypeError, ValueError) as error:
        raise TableError("vectors.table", requirement="an array", detail=str(error)) from error
    if array.dtype.kind not in "fiu":
        raise TableError("vectors.table", requirement="real numbers", detail=f"dtype {array.dtype}")
    if array.ndim != 2 or array.shape[0] != rows or array.shape[1] < 1 or rows < 1:
        requirement = f"a [{rows}, vector_size] array (one row per word, width at least 1)"
        raise TableError("vectors.table", requirement=requirement, detail=f"shape {array.shape}")
    with np.errstate(over="ignore"):
        table = np.array(array, dtype=np.float32, order="C")
    if not np.isfinite(table).all():
        detail = "a NaN or an infinity (or a value beyond float32's range)"
        raise TableError("vectors.table", requirement="finite numbers", detail=detail)
    return table
