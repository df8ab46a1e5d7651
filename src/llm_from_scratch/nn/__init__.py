"""Neural-network building blocks: parameter initialization, the token embedding and
embedding-bag layers, their functional forms and checkpoints. The bag layer, the functional
forms and the checkpoint functions load on first use (the chapter demo needs none of them).
"""

import importlib
from typing import TYPE_CHECKING, Any

from llm_from_scratch.nn.embedding import Embedding
from llm_from_scratch.nn.init import (
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
    from llm_from_scratch.nn.checkpoint import load_metadata, load_parameters, save_parameters
    from llm_from_scratch.nn.embedding_bag import EmbeddingBag

_LAZY = {
    "load_metadata": "llm_from_scratch.nn.checkpoint",
    "load_parameters": "llm_from_scratch.nn.checkpoint",
    "save_parameters": "llm_from_scratch.nn.checkpoint",
    "EmbeddingBag": "llm_from_scratch.nn.embedding_bag",
    "functional": "llm_from_scratch.nn.functional",
}

__all__ = [
    "BagOptions",
    "Embedding",
    "EmbeddingBag",
    "FrozenTable",
    "LookupOptions",
    "NamedParameter",
    "NamedParameters",
    "SplitMix64",
    "XavierScale",
    "functional",
    "load_metadata",
    "load_parameters",
    "save_parameters",
    "xavier_scale",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    return module if name == "functional" else getattr(module, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
