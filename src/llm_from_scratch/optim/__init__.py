"""Optimizers that update only the rows a row-sparse gradient touched: SGD, Adagrad, Adam(W)
(``SparseAdam`` is Adam), and their state in safetensors files (``save_state``, ``load_state``)."""

from llm_from_scratch.optim.adagrad import Adagrad
from llm_from_scratch.optim.adam import Adam, AdamW, SparseAdam
from llm_from_scratch.optim.optimizer import Optimizer
from llm_from_scratch.optim.sgd import SGD
from llm_from_scratch.optim.state_files import load_state, save_state

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "SparseAdam", "load_state", "save_state"]
