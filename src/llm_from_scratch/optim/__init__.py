"""Optimizers that update only the rows a row-sparse gradient touched: SGD, Adagrad, Adam(W)."""

from llm_from_scratch.optim.adagrad import Adagrad
from llm_from_scratch.optim.adam import Adam, AdamW
from llm_from_scratch.optim.errors import (
    DuplicateParameterError,
    HyperparameterTypeError,
    HyperparameterValueError,
    NonFiniteStepError,
    OptimizerError,
    OutputTypeError,
    ParameterEntryError,
    ParameterListError,
    StateArrayError,
    StateDtypeError,
    StateKeyError,
    StateMappingError,
    StateShapeError,
    StateValueError,
)
from llm_from_scratch.optim.optimizer import Optimizer
from llm_from_scratch.optim.sgd import SGD

__all__ = [
    "SGD",
    "Adagrad",
    "Adam",
    "AdamW",
    "DuplicateParameterError",
    "HyperparameterTypeError",
    "HyperparameterValueError",
    "NonFiniteStepError",
    "Optimizer",
    "OptimizerError",
    "OutputTypeError",
    "ParameterEntryError",
    "ParameterListError",
    "StateArrayError",
    "StateDtypeError",
    "StateKeyError",
    "StateMappingError",
    "StateShapeError",
    "StateValueError",
]
