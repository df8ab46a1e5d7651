"""``WordVectors``: words and their vectors, with gensim 4's ``KeyedVectors`` names and answers.

>>> import numpy as np
>>> wv = WordVectors(["king", "queen", "man"], np.eye(3, dtype=np.float32))
>>> len(wv), wv.vector_size, "queen" in wv, wv.index_to_key
(3, 3, True, ['king', 'queen', 'man'])
>>> wv["man"].tolist(), wv.key_to_index["queen"]
([0.0, 0.0, 1.0], 1)
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import FormatError, TableError, WordError
from llm_from_scratch.tensor.storage import read_only_view
from llm_from_scratch.vectors.correlation import PearsonRResult, SignificanceResult
from llm_from_scratch.vectors.evaluation import analogies as evaluate_analogies
from llm_from_scratch.vectors.evaluation import word_pairs
from llm_from_scratch.vectors.pair import check_pair, load_word_pieces, pair_words, read_table
from llm_from_scratch.vectors.similarity import (
    COSMUL_EPSILON,
    argument_error,
    as_list,
    best_rows,
    checked_count,
    checked_vector,
    unit_of,
    weighted,
)
from llm_from_scratch.vectors.word2vec_format import (
    path_of,
    projector_bytes,
    read_word2vec,
    word2vec_bytes,
    write_projector,
    write_word2vec,
)

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

    # Files ----------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        table: str | os.PathLike[str],
        tokenizer: str | os.PathLike[str],
        tensor: str | None = None,
    ) -> WordVectors:
        """The words of a ``tokenizer.json`` and their rows of a safetensors table: a pair
        ``ch18 train`` writes, or the MiniLM pair (``make pretrained``). The unknown token's
        row (``[UNK]``) and rows without a token that can be a word are left out.

        Args:
            table: the safetensors file.
            tokenizer: its ``tokenizer.json``.
            tensor: the table's tensor (None: the MiniLM name, then ``ch18 train``'s).

        Raises:
            FormatError, MissingPackageError: the tokenizer's (``tokenizer.file``,
                ``tokenizers.package``).
            MismatchError: ``table.unknown-tensor``; ``pair.rows``, ``pair.vocabulary-size``,
                ``pair.fingerprint``: a table and a tokenizer that do not belong together.
            The checkpoint's errors for the table file; TableError ``vectors.table`` for a
            tensor that is not a table.
        """
        paths = TablePair(Path(path_of(table, "load")), Path(path_of(tokenizer, "load")))
        pieces = load_word_pieces(paths.tokenizer)
        _, array = read_table(paths.table, tensor)
        check_pair(paths, int(array.shape[0]) if array.ndim else 0, pieces)
        words, rows = pair_words(int(array.shape[0]), pieces)
        return cls(words, array[rows])

    @classmethod
    def load_word2vec_format(
        cls, path: str | os.PathLike[str], binary: bool = False, limit: int | None = None
    ) -> WordVectors:
        """Read a word2vec file, text or binary, as gensim's ``load_word2vec_format`` reads it:
        the first ``limit`` vectors (None or 0: all), a repeated word kept at its first place.

        Raises:
            FileAccessError: ``vectors.read``, a file the system will not read.
            FormatError: ``vectors.file``: no ``COUNT WIDTH`` header, fewer vectors than it
                counts, a line of another width, a word not UTF-8, a NaN or an infinity.
            OptionError: ``vectors.argument``, a path or ``limit`` of the wrong type.
        """
        text = path_of(path, "load_word2vec_format")
        checked_count(limit, "limit", "load_word2vec_format", none=True)
        words, table = read_word2vec(text, binary, limit)
        kind = "binary" if binary else "text"
        try:
            checked_words(words)
            if not np.isfinite(table).all():
                detail = "a NaN or an infinity"
                raise TableError("vectors.table", requirement="finite numbers", detail=detail)
        except (WordError, TableError) as error:
            raise FormatError("vectors.file", path=text, kind=kind, detail=str(error)) from error
        return cls._trusted(tuple(words), table)

    def save_word2vec_format(self, path: str | os.PathLike[str], binary: bool = False) -> None:
        """Write the words and vectors as gensim's ``save_word2vec_format`` writes them, byte for
        byte (text: each number as NumPy prints a float32), replacing any file atomically.

        Raises:
            FileAccessError: ``vectors.write``; an earlier file at ``path`` is unchanged.
        """
        text = path_of(path, "save_word2vec_format")
        write_word2vec(text, word2vec_bytes(self._words, self._vectors, binary))

    def save_projector(self, folder: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``vectors.tsv`` and ``metadata.tsv`` into ``folder`` (made if missing) for the
        TensorBoard Embedding Projector (projector.tensorflow.org, "Load").

        Returns:
            The two paths written.

        Raises:
            FileAccessError: ``vectors.write``; both files are written, or neither changes.
        """
        text = path_of(folder, "save_projector")
        return write_projector(text, projector_bytes(self._words, self._vectors))

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
        return self.get_index(key, -1) != -1

    def get_index(self, key: object, default: int | None = None) -> int:
        """The row of a word (a row number is its own row).

        Raises:
            WordError: ``word.not-in-vocabulary``, without ``default``.
        """
        if isinstance(key, str):
            found = self._index.get(key)
            if found is not None:
                return found
        elif _is_row_number(key) and 0 <= operator.index(key) < len(self):  # type: ignore[arg-type]
            return operator.index(key)  # type: ignore[arg-type]
        if default is not None:
            return default
        raise WordError("word.not-in-vocabulary", word=key, count=len(self))

    def get_vector(self, key: object, norm: bool = False) -> FloatArray:
        """The word's vector, read-only; with ``norm``, at unit length.

        Raises:
            WordError: ``word.not-in-vocabulary``.
        """
        vector: FloatArray = (self._unit if norm else self._vectors)[self.get_index(key)]
        return vector

    def __getitem__(self, keys: str | int | Sequence[str | int]) -> FloatArray:
        """One word's vector, or a ``[n, vector_size]`` array for a list of words.

        Raises:
            WordError: ``word.not-in-vocabulary`` for the first word not in the vocabulary.
        """
        if isinstance(keys, str) or _is_row_number(keys):
            return self.get_vector(keys)
        rows = [self.get_index(key) for key in keys]  # type: ignore[union-attr]
        return np.array(self._vectors[rows], dtype=np.float32)

    # Queries --------------------------------------------------------------------------------

    def most_similar(
        self,
        positive: object = None,
        negative: object = None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]] | FloatArray:
        """The ``topn`` words whose vectors have the highest cosine with the mean of the unit
        vectors of ``positive`` less those of ``negative`` (gensim's ``most_similar``, the
        analogy ``king - man + woman`` as ``positive=["king", "woman"], negative=["man"]``).

        Args:
            positive: words, row numbers or vectors (or ``(item, weight)`` pairs), or one.
            negative: the same, weighted -1 unless a pair says otherwise.
            topn: how many; ``None`` returns every word's cosine (an array), below 1 nothing.
            restrict_vocab: search only the first so many words (``None`` or 0: all).

        Returns:
            ``(word, cosine)`` pairs, highest first; the input words are left out.

        Raises:
            WordError: ``word.not-in-vocabulary``, for the first input word not in it.
            OptionError: ``vectors.argument``: no input, a vector of another width, a bad
                ``topn`` or ``restrict_vocab``.
        """
        count = checked_count(topn, "topn", "most_similar", none=True)
        if count is not None and count < 1:
            return []
        end = self._end(restrict_vocab, "most_similar")
        keys, weights = weighted(positive, negative, "most_similar")
        scores: FloatArray = self._unit[:end] @ self._mean(keys, weights, "most_similar")
        return self._listed(scores, count, self._rows_of(keys))

    def similar_by_vector(
        self, vector: npt.ArrayLike, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | FloatArray:
        """The words nearest ``vector`` by cosine (:meth:`most_similar` of the vector)."""
        return self.most_similar(
            positive=[np.asarray(vector)], topn=topn, restrict_vocab=restrict_vocab
        )

    def similar_by_key(
        self, key: str, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | FloatArray:
        """The words nearest the word ``key`` (:meth:`most_similar` of the word)."""
        return self.most_similar(positive=[key], topn=topn, restrict_vocab=restrict_vocab)

    similar_by_word = similar_by_key

    def most_similar_cosmul(
        self,
        positive: object = None,
        negative: object = None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]] | npt.NDArray[np.floating]:
        """The ``topn`` words by Levy and Goldberg's 3CosMul: the product of the positive words'
        cosines, each shifted to ``[0, 1]``, over the negative words' (plus ``1e-6``).

        Raises:
            WordError: ``word.not-in-vocabulary``.
            OptionError: ``vectors.argument``: no positive input, a bad ``topn``.
        """
        count = checked_count(topn, "topn", "most_similar_cosmul", none=True)
        if count is not None and count < 1:
            return []
        end = self._end(restrict_vocab, "most_similar_cosmul")
        ups, downs = as_list(positive), as_list(negative)
        if not ups:
            raise argument_error("most_similar_cosmul", "a positive word or vector", [])
        excluded = self._rows_of(ups + downs)
        shifted = [
            (1 + self._unit[:end] @ self._term(item, "most_similar_cosmul")) / 2
            for item in ups + downs
        ]
        scores: npt.NDArray[np.floating] = np.prod(shifted[: len(ups)], axis=0) / (
            np.prod(shifted[len(ups) :], axis=0) + COSMUL_EPSILON
        )
        return self._listed(scores, count, excluded)

    def similarity(self, w1: str | int, w2: str | int) -> np.float32:
        """The cosine of two words' vectors.

        Raises:
            WordError: ``word.not-in-vocabulary``.
        """
        return np.float32(np.dot(unit_of(self[w1]), unit_of(self[w2])))

    def distance(self, w1: str | int, w2: str | int) -> np.float32:
        """One less the cosine of two words' vectors (gensim's cosine distance)."""
        return np.float32(1 - self.similarity(w1, w2))

    def n_similarity(self, ws1: Sequence[str], ws2: Sequence[str]) -> np.float32:
        """The cosine of the means of two lists of words' vectors.

        Raises:
            WordError: ``word.not-in-vocabulary``.
            OptionError: ``vectors.argument``, an empty list or a single ``str``.
        """
        first, second = self._plain_mean(ws1, "n_similarity"), self._plain_mean(ws2, "n_similarity")
        return np.float32(np.dot(unit_of(first), unit_of(second)))

    def doesnt_match(self, words: Sequence[str]) -> str:
        """The word farthest from the mean of the words' unit vectors.

        Raises:
            WordError: ``word.not-in-vocabulary``, a word outside the vocabulary (named).
            OptionError: ``vectors.argument``, no word.
        """
        rows = self._rows(words, "doesnt_match")
        units = np.array(self._unit[rows], dtype=np.float32)
        mean = _float32_mean(units)
        cosines = units @ unit_of(mean)
        return min(zip(cosines.tolist(), list(words), strict=True))[1]

    def distances(
        self, word_or_vector: str | int | npt.ArrayLike, other_words: Sequence[str] = ()
    ) -> FloatArray:
        """Cosine distances from a word or vector to ``other_words`` (none given: every word).

        Raises:
            WordError: ``word.not-in-vocabulary``.
        """
        if isinstance(word_or_vector, str) or _is_row_number(word_or_vector):
            vector = self.get_vector(word_or_vector)
        else:
            vector = checked_vector(np.asarray(word_or_vector), self.vector_size, "distances")
        if other_words:
            others = self._vectors[self._rows(other_words, "distances")]
            lengths = np.linalg.norm(others, axis=1)
        else:
            others, lengths = self._vectors, self.norms
        distances: FloatArray = 1 - (others @ vector) / (np.linalg.norm(vector) * lengths)
        return distances

    def closer_than(self, key1: str | int, key2: str | int) -> list[str]:
        """Every word closer to ``key1`` than ``key2`` is (``key1`` itself left out)."""
        distances = self.distances(key1)
        first, second = self.get_index(key1), self.get_index(key2)
        closer = np.flatnonzero(distances < distances[second])
        return [self._words[row] for row in closer.tolist() if row != first]

    def rank(self, key1: str | int, key2: str | int) -> int:
        """1 plus how many words are closer to ``key1`` than ``key2`` is.

        Raises:
            WordError: ``word.not-in-vocabulary``.
        """
        return len(self.closer_than(key1, key2)) + 1

    # Evaluations ----------------------------------------------------------------------------

    def evaluate_word_pairs(
        self,
        pairs: str | os.PathLike[str],
        delimiter: str = "\t",
        restrict_vocab: int | None = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
    ) -> tuple[PearsonRResult, SignificanceResult, float]:
        """Correlate the cosines of word pairs with people's scores, as gensim's
        ``evaluate_word_pairs`` (a line: two words and a score, split at ``delimiter``; ``#``
        starts a comment).

        Args:
            pairs: the file (WordSim-353, SimLex-999, ...), UTF-8.
            delimiter: what separates the three fields of a line.
            restrict_vocab: only the first so many words count as known (None: all).
            case_insensitive: compare upper-cased (a word's first spelling in the table wins).
            dummy4unknown: a pair with an unknown word scores 0 instead of being skipped.

        Returns:
            ``(pearson, spearman, oov_ratio)``: SciPy-like results that unpack as
            ``(statistic, pvalue)``, and the percentage of pairs with an unknown word.

        Raises:
            FileAccessError: ``vectors.read``.
            FormatError: ``vectors.evaluation-file``, no pair to score or not UTF-8.
        """
        path = path_of(pairs, "evaluate_word_pairs")
        end = checked_count(restrict_vocab, "restrict_vocab", "evaluate_word_pairs", none=True)
        if not isinstance(delimiter, str) or not delimiter:
            raise argument_error("evaluate_word_pairs", "a non-empty str delimiter", delimiter)
        return word_pairs(self, path, delimiter, end, case_insensitive, dummy4unknown)

    def evaluate_word_analogies(
        self,
        analogies: str | os.PathLike[str],
        restrict_vocab: int | None = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
    ) -> tuple[float, list[dict[str, object]]]:
        """Solve the analogies of a file by 3CosAdd (``b - a + c``, the input words left out),
        as gensim's ``evaluate_word_analogies`` (``: section`` lines, then ``a b c d`` lines).

        Returns:
            ``(score, sections)``: the share answered right, and per section (the last is
            ``"Total accuracy"``) a dict of its name and its ``correct`` and ``incorrect``
            quadruples.

        Raises:
            FileAccessError: ``vectors.read``.
            FormatError: ``vectors.evaluation-file``: a line before the first section, no
                analogy, not UTF-8.
        """
        path = path_of(analogies, "evaluate_word_analogies")
        end = checked_count(restrict_vocab, "restrict_vocab", "evaluate_word_analogies", none=True)
        return evaluate_analogies(self, path, end, case_insensitive, dummy4unknown)

    # Helpers of the queries -----------------------------------------------------------------

    def _end(self, restrict_vocab: object, function: str) -> int:
        end = checked_count(restrict_vocab, "restrict_vocab", function, none=True)
        return len(self) if not end else min(end, len(self))

    def _term(self, item: object, function: str) -> np.ndarray:
        """A query vector as given (checked), or the unit vector of a word."""
        if isinstance(item, np.ndarray):
            return checked_vector(item, self.vector_size, function)
        unit: FloatArray = self._unit[self.get_index(item)]
        return unit

    def _rows_of(self, items: list[object]) -> set[int]:
        return {self.get_index(item) for item in items if not isinstance(item, np.ndarray)}

    def _listed(
        self, scores: npt.NDArray[np.floating], count: int | None, excluded: set[int]
    ) -> list[tuple[str, float]] | npt.NDArray[np.floating]:
        """Every score (``count`` None), or the ``count`` best words and scores."""
        if count is None:
            return scores
        best = best_rows(scores, count, excluded)
        return [(self._words[row], float(scores[row])) for row in best]

    def _mean(
        self, keys: list[object], weights: npt.NDArray[np.float64], function: str
    ) -> FloatArray:
        """gensim's ``get_mean_vector(keys, weights, pre_normalize=True, post_normalize=True)``."""
        mean = np.zeros(self.vector_size, dtype=np.float32)
        total = 0.0
        for key, weight in zip(keys, weights, strict=True):
            mean += weight * self._term(key, function)
            total += abs(weight)
        return unit_of(mean / total if total > 0 else mean)

    def _rows(self, words: Sequence[str], function: str) -> list[int]:
        if isinstance(words, str) or not words:
            raise argument_error(function, "a non-empty list of words", words)
        return [self.get_index(word) for word in words]

    def _plain_mean(self, words: Sequence[str], function: str) -> FloatArray:
        return _float32_mean(self._vectors[self._rows(words, function)])


def _float32_mean(rows: FloatArray) -> FloatArray:
    """The mean of rows added one by one in float32, as gensim's ``get_mean_vector`` adds."""
    mean = np.zeros(rows.shape[1], dtype=np.float32)
    for row in rows:
        mean += row
    total: FloatArray = mean / np.float32(rows.shape[0])
    return total


@dataclass(frozen=True)
class TablePair:
    """The two files of a pair."""

    table: Path
    tokenizer: Path


def _is_row_number(key: object) -> bool:
    return isinstance(key, int | np.integer) and not isinstance(key, bool)


def checked_words(words: Iterable[str]) -> list[str]:
    """The words as a list, once each is a distinct non-empty ``str`` without a separator."""
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
    """``vectors`` as a new C-ordered float32 array, once it has ``rows`` rows of finite reals."""
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
