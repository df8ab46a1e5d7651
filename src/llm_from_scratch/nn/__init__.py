"""Neural-network building blocks: parameter initialization and the token embedding layer."""

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
    "xavier_scale",
]
