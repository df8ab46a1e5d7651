"""Neural-network building blocks: parameter initialization, the token embedding layer and
checkpoints."""

from llm_from_scratch.nn.checkpoint import (
    CheckpointError,
    load_metadata,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.nn.embedding import (
    Embedding,
    EmbeddingError,
    EmbeddingInitializationError,
    EmptyVocabularyError,
    IndexAllocationError,
    TableRankError,
    TokenCountMismatchError,
    TokenIdContainerError,
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

__all__ = [
    "CheckpointError",
    "Embedding",
    "EmbeddingError",
    "EmbeddingInitializationError",
    "EmptyVocabularyError",
    "IndexAllocationError",
    "InitializationError",
    "NamedParameter",
    "NamedParameters",
    "SplitMix64",
    "TableRankError",
    "TokenCountMismatchError",
    "TokenIdContainerError",
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
