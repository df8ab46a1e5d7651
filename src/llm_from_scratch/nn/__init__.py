"""Neural-network building blocks: parameter initialization, the token embedding layer and
checkpoints.

The checkpoint names (``save_parameters``, ``load_parameters``, ``load_metadata``,
``CheckpointError``) load :mod:`llm_from_scratch.nn.checkpoint` on first use, so that programs
that never touch a file (the chapter demo) do not pay for importing it.
"""

from typing import TYPE_CHECKING, Any

from llm_from_scratch.nn.embedding import (
    Embedding,
    EmbeddingError,
    EmbeddingInitializationError,
    EmbeddingStateError,
    EmptyVocabularyError,
    IndexAllocationError,
    TableRankError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdDtypeError,
    TokenIdNestingError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
    ZeroEmbeddingWidthError,
)
from llm_from_scratch.nn.init import (
    InitializationError,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    XavierScale,
    xavier_scale,
)

if TYPE_CHECKING:
    from llm_from_scratch.nn.checkpoint import (
        CheckpointError,
        load_metadata,
        load_parameters,
        save_parameters,
    )

_CHECKPOINT_NAMES = frozenset(
    {"CheckpointError", "load_metadata", "load_parameters", "save_parameters"}
)

__all__ = [
    "CheckpointError",
    "Embedding",
    "EmbeddingError",
    "EmbeddingInitializationError",
    "EmbeddingStateError",
    "EmptyVocabularyError",
    "IndexAllocationError",
    "InitializationError",
    "NamedParameter",
    "NamedParameters",
    "SplitMix64",
    "TableRankError",
    "TokenCountMismatchError",
    "TokenIdContainerError",
    "TokenIdDtypeError",
    "TokenIdNestingError",
    "TokenIdOutOfBoundsError",
    "TokenIdTypeError",
    "TokenShapeError",
    "XavierScale",
    "ZeroEmbeddingWidthError",
    "load_metadata",
    "load_parameters",
    "save_parameters",
    "xavier_scale",
]


def __getattr__(name: str) -> Any:
    if name in _CHECKPOINT_NAMES:
        from llm_from_scratch.nn import checkpoint

        return getattr(checkpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
