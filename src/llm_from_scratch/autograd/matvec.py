"""``matvec``: the row-wise dot products of a stack of matrices with a stack of vectors.

For matrices ``A`` of shape ``[..., M, d]`` and vectors ``x`` of shape ``[..., d]`` (the same
leading axes), ``y[..., m] = A[..., m, :] . x[..., :]``, shape ``[..., M]`` (NumPy's
``np.matvec``). Skip-gram scores one centre word against its context word and its negatives
this way: ``A`` holds the ``M`` output rows of each pair, ``x`` the pair's input row.

VJP, for an upstream ``g`` of shape ``[..., M]``:

- ``dA[..., m, :] = g[..., m] * x[..., :]`` (one product per value);
- ``dx[..., :] = sum over m of g[..., m] * A[..., m, :]``, the rows added in order from
  ``+0.0``.

Each dot product adds its ``d`` products in a fixed order of eight interleaved lanes (see
:mod:`~llm_from_scratch.autograd.matvec_kernels`). Below the compiled-kernel threshold the sums
run on NumPy in that very order, from it on compiled kernels: both give the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.gradient import Gradient
from llm_from_scratch.autograd.matvec_kernels import lane_dot_numpy, matvec_into, matvec_vjp_into
from llm_from_scratch.autograd.tape import (
    Node,
    output_allocation_error,
    raise_if_non_finite,
    record,
)
from llm_from_scratch.errors import ShapeError
from llm_from_scratch.tensor.storage import FloatArray


@dataclass(frozen=True, slots=True)
class MatvecSaved:
    """The two operand values (read-only; a later in-place change of a parameter operand is
    caught by its revision)."""

    vjp_checks_finiteness: ClassVar[bool] = True
    """The VJP checks its gradients itself (the compiled one counts while it writes them), so
    the backward pass does not read them again."""

    matrices: FloatArray
    vectors: FloatArray


def matvec_forward(matrices: Node, vectors: Node) -> Node:
    """``y[..., m] = matrices[..., m, :] . vectors[..., :]``.

    Shape:
        ``matrices``: ``[..., M, d]``; ``vectors``: ``[..., d]``; output ``[..., M]``.

    Raises:
        ShapeError: ``operand.matvec-shape``, then ``operand.dtype``.
        TapeError, AllocationError: from the tape.
    """
    left, right = matrices.array, vectors.array
    if left.ndim < 2 or left.shape[:-2] + left.shape[-1:] != right.shape:
        raise ShapeError("operand.matvec-shape", left=left.shape, right=right.shape)
    if left.dtype != right.dtype:
        left_dtype, right_dtype = str(left.dtype), str(right.dtype)
        raise ShapeError("operand.dtype", operation="matvec", left=left_dtype, right=right_dtype)

    def compute() -> tuple[FloatArray, MatvecSaved]:
        try:
            value = _dot_products(left, right)
        except MemoryError as error:
            raise output_allocation_error("matvec", math.prod(left.shape[:-1])) from error
        return value, MatvecSaved(left, right)

    return record("matvec", (("matrices", matrices), ("vectors", vectors)), compute, matvec_vjp)


def matvec_vjp(saved: MatvecSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """``(upstream[..., m, None] * vectors[..., None, :], sum over m of upstream[..., m, None] *
    matrices[..., m, :])``."""
    left, right = saved.matrices, saved.vectors
    count, rows, width = _flat_shape(left)
    flat_left = left.reshape(count, rows, width)
    flat_right = right.reshape(count, width)
    flat_upstream = np.ascontiguousarray(upstream).reshape(count, rows)
    with np.errstate(over="ignore", invalid="ignore"):
        if runs_compiled(left.size):
            matrix_gradient = np.empty((count, rows, width), dtype=left.dtype)
            vector_gradient = np.empty((count, width), dtype=left.dtype)
            bad = matvec_vjp_into(
                matrix_gradient, vector_gradient, flat_upstream, flat_left, flat_right
            )
        else:
            matrix_gradient = flat_upstream[:, :, None] * flat_right[:, None, :]
            vector_gradient = np.zeros((count, width), dtype=left.dtype)
            for m in range(rows):
                vector_gradient += flat_upstream[:, m, None] * flat_left[:, m, :]
            bad = 1  # not counted: scan both below
    if bad:  # find the first value that is not finite, as the backward pass reports it
        raise_if_non_finite("matvec", matrix_gradient)
        raise_if_non_finite("matvec", vector_gradient)
    return matrix_gradient.reshape(left.shape), vector_gradient.reshape(right.shape)


def _dot_products(left: FloatArray, right: FloatArray) -> FloatArray:
    count, rows, width = _flat_shape(left)
    flat_left = left.reshape(count, rows, width)
    flat_right = right.reshape(count, width)
    with np.errstate(over="ignore", invalid="ignore"):
        if runs_compiled(left.size):
            out = np.empty((count, rows), dtype=left.dtype)
            matvec_into(out, np.ascontiguousarray(flat_left), np.ascontiguousarray(flat_right))
        else:
            out = lane_dot_numpy(flat_left * flat_right[:, None, :])
    return np.asarray(out, dtype=left.dtype).reshape(left.shape[:-1])


def _flat_shape(matrices: FloatArray) -> tuple[int, int, int]:
    """``(R, M, d)``: the leading axes flattened into ``R``."""
    rows, width = int(matrices.shape[-2]), int(matrices.shape[-1])
    return math.prod(matrices.shape[:-2]), rows, width
