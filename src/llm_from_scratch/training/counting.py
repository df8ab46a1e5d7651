"""Counting the words of a corpus, with gensim's ``max_vocab_size``: while the words are counted,
once a sentence leaves more different words than the cap, every word seen fewer than ``n`` times
so far is forgotten, ``n`` being 1 the first time and one more each time after (gensim's
``prune_vocab``), so the counts of a corpus under a cap are gensim's.

    >>> counter = WordCounter(max_vocab_size=2)
    >>> for sentence in (["a", "b"], ["a", "c"], ["a", "b"]):
    ...     counter.add_sentence(sentence)
    >>> dict(counter.counts), counter.words
    ({'a': 3, 'b': 2}, 6)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence


class WordCounter:
    """The counts of the words seen so far (``counts``), and every word read (``words``,
    those forgotten under the cap included)."""

    def __init__(self, max_vocab_size: int | None = None) -> None:
        self.counts: Counter[str] = Counter()
        self.words = 0
        self._cap = max_vocab_size
        self._least = 1

    def add_sentence(self, words: Sequence[str], read: int | None = None) -> None:
        """Count one sentence's words (of ``read`` words read, default all), then forget the
        rare ones if over the cap."""
        self.counts.update(words)
        self.words += len(words) if read is None else read
        if self._cap is not None and len(self.counts) > self._cap:
            self._prune()

    def add_text(
        self,
        words: list[str],
        read: int,
        sentences: Callable[[], Iterable[tuple[list[str], int]]],
    ) -> None:
        """Count a piece of text: its ``words`` (of ``read`` words read), and its sentences
        (each with the words read in it) ``sentences()`` gives: all at once when no sentence of
        it could take the counts over the cap, else sentence by sentence."""
        if self._cap is None:
            self.counts.update(words)
        else:
            found = Counter(words)
            if len(self.counts) + _new_words(self.counts, found) > self._cap:
                for sentence, sentence_read in sentences():
                    self.add_sentence(sentence, sentence_read)
                return
            self.counts.update(found)
        self.words += read

    def _prune(self) -> None:
        least, counts = self._least, self.counts
        for word in [word for word, count in counts.items() if count < least]:
            del counts[word]
        self._least += 1


def _new_words(known: Counter[str], counts: Counter[str]) -> int:
    """How many words of ``counts`` ``known`` does not hold."""
    return sum(1 for word in counts if word not in known)
