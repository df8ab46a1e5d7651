"""The tape autodiff core (course chapters 15-16) and the row gather."""

from llm_from_scratch.autograd.gradient import RowSparseGradient
from llm_from_scratch.autograd.tape import GraphRetention, no_grad
from llm_from_scratch.autograd.value import TensorValue

__all__ = ["GraphRetention", "RowSparseGradient", "TensorValue", "no_grad"]
