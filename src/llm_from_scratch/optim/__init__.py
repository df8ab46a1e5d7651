"""Optimizers: plain SGD that updates only the rows a row-sparse gradient touched."""

from llm_from_scratch.optim.sgd import SGD, OptimizerError

__all__ = ["SGD", "OptimizerError"]
