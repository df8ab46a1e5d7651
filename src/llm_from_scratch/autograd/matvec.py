"""``matvec``: ``y[..., m] = A[..., m, :] . x[..., :]`` for matrices ``A`` ``[..., M, d]`` and
vectors ``x`` ``[..., d]`` (NumPy's ``np.matvec``), as skip-gram scores a centre word against
its context word and negatives; the forward beside its VJP, then their compiled kernels.

A dot product sums its products in :data:`LANES` interleaved lanes (lane ``k`` adds features
``k``, ``k + 8``, ... from ``+0.0``), then the lanes pairwise:
``((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))``, on NumPy or compiled: the same bits.
Eight independent sums keep the adders busy, and the fixed order makes the bits independent of
the machine's vector width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, kernel_helper, prange, runs_compiled
from llm_from_scratch.autograd.gradient import Gradient
from llm_from_scratch.autograd.ops import check_same_dtype
from llm_from_scratch.autograd.tape import (
    Node,
    output_allocation_error,
    raise_if_non_finite,
    record,
)
from llm_from_scratch.errors import ShapeError
from llm_from_scratch.tensor.storage import FloatArray

LANES: Final = 8
BLOCKS: Final = 64  # at most this many blocks of rows (taken by threads) per VJP run


@dataclass(frozen=True, slots=True)
class MatvecSaved:
    """The two operand values; the VJP checks its gradients' finiteness itself."""

    vjp_checks_finiteness: ClassVar[bool] = True

    matrices: FloatArray
    vectors: FloatArray


def matvec_forward(matrices: Node, vectors: Node) -> Node:
    """``y[..., m] = matrices[..., m, :] . vectors[..., :]``; ``operand.matvec-shape``, then
    ``operand.dtype``."""
    left, right = matrices.array, vectors.array
    if left.ndim < 2 or left.shape[:-2] + left.shape[-1:] != right.shape:
        raise ShapeError("operand.matvec-shape", left=left.shape, right=right.shape)
    check_same_dtype("matvec", left, right)

    def compute() -> tuple[FloatArray, MatvecSaved]:
        try:
            value = _dot_products(left, right)
        except MemoryError as error:
            raise output_allocation_error("matvec", math.prod(left.shape[:-1])) from error
        return value, MatvecSaved(left, right)

    return record("matvec", (("matrices", matrices), ("vectors", vectors)), compute, matvec_vjp)


def matvec_vjp(saved: MatvecSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """``(upstream[..., m, None] * vectors[..., None, :], sum over m, in order from +0.0, of
    upstream[..., m, None] * matrices[..., m, :])``."""
    left, right = saved.matrices, saved.vectors
    flat_left, flat_right = _flattened(left, right)
    count, rows, width = flat_left.shape
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
    flat_left, flat_right = _flattened(left, right)
    with np.errstate(over="ignore", invalid="ignore"):
        if runs_compiled(left.size):
            out = np.empty(flat_left.shape[:2], dtype=left.dtype)
            matvec_into(out, np.ascontiguousarray(flat_left), np.ascontiguousarray(flat_right))
        else:
            out = lane_dot_numpy(flat_left * flat_right[:, None, :])
    return np.asarray(out, dtype=left.dtype).reshape(left.shape[:-1])


def _flattened(matrices: FloatArray, vectors: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``[R, M, d]`` and ``[R, d]``: the leading axes flattened into ``R``."""
    count, (rows, width) = math.prod(matrices.shape[:-2]), matrices.shape[-2:]
    return matrices.reshape(count, rows, width), vectors.reshape(count, width)


# The compiled kernels, adding in exactly the order of the NumPy path -------------------------


@kernel_helper
def lane_dot(row: Any, vector: Any) -> Any:  # pragma: no cover - JIT
    """``row . vector`` in :data:`LANES` lanes, as :func:`lane_dot_numpy` adds: feature ``f``
    into lane ``f % 8``, each lane from ``+0.0``, the lanes summed pairwise. A lane the last
    features do not reach gets ``+0.0`` (NumPy adds ``0 * 0``), which changes nothing: a lane
    starting at ``+0.0`` is never ``-0.0``."""
    width = vector.shape[0]
    full = width - width % 8
    zero = vector.dtype.type(0)
    l0 = l1 = l2 = l3 = l4 = l5 = l6 = l7 = zero
    for f in range(0, full, 8):
        l0 += row[f] * vector[f]
        l1 += row[f + 1] * vector[f + 1]
        l2 += row[f + 2] * vector[f + 2]
        l3 += row[f + 3] * vector[f + 3]
        l4 += row[f + 4] * vector[f + 4]
        l5 += row[f + 5] * vector[f + 5]
        l6 += row[f + 6] * vector[f + 6]
        l7 += row[f + 7] * vector[f + 7]
    if full < width:
        l0 += row[full] * vector[full]
        l1 += tail_product(row, vector, full + 1, zero)
        l2 += tail_product(row, vector, full + 2, zero)
        l3 += tail_product(row, vector, full + 3, zero)
        l4 += tail_product(row, vector, full + 4, zero)
        l5 += tail_product(row, vector, full + 5, zero)
        l6 += tail_product(row, vector, full + 6, zero)
    return ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))


@kernel_helper
def lane_dot_pair(row: Any, other: Any, vector: Any) -> Any:  # pragma: no cover - JIT
    """``(row . vector, other . vector)``, each the bits of :func:`lane_dot`: the two sums
    side by side share each load of ``vector`` and keep sixteen adders busy."""
    width = vector.shape[0]
    full = width - width % 8
    zero = vector.dtype.type(0)
    l0 = l1 = l2 = l3 = l4 = l5 = l6 = l7 = zero
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = zero
    for f in range(0, full, 8):
        l0 += row[f] * vector[f]
        l1 += row[f + 1] * vector[f + 1]
        l2 += row[f + 2] * vector[f + 2]
        l3 += row[f + 3] * vector[f + 3]
        l4 += row[f + 4] * vector[f + 4]
        l5 += row[f + 5] * vector[f + 5]
        l6 += row[f + 6] * vector[f + 6]
        l7 += row[f + 7] * vector[f + 7]
        m0 += other[f] * vector[f]
        m1 += other[f + 1] * vector[f + 1]
        m2 += other[f + 2] * vector[f + 2]
        m3 += other[f + 3] * vector[f + 3]
        m4 += other[f + 4] * vector[f + 4]
        m5 += other[f + 5] * vector[f + 5]
        m6 += other[f + 6] * vector[f + 6]
        m7 += other[f + 7] * vector[f + 7]
    if full < width:
        l0 += row[full] * vector[full]
        l1 += tail_product(row, vector, full + 1, zero)
        l2 += tail_product(row, vector, full + 2, zero)
        l3 += tail_product(row, vector, full + 3, zero)
        l4 += tail_product(row, vector, full + 4, zero)
        l5 += tail_product(row, vector, full + 5, zero)
        l6 += tail_product(row, vector, full + 6, zero)
        m0 += other[full] * vector[full]
        m1 += tail_product(other, vector, full + 1, zero)
        m2 += tail_product(other, vector, full + 2, zero)
        m3 += tail_product(other, vector, full + 3, zero)
        m4 += tail_product(other, vector, full + 4, zero)
        m5 += tail_product(other, vector, full + 5, zero)
        m6 += tail_product(other, vector, full + 6, zero)
    return ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), (
        ((m0 + m1) + (m2 + m3)) + ((m4 + m5) + (m6 + m7))
    )


@kernel_helper
def tail_product(row: Any, vector: Any, feature: int, zero: Any) -> Any:  # pragma: no cover
    """``row[feature] * vector[feature]``, or ``zero`` past the last feature."""
    return row[feature] * vector[feature] if feature < vector.shape[0] else zero


@compiled_kernel(parallel=False, pack_lanes=True)
def matvec_into(out: Any, matrices: Any, vectors: Any) -> None:  # pragma: no cover - JIT
    """``out[r, m] = matrices[r, m, :] . vectors[r, :]`` in the lane order (C-contiguous)."""
    count, rows, _ = matrices.shape
    for r in range(count):
        for m in range(rows):
            out[r, m] = lane_dot(matrices[r, m], vectors[r])


@compiled_kernel(parallel=True)
def matvec_vjp_into(
    matrix_gradient: Any, vector_gradient: Any, upstream: Any, matrices: Any, vectors: Any
) -> int:  # pragma: no cover - JIT
    """Both gradients of :func:`matvec_into` (``m`` in order); returns how many values written
    are NaN or infinite (``x - x`` is not exactly 0 for those)."""
    count, rows, width = matrices.shape
    blocks = min(count, BLOCKS)
    bad = 0
    for block in prange(blocks):
        block_bad = 0
        for r in range(block * count // blocks, (block + 1) * count // blocks):
            vector = vectors[r]
            total = vector_gradient[r]
            total[:] = 0.0
            for m in range(rows):
                scale = upstream[r, m]
                matrix_row = matrices[r, m]
                gradient_row = matrix_gradient[r, m]
                for f in range(width):
                    value = scale * vector[f]
                    gradient_row[f] = value
                    block_bad += (value - value) != 0
                for f in range(width):
                    total[f] += scale * matrix_row[f]
            for f in range(width):
                block_bad += (total[f] - total[f]) != 0
        bad += block_bad
    return bad


def lane_dot_numpy(products: FloatArray) -> FloatArray:
    """The lane-order sum over the last axis of ``products`` with NumPy (any leading shape).

    Example:
        >>> import numpy as np
        >>> float(lane_dot_numpy(np.arange(10.0)))
        45.0
    """
    width = products.shape[-1]
    padded_width = -(-width // LANES) * LANES
    padded = np.zeros((*products.shape[:-1], padded_width), dtype=products.dtype)
    padded[..., :width] = products
    chunks = padded.reshape(*products.shape[:-1], padded_width // LANES, LANES)
    lanes = np.zeros((*products.shape[:-1], LANES), dtype=products.dtype)
    for chunk in range(padded_width // LANES):
        lanes += chunks[..., chunk, :]
    l0, l1, l2, l3, l4, l5, l6, l7 = (lanes[..., k] for k in range(LANES))
    result: FloatArray = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
    return result
