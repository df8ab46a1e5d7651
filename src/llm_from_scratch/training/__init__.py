"""Training a token table on a corpus: skip-gram with negative sampling, streamed in blocks
(``docs/training.md``); each name below loads its module on first use.

    >>> from pathlib import Path
    >>> from llm_from_scratch.training import TrainOptions
    >>> options = TrainOptions(corpus=Path("corpus.txt"), output=Path("out"), epochs=1)
    >>> options.window, options.negatives, options.dim
    (5, 5, 100)
"""

import importlib
from typing import Any, Final

_HOMES: Final = {
    "corpus": "PIECE_BYTES CorpusFile Piece corpus_files count_words pieces sentences",
    "options": "CHECKPOINT_FILE GENSIM_NAMES MODEL_FILE RATES TABLE_FILE TOKENIZER_FILE "
    "OptionSpec TrainOptions option_fields processor_count",
    "run": "EpochCallback EpochSummary Progress ProgressState Run TrainResult continued_options "
    "peak_memory_bytes word_vectors",
    "saved": "KeptModel load_kept_model",
    "sources": "FileSource SentenceSource",
    "skipgram": "CONTEXT_TABLE INPUT_TABLE NoiseTable Pair PairBatch SkipGram block_pairs "
    "block_state keep_probabilities learning_rate reference_block",
    "vocabulary": "DEFAULT_MIN_COUNT UNKNOWN_TOKEN Vocabulary",
    "words": "TOKENS WORDS WORD_PATTERN Reading line_words normalized",
}
"""Each public name by the module that defines it. A name loads its module on first use, so
that the command line reads the options without importing NumPy."""
_MODULE_OF: Final = {name: module for module, names in _HOMES.items() for name in names.split()}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
