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
    TokenIdDtypeError,
    TokenIdNestingError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
    ZeroEmbeddingWidthError,
)
from llm_from_scratch.nn.init import InitializationError, NamedParameter, SplitMix64

__all__ = [
    "Embedding",
    "EmbeddingError",
    "EmbeddingInitializationError",
    "EmptyVocabularyError",
    "IndexAllocationError",
    "InitializationError",
    "NamedParameter",
    "SplitMix64",
    "TableRankError",
    "TokenCountMismatchError",
    "TokenIdContainerError",
    "TokenIdDtypeError",
    "TokenIdNestingError",
    "TokenIdOutOfBoundsError",
    "TokenIdTypeError",
    "TokenShapeError",
    "ZeroEmbeddingWidthError",
]
