"""``llm-from-scratch ch18 train``: learn a token table from a corpus, and report what it learned
(:func:`train`): the random table and the trained one measured alike (:class:`TableView`); the
library writes the table and its tokenizer as one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CosineTable,
    GroupCosines,
    Groups,
    WordNeighbours,
    group_cosines,
    group_summary,
    present_groups,
    project_groups,
    word_neighbours,
)
from llm_from_scratch.figures.scatter import Projection
from llm_from_scratch.files import remove_stale_temporaries
from llm_from_scratch.labels import TRAIN_GROUP_NAMES
from llm_from_scratch.training.checkpoint import Origin
from llm_from_scratch.training.options import (
    CHECKPOINT_FILE,
    MODEL_FILE,
    TABLE_FILE,
    TOKENIZER_FILE,
    TrainOptions,
)
from llm_from_scratch.training.run import EpochSummary, Progress, Run
from llm_from_scratch.training.saved import FILES_WRITTEN, KeptModel
from llm_from_scratch.training.skipgram import SkipGram
from llm_from_scratch.training.vocabulary import Vocabulary

NEIGHBOUR_COUNT: Final = 4
"""Vector neighbours per report word."""

REPORT_WORDS: Final = ("father", "three", "night", "king")
"""The words whose neighbours the report lists (those in the vocabulary)."""
REPORT_WORDS_RU: Final = ("отец", "три", "ночь", "король")
"""The Russian counterparts of :data:`REPORT_WORDS`."""
_GROUP_WORDS: Final = (  # English and Russian, one group a line, in TRAIN_GROUP_NAMES' order
    ("father mother brother sister son daughter", "отец мать брат сестра сын дочь"),
    ("one two three four five six", "один два три четыре пять шесть"),
    ("king queen prince princess duke emperor", "король королева принц принцесса герцог император"),
    ("morning night evening noon midnight day", "утро ночь вечер полдень полночь день"),
    ("hand eye head heart arm face", "рука глаз голова сердце нога лицо"),
)
REPORT_GROUPS: Final[Groups] = tuple(
    (name, tuple(en.split())) for name, (en, _) in zip(TRAIN_GROUP_NAMES, _GROUP_WORDS, strict=True)
)
"""The word groups of the report, each word common in the Shakespeare corpus."""
REPORT_GROUPS_RU: Final[Groups] = tuple(
    (name, tuple(ru.split())) for name, (_, ru) in zip(TRAIN_GROUP_NAMES, _GROUP_WORDS, strict=True)
)
"""The Russian counterparts of :data:`REPORT_GROUPS`."""


@dataclass(frozen=True)
class TableView:
    """One table measured: the report words' neighbours, the groups' mean cosines and their
    projection (None without a group of two words in the vocabulary)."""

    neighbours: tuple[WordNeighbours, ...]
    groups: tuple[GroupCosines, ...]
    projection: Projection | None

    @property
    def within(self) -> float:
        """The groups' mean cosine inside a group (:func:`group_summary`)."""
        return group_summary(self.groups).within

    @property
    def between(self) -> float:
        """The groups' mean cosine to the other groups' words."""
        return group_summary(self.groups).between

    @property
    def separation(self) -> float:
        """:attr:`within` minus :attr:`between`."""
        return group_summary(self.groups).separation


@dataclass(frozen=True)
class TrainReport:
    """What a run did and what it learned."""

    options: TrainOptions
    corpus_files: int
    words_read: int
    words_kept: int
    vocabulary_size: int
    learning_rates: tuple[float, float]
    epochs: tuple[EpochSummary, ...]
    training_seconds: float
    peak_memory: int
    largest_row_norm: float
    before: TableView
    after: TableView
    table_path: Path
    tokenizer_path: Path
    resumed: bool = False
    """The run went on from a checkpoint."""
    interrupted: bool = False
    """A Ctrl-C came while the files were written, held back until both were in place."""
    origin: Origin = field(default_factory=Origin)
    """Where the tables started: a continued run's model, and the words outside its
    vocabulary."""

    @property
    def words_per_second(self) -> float:
        """Corpus words read per second of training, over all epochs (NaN without any)."""
        if not self.epochs or self.training_seconds <= 0:
            return math.nan
        return self.words_read * len(self.epochs) / self.training_seconds


@dataclass(frozen=True)
class VocabularyPieces:
    """A :class:`Vocabulary` seen as ``WordPieces``: the words of ``word`` (read as the corpus
    is: normalized, or the tokens of a pre-tokenized corpus) are its pieces, a word outside the
    vocabulary the unknown token ``[UNK]``."""

    vocabulary: Vocabulary

    @property
    def unknown_token(self) -> str | None:
        return self.vocabulary.unknown_token

    def pieces(self, word: str) -> tuple[tuple[str, int], ...]:
        known = self.vocabulary.word_ids
        unknown = self.vocabulary.unknown_id
        read = self.vocabulary.reading.words(word)
        found = ((piece, known.get(piece, unknown)) for piece in read)
        return tuple(
            (piece if token_id != unknown else self.vocabulary.unknown_token, token_id)
            for piece, token_id in found
        )

    def token(self, token_id: int) -> str | None:
        found = self.vocabulary.words
        return found[token_id] if 0 <= token_id < len(found) else None


def train(
    options: TrainOptions,
    thread_limit: int,
    progress: Progress | None = None,
    lang: str = "en",
    resume: bool = False,
    kept: KeptModel | None = None,
) -> TrainReport:
    """Train a table, write the two files (the library's :meth:`TrainResult.save`) and return
    the report; ``progress`` gets a ``ProgressState`` at most twice a second and after each
    epoch; with ``kept`` the run trains that model further (``--continue``).

    Raises:
        OptionError, CorpusError, MismatchError: as :meth:`~llm_from_scratch.training.Run.start`,
            before anything is written.
        FileAccessError, OSError: a file cannot be written; the folder is as it was.
        KeyboardInterrupt: Ctrl-C; the folder holds the files it held before (and the last
            checkpoint); a Ctrl-C while the files are written waits for them (``interrupted``).
    """
    run = Run.start(options, thread_limit, resume, continue_from=kept)
    for name in (TABLE_FILE, TOKENIZER_FILE, MODEL_FILE, CHECKPOINT_FILE):  # of a killed run
        remove_stale_temporaries(str(run.options.output / name))
    vocabulary = run.vocabulary
    pieces = VocabularyPieces(vocabulary)
    chosen = report_words(vocabulary, lang)
    before = table_view(run.initial_model(), pieces, *chosen)
    result = run.train(progress)
    after = table_view(result.model, pieces, *chosen) if result.epochs else before
    options = run.options
    interrupted = False
    try:
        result.save(options.output)
    except KeyboardInterrupt as error:
        if error.args != (FILES_WRITTEN,):
            raise
        interrupted = True
    return TrainReport(
        options,
        len(run.files),
        run.corpus_words,
        int(np.sum(vocabulary.counts)),
        vocabulary.vocabulary_size,
        options.rates,
        result.epochs,
        result.training_seconds,
        result.peak_memory,
        result.largest_row_norm,
        before,
        after,
        options.output / TABLE_FILE,
        options.output / TOKENIZER_FILE,
        resume,
        interrupted,
        run.origin,
    )


def report_words(vocabulary: Vocabulary, lang: str) -> tuple[tuple[str, ...], Groups]:
    """The report's words and groups: those of which the vocabulary holds more, the Russian or
    the English ones; on a tie (none of either, say), those of ``lang``."""
    known = vocabulary.word_ids

    def held(groups: Groups) -> int:
        return sum(word in known for _, members in groups for word in members)

    russian, english = held(REPORT_GROUPS_RU), held(REPORT_GROUPS)
    if russian > english or (russian == english and lang == "ru"):
        return REPORT_WORDS_RU, REPORT_GROUPS_RU
    return REPORT_WORDS, REPORT_GROUPS


def table_view(
    model: SkipGram,
    pieces: VocabularyPieces,
    words: Sequence[str] = REPORT_WORDS,
    groups: Groups = REPORT_GROUPS,
) -> TableView:
    """Measure the input table now: neighbours of the ``words`` in the vocabulary (the most
    frequent words when none is), and the ``groups`` with at least two words in it."""
    table = CosineTable.of(model.inputs)
    vocabulary = pieces.vocabulary
    known = [word for word in words if word in vocabulary.word_ids and word != "[UNK]"]
    if not known:
        known = list(vocabulary.words[: min(len(words), vocabulary.vocabulary_size - 1)])
    count = min(NEIGHBOUR_COUNT, vocabulary.vocabulary_size - 1)
    neighbours = (
        tuple(word_neighbours(table, pieces, word, count) for word in known) if count else ()
    )
    present = present_groups(pieces, groups)
    if len(present) < 2:
        return TableView(neighbours, (), None)
    return TableView(
        neighbours, group_cosines(table, pieces, present), project_groups(table, pieces, present)
    )
