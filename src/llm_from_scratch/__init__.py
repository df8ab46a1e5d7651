"""llm-from-scratch: the course's language model, built one chapter at a time.

Subpackages, one per concept:

- :mod:`llm_from_scratch.tensor`: float tensors with checked row-major layouts (chapter 8).
- :mod:`llm_from_scratch.autograd`: the tape, its operations and the row gather (chapters 15-16).
- :mod:`llm_from_scratch.nn`: parameter initialization (chapter 17) and the token
  :class:`~llm_from_scratch.nn.embedding.Embedding` layer (chapter 18).
- :mod:`llm_from_scratch.optim`: the optimizers and their state files.
- :mod:`llm_from_scratch.gradcheck`: the central-difference gradient probe.

Each is an attribute of the package, imported on first use, so that ``import llm_from_scratch``
stays as quick as it was (``llm_from_scratch.nn`` works as ``torch.nn`` does).
"""

TYPE_CHECKING = False  # not typing's: the package imports nothing until it is asked
if TYPE_CHECKING:
    from types import ModuleType

    from llm_from_scratch import autograd, gradcheck, nn, optim, tensor

__version__ = "0.1.0"

__all__ = ["autograd", "gradcheck", "nn", "optim", "tensor"]
"""The subpackages, attributes of the package imported when first read."""


def __getattr__(name: str) -> "ModuleType":
    if name in __all__:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
