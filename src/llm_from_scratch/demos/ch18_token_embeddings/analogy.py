"""``ch18 neighbours --analogy A B C``: "A is to B as C is to ?", answered on the table's words
by gensim's ``most_similar(positive=[B, C], negative=[A])``, the three words left out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    TableFacts,
    WordPieces,
    checked_count,
    table_facts,
    word_pieces,
)
from llm_from_scratch.vectors import WordVectors
from llm_from_scratch.vectors.pair import pair_words


@dataclass(frozen=True)
class AnalogyReport:
    """The three words (as the table's tokens), the answers with their cosines, the table."""

    words: tuple[str, str, str]
    answers: tuple[tuple[str, float], ...]
    table: TableFacts


def analogy_report(
    table: CosineTable,
    pieces: WordPieces,
    words: Sequence[str],
    count: int,
    table_path: str,
) -> AnalogyReport:
    """The ``count`` best answers to ``words[0]`` : ``words[1]`` :: ``words[2]`` : ?.

    Raises:
        OptionError: ``neighbours.count``.
        WordError: a word that is not one word piece (``word.several`` names them all).
    """
    checked_count(count, table.vocabulary_size)
    first, second, third = (piece.token for piece in word_pieces(pieces, words))
    array = table.embedding.table.tensor.numpy()
    names, rows = pair_words(int(array.shape[0]), pieces)
    vectors = WordVectors(names, array[rows])
    answers = vectors.most_similar(positive=[second, third], negative=[first], topn=count)
    return AnalogyReport((first, second, third), tuple(answers), table_facts(table, table_path))
