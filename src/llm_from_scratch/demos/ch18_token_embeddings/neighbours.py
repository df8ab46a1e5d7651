"""ID neighbours against vector neighbours (``docs/lesson.md``, Vectors, not IDs): vectors looked
up through the layer, cosines in float64 (a row of zeros has cosine 0). Rows 0 and 3 agree here:

    >>> from llm_from_scratch.nn import Embedding, NamedParameter
    >>> from llm_from_scratch.tensor import Tensor
    >>> rows = [1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 2.0, 0.1]
    >>> layer = Embedding.from_parameter(
    ...     NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), rows)))
    >>> table = CosineTable.of(layer)
    >>> id_neighbour_ids(0, 2, 4), vector_neighbour_ids(table.cosines_to_row(0), 0, 2)
    ((1, 2), (3, 1))
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

import numpy as np

from llm_from_scratch.errors import OptionError, WordError
from llm_from_scratch.figures.scatter import ProjectedWord, Projection
from llm_from_scratch.labels import GROUP_NAMES

if TYPE_CHECKING:
    import numpy.typing as npt

    from llm_from_scratch.nn import Embedding

#: Word groups: each group's name and its words.
Groups = Sequence[tuple[str, Sequence[str]]]
_GROUP_WORDS: Final = (  # in the order of GROUP_NAMES
    ("king", "queen", "prince", "princess"),
    ("one", "two", "three", "four"),
    ("monday", "tuesday", "wednesday", "friday"),
    ("red", "blue", "green", "yellow"),
    ("dog", "cat", "horse", "cow"),
)
#: The groups of the figure and of the group comparison: each word one piece of MiniLM's table.
DEFAULT_GROUPS: Final[Groups] = tuple(zip(GROUP_NAMES, _GROUP_WORDS, strict=True))
#: The words of the figure's neighbour table: the first of each group.
DEFAULT_WORDS: Final = tuple(words[0] for _, words in DEFAULT_GROUPS)
#: Neighbours per list unless ``--count`` says otherwise.
DEFAULT_COUNT: Final = 5
#: The random pairs of rows whose mean cosine is the baseline a cosine is read against.
BASELINE_PAIRS: Final = 10_000
#: The table values read at a time (at least one row), in float64 copies of 2 x 8 bytes a value.
CHUNK_VALUES: Final = 1 << 17


class WordPieces(Protocol):
    """What the neighbours need from a tokenizer: its unknown token (``None``: it has none), a
    word's pieces with their IDs (no special tokens), and an ID's token (``None``: no such ID)."""

    @property
    def unknown_token(self) -> str | None: ...

    def pieces(self, word: str) -> tuple[tuple[str, int], ...]: ...

    def token(self, token_id: int) -> str | None: ...


@dataclass(frozen=True)
class Piece:
    """One word piece: its token text and its ID, the table row it selects."""

    token: str
    id: int


@dataclass(frozen=True)
class Neighbour:
    """A row near a word: its ID, its token and the cosine of its vector to the word's."""

    id: int
    token: str | None
    cosine: float


@dataclass(frozen=True)
class WordNeighbours:
    """One word's ID neighbours and vector neighbours, each with its mean cosine."""

    word: str
    pieces: tuple[Piece, ...]
    id_neighbours: tuple[Neighbour, ...]
    vector_neighbours: tuple[Neighbour, ...]
    id_mean_cosine: float
    vector_mean_cosine: float


@dataclass(frozen=True)
class GroupCosines:
    """Mean cosines inside one group (over its unordered pairs) and from it to the others."""

    group: str
    words: tuple[str, ...]
    within: float
    between: float


@dataclass(frozen=True)
class GroupSummary:
    """The mean over the groups of the mean cosine inside a group and to the other groups'
    words (NaN without groups), and their difference."""

    within: float
    between: float

    @property
    def separation(self) -> float:
        """:attr:`within` minus :attr:`between`."""
        return self.within - self.between


def group_summary(groups: Sequence[GroupCosines]) -> GroupSummary:
    """The one summary of :func:`group_cosines`' groups, the train report's and the bench's."""
    within = mean_or_nan([group.within for group in groups])
    return GroupSummary(within, mean_or_nan([group.between for group in groups]))


@dataclass(frozen=True, eq=False)
class CosineTable:
    """An embedding layer and each row's Euclidean norm in float64 (read-only); the table is read
    in chunks of :data:`CHUNK_VALUES` values, never copied whole."""

    embedding: Embedding
    norms: npt.NDArray[np.float64]

    @classmethod
    def of(cls, embedding: Embedding) -> CosineTable:
        """The layer and its rows' norms."""
        rows = embedding.table.tensor.numpy()
        norms = np.empty(rows.shape[0], dtype=np.float64)
        for chunk in _chunks(rows):
            norms[chunk] = np.linalg.norm(rows[chunk].astype(np.float64), axis=1)
        norms.flags.writeable = False
        return cls(embedding, norms)

    @property
    def vocabulary_size(self) -> int:
        """``V``, the number of rows."""
        return self.embedding.vocabulary_size

    def vectors(self, token_ids: Sequence[int]) -> npt.NDArray[np.float64]:
        """The rows of ``token_ids``, looked up through the layer, as float64 ``[N, d]``."""
        return self.embedding.forward(list(token_ids), (len(token_ids),)).numpy().astype(np.float64)

    def cosines_to_row(self, token_id: int) -> npt.NDArray[np.float64]:
        """The cosine of every row to the looked-up vector of ``token_id``: ``[V]`` (each row
        scaled to unit length in float64, a row of zeros left zero, then its dot product)."""
        vector = self.vectors([token_id])[0]
        direction = vector / np.linalg.norm(vector)
        rows = self.embedding.table.tensor.numpy()
        cosines = np.empty(rows.shape[0], dtype=np.float64)
        for chunk in _chunks(rows):
            unit = _unit(rows[chunk].astype(np.float64), self.norms[chunk, None])
            cosines[chunk] = unit @ direction
        return cosines


def _chunks(rows: npt.NDArray[np.floating]) -> Iterator[slice]:
    """The row ranges of ``rows``, :data:`CHUNK_VALUES` values each (at least one row)."""
    step = max(1, CHUNK_VALUES // max(1, rows.shape[1]))
    return (slice(start, start + step) for start in range(0, rows.shape[0], step))


def word_piece(pieces: WordPieces, word: str) -> Piece:
    """The one word piece of ``word``.

    Raises:
        WordError: ``word.empty``, ``word.unknown``, then ``word.pieces``.
    """
    found = pieces.pieces(word)
    if not found:
        raise WordError("word.empty", word=word)
    unknown = pieces.unknown_token
    if unknown is not None and any(token == unknown for token, _ in found):
        raise WordError("word.unknown", word=word, unknown_token=unknown)
    if len(found) > 1:
        listed = ", ".join(f"{token} {token_id}" for token, token_id in found)
        raise WordError("word.pieces", word=word, count=len(found), pieces=listed)
    token, token_id = found[0]
    return Piece(token, token_id)


def word_pieces(pieces: WordPieces, words: Sequence[str]) -> tuple[Piece, ...]:
    """The one word piece of each word, every word checked before any is refused.

    Raises:
        WordError: the one word's rule (:func:`word_piece`) when one word is not a single
            piece; ``word.several``, naming each, when more are not.
    """
    found: list[Piece] = []
    refused: list[WordError] = []
    for word in words:
        try:
            found.append(word_piece(pieces, word))
        except WordError as error:
            refused.append(error)
    if len(refused) == 1:
        raise refused[0]
    if refused:
        named = ", ".join(repr(error.fields["word"]) for error in refused)
        raise WordError("word.several", count=len(refused), words=named)
    return tuple(found)


def random_pair_cosine(table: CosineTable, pairs: int = BASELINE_PAIRS, seed: int = 0) -> float:
    """The mean cosine of ``pairs`` random pairs of distinct rows (seeded): what a cosine of two
    unrelated words is near, to read the neighbours' cosines against."""
    size = table.vocabulary_size
    if size < 2:
        return float("nan")
    generator = np.random.default_rng(seed)
    first = generator.integers(size, size=pairs)
    second = (first + generator.integers(1, size, size=pairs)) % size
    rows = table.embedding.table.tensor.numpy()
    ones, others = (
        _unit(rows[ids].astype(np.float64), table.norms[ids, None]) for ids in (first, second)
    )
    return float(np.mean(np.einsum("ij,ij->i", ones, others)))


def checked_count(count: int, vocabulary_size: int) -> int:
    """``count``, if it is in ``1..vocabulary_size - 1`` (else ``neighbours.count``)."""
    if not 1 <= count <= vocabulary_size - 1:
        raise OptionError("neighbours.count", maximum=vocabulary_size - 1, count=count)
    return count


def id_neighbour_ids(token_id: int, count: int, vocabulary_size: int) -> tuple[int, ...]:
    """The ``count`` IDs nearest to ``token_id`` in number, below first on a tie, in the table.

    Example:
        >>> id_neighbour_ids(5, 4, 10), id_neighbour_ids(0, 3, 10), id_neighbour_ids(9, 3, 10)
        ((4, 6, 3, 7), (1, 2, 3), (8, 7, 6))
    """
    checked_count(count, vocabulary_size)
    found: list[int] = []
    for step in range(1, vocabulary_size):
        found.extend(
            candidate
            for candidate in (token_id - step, token_id + step)
            if 0 <= candidate < vocabulary_size
        )
        if len(found) >= count:
            break
    return tuple(found[:count])


def vector_neighbour_ids(
    cosines: npt.NDArray[np.float64], token_id: int, count: int
) -> tuple[int, ...]:
    """The ``count`` IDs of highest cosine, ``token_id`` left out, the lower ID first on a tie."""
    checked_count(count, cosines.size)
    others = cosines.copy()
    others[token_id] = -np.inf
    threshold = np.partition(others, others.size - count)[others.size - count]
    candidates = np.flatnonzero(others >= threshold)
    order = np.lexsort((candidates, -others[candidates]))
    return tuple(int(i) for i in candidates[order][:count])


def word_neighbours(
    table: CosineTable, pieces: WordPieces, word: str, count: int = DEFAULT_COUNT
) -> WordNeighbours:
    """A word's ``count`` ID neighbours and vector neighbours with their cosines.

    Raises:
        OptionError: ``neighbours.count``, ``count`` is outside ``1..V-1`` (checked first).
        WordError: from :func:`word_piece`; ``word.zero-vector``, the word's row is all zeros.
        IdError: ``ids.out-of-range``, the tokenizer gives an ID the table does not have.
    """
    checked_count(count, table.vocabulary_size)
    piece = word_piece(pieces, word)
    vector = table.vectors([piece.id])[0]
    if not np.any(vector):
        raise WordError("word.zero-vector", id=piece.id, word=word)
    cosines = table.cosines_to_row(piece.id)
    by_id = _neighbours(pieces, cosines, id_neighbour_ids(piece.id, count, table.vocabulary_size))
    by_vector = _neighbours(pieces, cosines, vector_neighbour_ids(cosines, piece.id, count))
    return WordNeighbours(
        word=word,
        pieces=(piece,),
        id_neighbours=by_id,
        vector_neighbours=by_vector,
        id_mean_cosine=mean_or_nan([neighbour.cosine for neighbour in by_id]),
        vector_mean_cosine=mean_or_nan([neighbour.cosine for neighbour in by_vector]),
    )


def group_cosines(
    table: CosineTable,
    pieces: WordPieces,
    groups: Groups = DEFAULT_GROUPS,
) -> tuple[GroupCosines, ...]:
    """Each group's mean cosine over its pairs of words, and over the pairs that join one of its
    words to another group's (``WordError`` for the first word not one piece)."""
    labels, _, unit = _group_units(table, pieces, groups)
    cosines = unit @ unit.T
    found = []
    for group, words in groups:
        inside = [k for k, label in enumerate(labels) if label == group]
        outside = [k for k, label in enumerate(labels) if label != group]
        pairs = [cosines[a, b] for a, b in itertools.combinations(inside, 2)]
        across = [cosines[a, b] for a in inside for b in outside]
        found.append(GroupCosines(group, tuple(words), mean_or_nan(pairs), mean_or_nan(across)))
    return tuple(found)


def present_groups(pieces: WordPieces, groups: Groups = DEFAULT_GROUPS) -> Groups:
    """Each group's words that are one word piece, the groups left with two or more."""
    found = ((group, tuple(word for word in words if _is_one_piece(pieces, word)))
             for group, words in groups)  # fmt: skip
    return tuple((group, words) for group, words in found if len(words) >= 2)


def _is_one_piece(pieces: WordPieces, word: str) -> bool:
    try:
        word_piece(pieces, word)
    except WordError:
        return False
    return True


def project_groups(
    table: CosineTable,
    pieces: WordPieces,
    groups: Groups = DEFAULT_GROUPS,
) -> Projection:
    """The groups' words on the first two principal components of their centred unit vectors
    (each component's largest coordinate positive); ``WordError`` as :func:`group_cosines`."""
    labels, ids, unit = _group_units(table, pieces, groups)
    centred = unit - unit.mean(axis=0)
    left, singular, _ = np.linalg.svd(centred, full_matrices=False)
    coordinates = left[:, :2] * singular[:2]
    coordinates *= np.where(_largest_is_negative(coordinates), -1.0, 1.0)
    variance = singular**2
    explained = variance[:2] / variance.sum()
    words = [word for _, group_words in groups for word in group_words]
    projected = tuple(
        ProjectedWord(label, word, token_id, float(x), float(y))
        for label, word, token_id, (x, y) in zip(labels, words, ids, coordinates, strict=True)
    )
    return Projection(projected, (float(explained[0]), float(explained[1])))


def _neighbours(
    pieces: WordPieces, cosines: npt.NDArray[np.float64], ids: Sequence[int]
) -> tuple[Neighbour, ...]:
    return tuple(Neighbour(i, pieces.token(i), float(cosines[i])) for i in ids)


def mean_or_nan(values: Sequence[float]) -> float:
    """The mean of ``values``, NaN for none."""
    return float(np.mean(values)) if values else float("nan")


def _group_units(
    table: CosineTable, pieces: WordPieces, groups: Groups
) -> tuple[list[str], list[int], npt.NDArray[np.float64]]:
    """Each word's group, its ID and its unit vector, in the groups' order."""
    labels = [group for group, words in groups for _ in words]
    ids = [word_piece(pieces, word).id for _, words in groups for word in words]
    return labels, ids, _unit(table.vectors(ids))


def _unit(
    vectors: npt.NDArray[np.float64], norms: npt.NDArray[np.float64] | None = None
) -> npt.NDArray[np.float64]:
    """``vectors`` at unit length by their ``norms`` (None: computed), a row of zeros left zero."""
    if norms is None:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: npt.NDArray[np.float64] = np.divide(
        vectors, norms, out=np.zeros_like(vectors), where=norms > 0
    )
    return unit


def _largest_is_negative(coordinates: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    largest = np.argmax(np.abs(coordinates), axis=0)
    return np.asarray(coordinates[largest, np.arange(coordinates.shape[1])] < 0)


@dataclass(frozen=True)
class TableFacts:
    """What a report says of its table: name, shape, dtype, file, and the mean cosine of
    ``baseline_pairs`` random pairs of rows (:func:`random_pair_cosine`)."""

    name: str
    shape: tuple[int, int]
    dtype: str
    path: str
    baseline_cosine: float
    baseline_pairs: int = BASELINE_PAIRS


def table_facts(table: CosineTable, table_path: str) -> TableFacts:
    """The facts of ``table``, read from ``table_path``."""
    parameter = table.embedding.table
    shape = (table.vocabulary_size, table.embedding.embedding_width)
    dtype = str(parameter.tensor.dtype)
    return TableFacts(parameter.name, shape, dtype, table_path, random_pair_cosine(table))


@dataclass(frozen=True)
class NeighboursReport:
    """The neighbours of several words in one table: what ``ch18 neighbours`` prints."""

    table: TableFacts
    count: int
    words: tuple[WordNeighbours, ...]


def neighbours_report(
    table: CosineTable, pieces: WordPieces, words: Sequence[str], count: int, table_path: str
) -> NeighboursReport:
    """Each word's neighbours (:func:`word_neighbours`), the count checked before any word and
    every word before any neighbour (:func:`word_pieces`), and the random-pair baseline."""
    checked_count(count, table.vocabulary_size)
    word_pieces(pieces, words)
    found = tuple(word_neighbours(table, pieces, word, count) for word in words)
    return NeighboursReport(table_facts(table, table_path), count, found)


@dataclass(frozen=True)
class NeighboursFigure:
    """The groups' projection and cosines, and a few words' neighbours."""

    projection: Projection
    groups: tuple[GroupCosines, ...]
    neighbours: NeighboursReport


def neighbours_figure(
    table: CosineTable,
    pieces: WordPieces,
    words: Sequence[str],
    count: int,
    table_path: str,
    groups: Groups = DEFAULT_GROUPS,
) -> NeighboursFigure:
    """The ``groups`` as :func:`present_groups` keeps them, and the neighbours of ``words``."""
    report = neighbours_report(table, pieces, words, count, table_path)
    present = present_groups(pieces, groups)
    if len(present) >= 2:  # else the first word that is not one piece is the error
        groups = present
    return NeighboursFigure(
        projection=project_groups(table, pieces, groups),
        groups=group_cosines(table, pieces, groups),
        neighbours=report,
    )
