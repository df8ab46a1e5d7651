"""``matmul`` and ``t``: the matrix product ``[n, k] @ [k, m]`` and the transpose of a matrix,
each forward beside its VJP, as HogBatch scores a window's input rows against the context rows
of its target and negatives (``inputs(window).matmul(contexts(targets).t())``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_from_scratch.autograd.gradient import Gradient
from llm_from_scratch.autograd.ops import check_same_dtype
from llm_from_scratch.autograd.tape import Node, output_allocation_error, record
from llm_from_scratch.errors import ShapeError
from llm_from_scratch.tensor.storage import FloatArray


@dataclass(frozen=True, slots=True)
class MatmulSaved:
    """The two operand values."""

    left: FloatArray
    right: FloatArray


def matmul_forward(left: Node, right: Node) -> Node:
    """``left @ right`` for matrices ``[n, k]`` and ``[k, m]``; ``operand.matmul-shape``, then
    ``operand.dtype``."""
    a, b = left.array, right.array
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ShapeError("operand.matmul-shape", left=a.shape, right=b.shape)
    check_same_dtype("matmul", a, b)

    def compute() -> tuple[FloatArray, MatmulSaved]:
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                value = np.matmul(a, b)
        except MemoryError as error:
            raise output_allocation_error("matmul", a.shape[0] * b.shape[1]) from error
        return value, MatmulSaved(a, b)

    return record("matmul", (("left", left), ("right", right)), compute, matmul_vjp)


def matmul_vjp(saved: MatmulSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """``(upstream @ right.T, left.T @ upstream)``."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.matmul(upstream, saved.right.T), np.matmul(saved.left.T, upstream)


def transpose_forward(source: Node) -> Node:
    """The transpose ``[m, n]`` of a matrix ``[n, m]`` (a new array); ``operand.transpose-shape``
    for any other rank."""
    if source.array.ndim != 2:
        raise ShapeError("operand.transpose-shape", shape=source.array.shape)

    def compute() -> tuple[FloatArray, None]:
        try:
            return np.ascontiguousarray(source.array.T), None
        except MemoryError as error:
            raise output_allocation_error("t", source.array.size) from error

    return record("t", (("input", source),), compute, transpose_vjp)


def transpose_vjp(saved: None, upstream: FloatArray) -> Sequence[Gradient]:
    """The upstream gradient transposed back."""
    return (np.ascontiguousarray(upstream.T),)
