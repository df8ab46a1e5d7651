"""The vocabulary of a corpus: word IDs by falling count (ties by the word), the unknown token
``[UNK]`` last with a count of 0; the trainer's tokens of a text (:data:`UNKNOWN_WORD` for a word
outside, :data:`SENTENCE_END` at each line end); a ``tokenizer.json`` mapping a line to the IDs.

    >>> vocabulary = Vocabulary.build([["to", "be"], ["or", "not", "to", "be"], ["to"]], 2)
    >>> vocabulary.words, vocabulary.counts.tolist()
    (('to', 'be', '[UNK]'), [3, 2, 0])
    >>> vocabulary.tokens("To be, or\\nnot TO").tolist()
    [0, 1, -1, -2, -1, 0]
"""

from __future__ import annotations

import json
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from llm_from_scratch.errors import CorpusError
from llm_from_scratch.files import replace_file
from llm_from_scratch.training.corpus import os_reason
from llm_from_scratch.training.kernels import SENTENCE_END, UNKNOWN_WORD
from llm_from_scratch.training.words import LINE_ENDS, WORDS, Reading

if TYPE_CHECKING:
    import numpy.typing as npt

UNKNOWN_TOKEN: Final = "[UNK]"
"""The unknown token: the last ID, for a word outside the vocabulary."""
DEFAULT_MIN_COUNT: Final = 5
"""A word seen fewer times is left out of the vocabulary (gensim's default too)."""


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Words by ID (falling count, ties by the word), then the unknown token; ``counts``, how
    often each occurs (read-only ``int64``, 0 for the unknown token); ``reading``."""

    words: tuple[str, ...]
    counts: npt.NDArray[np.int64]
    unknown_token: str = UNKNOWN_TOKEN
    reading: Reading = WORDS

    def __post_init__(self) -> None:
        counts = np.array(self.counts, dtype=np.int64)
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, int],
        min_count: int = DEFAULT_MIN_COUNT,
        max_final_vocab: int | None = None,
        reading: Reading = WORDS,
    ) -> Vocabulary:
        """The words of ``counts`` seen ``min_count`` times or more (the unknown token's own
        name, in a pre-tokenized corpus, is left out: it stands for a word outside). With
        ``max_final_vocab`` the least count is raised, as gensim's ``max_final_vocab`` raises
        it, to one more than the count of the word ranked ``max_final_vocab + 1``.

        Raises:
            CorpusError: ``corpus.min-count`` (not an integer of at least 1; checked first),
                ``corpus.no-words`` (no word), ``corpus.empty-vocabulary`` (none frequent enough).
        """
        minimum = checked_min_count(min_count)
        counts = {word: count for word, count in counts.items() if word != UNKNOWN_TOKEN}
        if not counts:
            raise CorpusError("corpus.no-words")
        if max_final_vocab is not None and max_final_vocab < len(counts):
            ranked = sorted(counts.values(), reverse=True)
            minimum = max(minimum, ranked[max_final_vocab] + 1)
        kept = sorted(
            ((word, count) for word, count in counts.items() if count >= minimum),
            key=lambda item: (-item[1], item[0]),
        )
        if not kept:
            highest = max(counts.values())
            raise CorpusError("corpus.empty-vocabulary", min_count=minimum, highest_count=highest)
        words = tuple(word for word, _ in kept)
        found = np.fromiter((count for _, count in kept), dtype=np.int64, count=len(kept))
        return cls((*words, UNKNOWN_TOKEN), np.append(found, np.int64(0)), reading=reading)

    @classmethod
    def build(
        cls, sentences: Iterable[list[str]], min_count: int = DEFAULT_MIN_COUNT
    ) -> Vocabulary:
        """:meth:`from_counts` of the words of ``sentences`` (``min_count`` checked first)."""
        minimum = checked_min_count(min_count)
        return cls.from_counts(Counter(chain.from_iterable(sentences)), minimum)

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
        """Each word's ID, the unknown token's included (built once)."""
        return {word: token_id for token_id, word in enumerate(self.words)}

    @cached_property
    def _token_ids(self) -> dict[str, int]:
        found = {word: token_id for token_id, word in enumerate(self.words[:-1])}
        found.update(dict.fromkeys(LINE_ENDS, SENTENCE_END))
        return found

    def lookup(self, words: Iterable[str]) -> npt.NDArray[np.int64]:
        """Each word's ID (``int64``), the unknown token's for a word outside, as the saved
        tokenizer maps them."""
        known = self.word_ids
        unknown = self.unknown_id
        return np.fromiter((known.get(word, unknown) for word in words), dtype=np.int64)

    def tokens(self, text: str) -> npt.NDArray[np.int32]:
        """The trainer's tokens of a text (``int32``; see the module docstring)."""
        reading = self.reading
        text = reading.normalized(text)
        found = reading.finder(text, line_ends=True)(text)
        get = self._token_ids.get
        return np.fromiter(map(get, found, repeat(UNKNOWN_WORD)), np.int32, len(found))

    def sentence_tokens(self, sentences: Iterable[Sequence[str]]) -> npt.NDArray[np.int32]:
        """The trainer's tokens of sentences given as token lists, each followed by its end."""
        get = self._token_ids.get
        found = chain.from_iterable((*sentence, "\n") for sentence in sentences)
        return np.fromiter(map(get, found, repeat(UNKNOWN_WORD)), np.int32)

    def tokenizer_json(self) -> str:
        """A Hugging Face ``tokenizers`` file of this vocabulary, written without the package: a
        ``WordLevel`` model with the normalizer and pre-tokenizer of its
        :class:`~llm_from_scratch.training.words.Reading` (``[UNK]`` typed in a text is the word
        ``unk``; in a pre-tokenized text, the unknown token)."""
        document: dict[str, object] = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            **self.reading.tokenizer_parts(),
            "post_processor": None,
            "decoder": None,
            "model": {
                "type": "WordLevel",
                "vocab": self.word_ids,  # a dict: JSON writes it without a copy
                "unk_token": self.unknown_token,
            },
        }
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"

    def save_tokenizer(self, path: Path) -> None:
        """Write :meth:`tokenizer_json` to ``path`` atomically (:meth:`write_tokenizer`).

        Raises:
            CorpusError: ``corpus.unwritable``, with the system's reason.
        """
        try:
            self.write_tokenizer(str(path))
        except OSError as error:
            detail = os_reason(error)
            raise CorpusError("corpus.unwritable", path=str(path), detail=detail) from error

    def write_tokenizer(self, path: str) -> None:
        """The one writer of a ``tokenizer.json``: :meth:`tokenizer_json` to ``path`` by
        :func:`~llm_from_scratch.files.replace_file` (a file ``replace_files`` stages, as a
        finished run's pair, is written directly).

        Raises:
            OSError: as :func:`~llm_from_scratch.files.replace_file`.
        """
        replace_file(path, [memoryview(self.tokenizer_json().encode("utf-8"))])


def checked_min_count(min_count: object) -> int:
    """``min_count`` as an ``int``, if it is an integer (not a ``bool``) of at least 1.

    Raises:
        CorpusError: ``corpus.min-count``, with its ``repr``.
    """
    if not isinstance(min_count, bool):
        try:
            minimum = operator.index(min_count)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if minimum >= 1:
                return minimum
    raise CorpusError("corpus.min-count", detail=repr(min_count))
