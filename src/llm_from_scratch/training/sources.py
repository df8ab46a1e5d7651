"""Where a run's words come from: files read in pieces (:class:`FileSource`), or sentences given
as token lists by a restartable iterable (:class:`SentenceSource`), both cut into blocks of
tokens the trainer takes in turn (``docs/training.md``, "Reading the corpus").

    >>> source = SentenceSource([["new_york", "is", "big"], ["2024", "is", "a", "year"]])
    >>> counted = source.count()
    >>> counted.counts["is"], counted.words
    (2, 7)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import numpy as np

from llm_from_scratch.errors import CorpusError
from llm_from_scratch.training.corpus import CorpusFile, Counted, count_corpus, pieces
from llm_from_scratch.training.counting import WordCounter
from llm_from_scratch.training.words import TOKENS, WHITE_SPACE, Reading, compiled

if TYPE_CHECKING:
    import numpy.typing as npt

    from llm_from_scratch.training.vocabulary import Vocabulary

BLOCK_WORDS: Final = 1 << 15
"""The least words of a block of an iterable corpus (whole sentences; the last block fewer)."""
KEPT_TOKENS_BYTES: Final = 1 << 27
"""The most bytes of tokens a run keeps of an epoch for the epochs after it."""
_SPACE: Final = f"[{WHITE_SPACE}]"


class Block(NamedTuple):
    """The tokens of one block, and where the corpus goes on after it: the file and its byte
    offset, or (an iterable) file 0 and the number of sentences read."""

    tokens: npt.NDArray[np.int32]
    file: int
    end: int


@dataclass(frozen=True, eq=False)
class FileSource:
    """A corpus of text files, read as ``reading`` says."""

    files: tuple[CorpusFile, ...]
    reading: Reading

    def count(self, max_vocab_size: int | None = None) -> Counted:
        """The words of the files counted (the files with their encodings found)."""
        return count_corpus(self.files, self.reading, max_vocab_size)

    def blocks(self, vocabulary: Vocabulary, file: int = 0, offset: int = 0) -> Iterator[Block]:
        """The blocks from byte ``offset`` of ``file`` on: one a piece."""
        for index in range(file, len(self.files)):
            start = offset if index == file else 0
            for piece in pieces(self.files[index], start):
                yield Block(vocabulary.tokens(piece.text), index, piece.end)


@dataclass(frozen=True, eq=False)
class SentenceSource:
    """A corpus given as a restartable iterable of token lists, read once to count and once an
    epoch (of what a run does not keep, :class:`KeptBlocks`); its tokens are kept as they are."""

    sentences: Iterable[Sequence[str]]
    files: tuple[CorpusFile, ...] = ()
    reading = TOKENS

    def count(self, max_vocab_size: int | None = None) -> Counted:
        """The tokens counted, each sentence checked as it is read.

        Raises:
            CorpusError: ``corpus.sentence`` (an item that is no token list), ``corpus.token``
                (a token that is not a non-empty ``str`` without white space).
        """
        counter = WordCounter(max_vocab_size)
        for number, sentence in enumerate(self.sentences):
            counter.add_sentence(_checked_sentence(number, sentence))
        return Counted([], counter.counts, counter.words)

    def blocks(self, vocabulary: Vocabulary, file: int = 0, offset: int = 0) -> Iterator[Block]:
        """The blocks of the sentences from number ``offset`` on: whole sentences, at least
        :data:`BLOCK_WORDS` words a block but the last."""
        batch: list[Sequence[str]] = []
        words = read = 0
        for number, sentence in enumerate(self.sentences):
            if number < offset:
                continue
            batch.append(sentence)
            words += len(sentence)
            read = number + 1
            if words >= BLOCK_WORDS:
                yield Block(vocabulary.sentence_tokens(batch), 0, read)
                batch, words = [], 0
        if batch:
            yield Block(vocabulary.sentence_tokens(batch), 0, read)


def kept_tokens_bytes(words: int, vocabulary_size: int, epochs: int) -> int:
    """The most bytes of tokens a run of ``epochs`` keeps (:class:`KeptBlocks`): none for one
    epoch, else two tokens a word of the corpus (a word, a line end) up to
    :data:`KEPT_TOKENS_BYTES`.

        >>> kept_tokens_bytes(913_572, 9_120, 5), kept_tokens_bytes(913_572, 9_120, 1)
        (3654288, 0)
    """
    if epochs < 2:
        return 0
    return min(KEPT_TOKENS_BYTES, 2 * words * kept_token_type(vocabulary_size).itemsize)


def kept_token_type(vocabulary_size: int) -> np.dtype[Any]:
    """The narrowest integer type of a vocabulary's IDs and of the two marks (-1, -2).

    >>> [str(kept_token_type(size)) for size in (128, 129, 32_768, 32_769)]
    ['int8', 'int16', 'int16', 'int32']
    """
    return np.min_scalar_type(-vocabulary_size)


@dataclass(eq=False)
class KeptBlocks:
    """The blocks of an epoch read from the corpus's start, kept for the epochs after it, which
    then read the corpus (and find its words) once: their tokens in the narrowest integer type
    of the vocabulary's IDs, at most ``limit`` bytes, the first blocks of a larger corpus."""

    limit: int
    vocabulary_size: int
    blocks: list[Block] = field(default_factory=list)
    size: int = 0
    complete: bool = False

    def blocks_from(
        self, source: FileSource | SentenceSource, vocabulary: Vocabulary, file: int, offset: int
    ) -> Iterator[Block]:
        """``source.blocks(vocabulary, file, offset)``, the kept ones from memory."""
        if (file, offset) != (0, 0):  # a resumed epoch: read, keep nothing
            yield from source.blocks(vocabulary, file, offset)
        elif self.blocks:
            for block in self.blocks:
                yield Block(block.tokens.astype(np.int32), block.file, block.end)
            if not self.complete:
                yield from source.blocks(vocabulary, self.blocks[-1].file, self.blocks[-1].end)
        else:
            yield from self._kept(source.blocks(vocabulary))

    def _kept(self, blocks: Iterator[Block]) -> Iterator[Block]:
        kind, keeping = kept_token_type(self.vocabulary_size), True
        for block in blocks:
            if keeping:
                tokens = block.tokens.astype(kind)
                keeping = self.size + tokens.nbytes <= self.limit
            if keeping:
                self.blocks.append(Block(tokens, block.file, block.end))
                self.size += tokens.nbytes
            yield block
        self.complete = keeping


def _checked_sentence(number: int, sentence: Any) -> list[str]:
    if isinstance(sentence, (str, bytes)):
        raise CorpusError("corpus.sentence", number=number, detail=f"the {_kind(sentence)}")
    try:
        tokens = list(sentence)
    except TypeError:
        detail = f"a {type(sentence).__name__}"
        raise CorpusError("corpus.sentence", number=number, detail=detail) from None
    if not set(map(type, tokens)) <= {str} or "" in tokens or _holds_space(tokens):
        _refuse_token(number, tokens)
    elif not "".join(tokens).isascii():
        _refuse_unencodable(number, tokens)
    return tokens


def _refuse_unencodable(number: int, tokens: list[str]) -> None:
    """Refuse a token UTF-8 cannot encode (a lone surrogate): no file could hold it."""
    for token in tokens:
        try:
            token.encode("utf-8")
        except UnicodeEncodeError:
            detail = "no UTF-8 text (it holds a lone surrogate)"
            raise CorpusError("corpus.token", number=number, token=token, detail=detail) from None


def _holds_space(tokens: list[str]) -> bool:
    return compiled(_SPACE).search("".join(tokens)) is not None


def _refuse_token(number: int, tokens: list[Any]) -> None:
    for token in tokens:
        if not isinstance(token, str):
            detail = f"a {type(token).__name__}"
        elif not token:
            detail = "empty"
        elif compiled(_SPACE).search(token):
            detail = "holding white space"
        else:
            continue
        raise CorpusError("corpus.token", number=number, token=token, detail=detail)


def _kind(sentence: str | bytes) -> str:
    shown = sentence if len(sentence) <= 40 else sentence[:40]
    return f"{type(sentence).__name__} {shown!r}{'...' if len(sentence) > 40 else ''}"
