"""The vocabulary of a corpus: word IDs by falling frequency, their counts, and a tokenizer file.

:meth:`Vocabulary.build` counts the words of the sentences and keeps those seen at least
``min_count`` times (5 by default, as gensim's word2vec keeps them). IDs go by falling count,
ties by the word in code-point order; the unknown token ``[UNK]`` takes the last ID, with a count
of 0, for a word outside the vocabulary. :meth:`Vocabulary.encode` turns sentences into one flat
array of IDs, dropping the words outside the vocabulary (as gensim drops them), with the offsets
where each sentence starts. :meth:`Vocabulary.save_tokenizer` writes a Hugging Face
``tokenizer.json`` (a ``WordLevel`` model) that maps a line to the same IDs, ``[UNK]`` for the
words outside.

    >>> vocabulary = Vocabulary.build([["to", "be"], ["or", "not", "to", "be"], ["to"]], 2)
    >>> vocabulary.words, vocabulary.counts.tolist()
    (('to', 'be', '[UNK]'), [3, 2, 0])
    >>> ids, starts = vocabulary.encode([["to", "be", "or"], ["not"], ["be", "to"]])
    >>> ids.tolist(), starts.tolist()
    ([0, 1, 1, 0], [0, 2, 4])
"""

from __future__ import annotations

import json
import operator
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.corpus_text import (
    WORD_PATTERN,
    CorpusError,
    write_atomically,
)

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["DEFAULT_MIN_COUNT", "UNKNOWN_TOKEN", "Vocabulary", "checked_min_count"]

#: The unknown token: the last ID, for a word outside the vocabulary.
UNKNOWN_TOKEN: Final = "[UNK]"
#: A word seen fewer times is left out of the vocabulary (gensim's default too).
DEFAULT_MIN_COUNT: Final = 5


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Words by ID (falling count, ties by the word), then the unknown token; and their counts.

    Made by :meth:`build`. ``counts[i]`` is how often ``words[i]`` occurs in the corpus it was
    built from (an ``int64`` array, read-only), 0 for the unknown token. The table that goes with
    it has :attr:`vocabulary_size` rows, the unknown token's included.
    """

    words: tuple[str, ...]
    counts: npt.NDArray[np.int64]
    unknown_token: str = UNKNOWN_TOKEN

    def __post_init__(self) -> None:
        counts = np.array(self.counts, dtype=np.int64)
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)

    @classmethod
    def build(
        cls, sentences: Iterable[list[str]], min_count: int = DEFAULT_MIN_COUNT
    ) -> Vocabulary:
        """Count the words of ``sentences`` and keep those seen ``min_count`` times or more.

        Raises:
            CorpusError: ``min-count`` (not an integer of at least 1; checked before a sentence
                is read), ``no-words`` (no sentence has a word), ``empty-vocabulary`` (no word
                occurs ``min_count`` times).
        """
        minimum = checked_min_count(min_count)
        counter = Counter(chain.from_iterable(sentences))
        if not counter:
            raise CorpusError("no-words")
        kept = sorted(
            ((word, count) for word, count in counter.items() if count >= minimum),
            key=lambda item: (-item[1], item[0]),
        )
        if not kept:
            highest = max(counter.values())
            raise CorpusError("empty-vocabulary", min_count=minimum, highest_count=highest)
        words = tuple(word for word, _ in kept)
        counts = np.fromiter((count for _, count in kept), dtype=np.int64, count=len(kept))
        return cls((*words, UNKNOWN_TOKEN), np.append(counts, np.int64(0)))

    @property
    def vocabulary_size(self) -> int:
        """The number of IDs, the unknown token's included: the rows of the table."""
        return len(self.words)

    @property
    def unknown_id(self) -> int:
        """The unknown token's ID, the last one."""
        return len(self.words) - 1

    @cached_property
    def word_ids(self) -> Mapping[str, int]:
        """Each word's ID, the unknown token's included (a new dict, built once)."""
        return {word: token_id for token_id, word in enumerate(self.words)}

    @cached_property
    def _known_ids(self) -> dict[str, int]:
        return {word: token_id for token_id, word in enumerate(self.words[:-1])}

    def lookup(self, words: Iterable[str]) -> npt.NDArray[np.int64]:
        """Each word's ID, the unknown token's for a word outside the vocabulary (as the saved
        tokenizer maps them), as ``int64``."""
        unknown = repeat(self.unknown_id)
        return np.fromiter(map(self._known_ids.get, words, unknown), dtype=np.int64)

    def encode(
        self, sentences: Iterable[list[str]]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The IDs of the words in the vocabulary, sentence after sentence, and where each
        sentence starts.

        Words outside the vocabulary are dropped, and a sentence left with no word is dropped
        too. ``ids`` is a flat ``int64`` array; ``starts`` (``int64``) has one offset per
        sentence kept and then ``len(ids)``: sentence ``i`` is ``ids[starts[i]:starts[i + 1]]``,
        and ``np.diff(starts)`` are the lengths (all at least 1).
        """
        lengths: array[int] = array("q")

        def words() -> Iterator[str]:
            for sentence in sentences:
                lengths.append(len(sentence))
                yield from sentence

        found = np.fromiter(map(self._known_ids.get, words(), repeat(-1)), dtype=np.int64)
        kept = found >= 0
        kept_before = np.zeros(found.size + 1, dtype=np.int64)
        np.cumsum(kept, dtype=np.int64, out=kept_before[1:])
        sentence_ends = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(lengths, dtype=np.int64), out=sentence_ends[1:])
        bounds = kept_before[sentence_ends]  # where each sentence starts, empty ones included
        starts = bounds[np.concatenate(([True], bounds[1:] > bounds[:-1]))]
        return found[kept], starts

    def tokenizer_json(self) -> str:
        """A Hugging Face ``tokenizers`` file of this vocabulary, as text.

        A ``WordLevel`` model of the words and their IDs with the unknown token, a ``Lowercase``
        normalizer, and a ``Split`` pre-tokenizer that keeps the matches of
        :data:`~llm_from_scratch.demos.ch18_token_embeddings.corpus_text.WORD_PATTERN` and drops
        the rest (``invert``), so a line maps to the IDs of its words with ``[UNK]`` for those
        outside. The unknown token is not an added token: ``[UNK]`` typed in a text is the word
        ``unk``, as for the encoder. Written without the ``tokenizers`` package.
        """
        document: dict[str, object] = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {
                "type": "Split",
                "pattern": {"Regex": WORD_PATTERN},
                "behavior": "Removed",
                "invert": True,
            },
            "post_processor": None,
            "decoder": None,
            "model": {
                "type": "WordLevel",
                "vocab": dict(self.word_ids),
                "unk_token": self.unknown_token,
            },
        }
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"

    def save_tokenizer(self, path: Path) -> None:
        """Write :meth:`tokenizer_json` to ``path`` atomically (a new file renamed into place).

        Raises:
            CorpusError: ``unwritable``, with the system's reason.
        """
        write_atomically(path, self.tokenizer_json().encode("utf-8"))


def checked_min_count(min_count: object) -> int:
    """``min_count`` as an ``int``, if it is an integer (not a ``bool``) of at least 1.

    Raises:
        CorpusError: ``min-count``, with its ``repr``.
    """
    if not isinstance(min_count, bool):
        try:
            minimum = operator.index(min_count)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if minimum >= 1:
                return minimum
    raise CorpusError("min-count", detail=repr(min_count))
