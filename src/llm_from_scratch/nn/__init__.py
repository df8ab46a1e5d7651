"""Neural-network building blocks: parameter initialization, the token embedding and
embedding-bag layers, their functional forms (:mod:`llm_from_scratch.nn.functional`) and
checkpoints.

The bag layer and the functional forms (``EmbeddingBag``, ``functional``) and the checkpoint
names (``save_parameters``, ``load_parameters``, ``load_metadata``, ``CheckpointError``) load
their modules on first use, so that programs that need neither (the chapter demo) do not pay for
importing them.
"""

import importlib
from typing import TYPE_CHECKING, Any

from llm_from_scratch.nn.embedding import Embedding
from llm_from_scratch.nn.embedding_errors import (
    BagLayoutError,
    BagModeError,
    DecreasingOffsetsError,
    EmbeddingBagStateError,
    EmbeddingError,
    EmbeddingInitializationError,
    EmbeddingStateError,
    EmptyOffsetsError,
    EmptyVocabularyError,
    FirstOffsetError,
    FlagTypeError,
    FrozenTableMaxNormError,
    LastOffsetError,
    MaxNormError,
    NormTypeError,
    OffsetOutOfRangeError,
    OffsetsContainerError,
    OffsetsError,
    OffsetTypeError,
    OptionTypeError,
    OptionValueError,
    PaddingIndexError,
    PerSampleWeightsError,
    PerSampleWeightsModeError,
    PerSampleWeightsShapeError,
    PerSampleWeightsTypeError,
    PretrainedTableTypeError,
    TableTypeError,
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
from llm_from_scratch.nn.options import BagOptions, LookupOptions
from llm_from_scratch.nn.tables import FrozenTable

if TYPE_CHECKING:
    from llm_from_scratch.nn import functional
    from llm_from_scratch.nn.checkpoint import (
        CheckpointError,
        load_metadata,
        load_parameters,
        save_parameters,
    )
    from llm_from_scratch.nn.embedding_bag import EmbeddingBag

_LAZY = {
    "CheckpointError": "llm_from_scratch.nn.checkpoint",
    "load_metadata": "llm_from_scratch.nn.checkpoint",
    "load_parameters": "llm_from_scratch.nn.checkpoint",
    "save_parameters": "llm_from_scratch.nn.checkpoint",
    "EmbeddingBag": "llm_from_scratch.nn.embedding_bag",
}

__all__ = [
    "BagLayoutError",
    "BagModeError",
    "BagOptions",
    "CheckpointError",
    "DecreasingOffsetsError",
    "Embedding",
    "EmbeddingBag",
    "EmbeddingBagStateError",
    "EmbeddingError",
    "EmbeddingInitializationError",
    "EmbeddingStateError",
    "EmptyOffsetsError",
    "EmptyVocabularyError",
    "FirstOffsetError",
    "FlagTypeError",
    "FrozenTable",
    "FrozenTableMaxNormError",
    "InitializationError",
    "LastOffsetError",
    "LookupOptions",
    "MaxNormError",
    "NamedParameter",
    "NamedParameters",
    "NormTypeError",
    "OffsetOutOfRangeError",
    "OffsetTypeError",
    "OffsetsContainerError",
    "OffsetsError",
    "OptionTypeError",
    "OptionValueError",
    "PaddingIndexError",
    "PerSampleWeightsError",
    "PerSampleWeightsModeError",
    "PerSampleWeightsShapeError",
    "PerSampleWeightsTypeError",
    "PretrainedTableTypeError",
    "SplitMix64",
    "TableTypeError",
    "XavierScale",
    "ZeroEmbeddingWidthError",
    "functional",
    "load_metadata",
    "load_parameters",
    "save_parameters",
    "xavier_scale",
]


def __getattr__(name: str) -> Any:
    if name == "functional":
        return importlib.import_module("llm_from_scratch.nn.functional")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
