"""What a finished run writes, and what ``--continue`` reads back: the pair (the input table and
its tokenizer) written as one, and with ``keep_model`` the context table beside it, whose
metadata records the options and the epochs trained (``docs/training.md``, "Keep training").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import LlmError, MismatchError
from llm_from_scratch.files import replace_files
from llm_from_scratch.nn import load_metadata, load_parameters, save_parameters
from llm_from_scratch.training.options import (
    MODEL_FILE,
    TABLE_FILE,
    TOKENIZER_FILE,
    TrainOptions,
)
from llm_from_scratch.training.skipgram import CONTEXT_TABLE, INPUT_TABLE, SkipGram
from llm_from_scratch.training.vocabulary import Vocabulary
from llm_from_scratch.training.words import TOKENS, WORDS
from llm_from_scratch.vectors.pair import load_word_pieces
from llm_from_scratch.vectors.table_pair import FINGERPRINT_KEY, tokenizer_metadata

FORMAT: Final = "llm-from-scratch kept model 1"
TRAINING: Final = (
    "dim", "window", "negatives", "min_count", "seed", "method", "sample", "alpha", "min_alpha",
    "ns_exponent", "max_vocab_size", "max_final_vocab", "tokenized",
)  # fmt: skip
"""The options a table file and a kept model record (``epochs`` is recorded as the epochs the
table has trained, over every continuation; ``method`` is the last run's, a continued run's
default, and may change)."""
FIXED: Final = ("dim", "tokenized")
"""The options a continued run must share with its model: the width of its rows and how a text
becomes its words."""
FILES_WRITTEN: Final = "the files were written; the Ctrl-C came while they were"
"""The message of the ``KeyboardInterrupt`` :func:`write_run` raises after a held Ctrl-C."""


def run_metadata(options: TrainOptions, vocabulary: Vocabulary, epochs: int) -> dict[str, str]:
    """What a table file (and a kept model) records of the run that trained it."""
    recorded = {name: getattr(options, name) for name in TRAINING}
    recorded["tokenized"] = vocabulary.reading.verbatim
    return {
        "model": "skip-gram with negative sampling",
        **{name: json.dumps(value) for name, value in recorded.items()},
        "epochs": str(epochs),
        "optimizer": "SGD",
        "vocabulary_size": str(vocabulary.vocabulary_size),
        **tokenizer_metadata(vocabulary.words),
    }


def write_run(
    folder: Path, model: SkipGram, vocabulary: Vocabulary, options: TrainOptions, epochs: int
) -> bool:
    """Write the pair into ``folder`` (made if missing) as one, and with ``options.keep_model``
    the model too (else an earlier model there is removed: it would not belong to the pair);
    True when a Ctrl-C came meanwhile (every new file is in place).

    Raises:
        FileAccessError, OSError: a file cannot be written; the targets are as they were.
    """
    folder.mkdir(parents=True, exist_ok=True)
    metadata = run_metadata(options, vocabulary, epochs)
    table, contexts = model.inputs.parameters(), model.contexts.parameters()
    writers = [
        (str(folder / TABLE_FILE), lambda path: save_parameters(path, table, metadata)),
        (str(folder / TOKENIZER_FILE), vocabulary.write_tokenizer),
    ]
    if options.keep_model:
        kept = {**metadata, "format": FORMAT}
        writers.append(
            (str(folder / MODEL_FILE), lambda path: save_parameters(path, contexts, kept))
        )
    interrupted = replace_files(writers)
    if not options.keep_model:
        (folder / MODEL_FILE).unlink(missing_ok=True)
    return interrupted


@dataclass(frozen=True, eq=False)
class KeptModel:
    """A finished run's tables, vocabulary and options, read back to train further."""

    folder: Path
    words: tuple[str, ...]
    tokenized: bool
    inputs: npt.NDArray[Any]
    contexts: npt.NDArray[Any]
    options: dict[str, Any]
    epochs: int
    """The epochs the tables have trained."""

    def vocabulary(self, counts: dict[str, int]) -> Vocabulary:
        """The fixed vocabulary, with each word's count in ``counts`` (0 if absent)."""
        found = np.array([counts.get(word, 0) for word in self.words[:-1]] + [0], np.int64)
        return Vocabulary(self.words, found, reading=TOKENS if self.tokenized else WORDS)

    def check(self, options: TrainOptions) -> None:
        """Refuse ``options`` that differ from the model's in :data:`FIXED` (``tokenized`` only
        for a corpus of files).

        Raises:
            MismatchError: ``continue.options``, every difference named.
        """
        names = FIXED if options.reads_files else ("dim",)
        kept = TrainOptions(**{name: self.options[name] for name in names})
        differences = kept.differences(options, names)
        if differences:
            detail = "; ".join(differences)
            raise MismatchError("continue.options", folder=str(self.folder), detail=detail)


def load_kept_model(folder: Path) -> KeptModel:
    """The model a run with ``keep_model`` left in ``folder``, with its pair.

    Raises:
        MismatchError: ``continue.missing`` (a file missing), ``continue.unreadable`` (a file
            that cannot be read, of another format, or three files that do not belong
            together).
    """
    for name in (TABLE_FILE, TOKENIZER_FILE, MODEL_FILE):
        if not (folder / name).is_file():
            raise MismatchError("continue.missing", folder=str(folder), detail=f"no {name}")
    try:
        metadata = load_metadata(folder / MODEL_FILE)
        if metadata.get("format") != FORMAT:
            raise ValueError(f"{MODEL_FILE} is of the format {metadata.get('format')!r}")
        options = {name: json.loads(metadata[name]) for name in TRAINING}
        epochs = int(metadata["epochs"])
        words = tuple(load_word_pieces(folder / TOKENIZER_FILE).tokens())
        inputs = _table(folder / TABLE_FILE, INPUT_TABLE, metadata[FINGERPRINT_KEY])
        contexts = _table(folder / MODEL_FILE, CONTEXT_TABLE, metadata[FINGERPRINT_KEY])
    except (LlmError, ValueError, KeyError, TypeError, OSError) as error:
        detail = str(error) if not isinstance(error, KeyError) else f"no entry {error}"
        raise MismatchError("continue.unreadable", folder=str(folder), detail=detail) from error
    if tokenizer_metadata(words)[FINGERPRINT_KEY] != metadata[FINGERPRINT_KEY]:
        detail = f"{TOKENIZER_FILE} is not the tokenizer of {MODEL_FILE}"
        raise MismatchError("continue.unreadable", folder=str(folder), detail=detail)
    shapes = {inputs.shape, contexts.shape, (len(words), options["dim"])}
    if len(shapes) != 1:
        detail = f"the tables' shapes {inputs.shape} and {contexts.shape} differ"
        raise MismatchError("continue.unreadable", folder=str(folder), detail=detail)
    return KeptModel(folder, words, bool(options["tokenized"]), inputs, contexts, options, epochs)


def _table(path: Path, name: str, fingerprint: str) -> npt.NDArray[Any]:
    if load_metadata(path).get(FINGERPRINT_KEY) != fingerprint:
        raise ValueError(f"{path.name} was not trained with the vocabulary of {MODEL_FILE}")
    (parameter,) = load_parameters(path, names=[name])
    return np.array(parameter.tensor.numpy(), copy=True)
