"""The compiled kernels of ``matvec``: the row-wise dot products and their two VJPs.

Each loop is compiled by Numba on its first call (:mod:`~llm_from_scratch.autograd.dispatch`),
without fast-math, and adds in exactly the order the NumPy path of
:mod:`~llm_from_scratch.autograd.matvec` adds in, so both give the same bits:

- a dot product of two ``d``-vectors sums the products in :data:`LANES` interleaved lanes (lane
  ``k`` adds features ``k``, ``k + 8``, ``k + 16``, ... left to right, from ``+0.0``), then
  adds the lanes pairwise: ``((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))``. Eight
  independent sums keep the processor's adders busy where one left-to-right sum would wait on
  each addition; the order is fixed, so the bits do not depend on the machine's vector width;
- the VJP of the vectors sums ``upstream[m] * matrix[m, :]`` over the rows ``m`` in order, from
  ``+0.0``; the VJP of the matrices is one product per value.

The dot products run on one thread, their eight lanes packed into vector instructions
(``pack_lanes``: the order of every addition is the one written); the VJP's rows ``r`` of the
flattened leading axes are split into blocks that threads take in turn, and a row's result does
not depend on the split.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.dispatch import compiled_kernel, prange
from llm_from_scratch.tensor.storage import FloatArray

LANES: Final = 8
"""Interleaved partial sums of a dot product (see the module docstring)."""
BLOCKS: Final = 64
"""At most this many blocks of rows per kernel run."""


@compiled_kernel(parallel=False, pack_lanes=True)
def _matvec_into(out: Any, matrices: Any, vectors: Any, zero: Any) -> None:  # pragma: no cover
    count, rows, width = matrices.shape
    full = width - width % 8
    padded_row = np.zeros(8, matrices.dtype)  # the last features, zeros after them
    padded_vector = np.zeros(8, matrices.dtype)
    for r in range(count):
        vector = vectors[r]
        for k in range(width - full):
            padded_vector[k] = vector[full + k]
        for m in range(rows):
            row = matrices[r, m]
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
            for k in range(width - full):
                padded_row[k] = row[full + k]
            # Adding 0 * 0 = +0.0 to a lane leaves it exactly as it is (a lane starts at +0.0,
            # so it is never -0.0).
            l0 += padded_row[0] * padded_vector[0]
            l1 += padded_row[1] * padded_vector[1]
            l2 += padded_row[2] * padded_vector[2]
            l3 += padded_row[3] * padded_vector[3]
            l4 += padded_row[4] * padded_vector[4]
            l5 += padded_row[5] * padded_vector[5]
            l6 += padded_row[6] * padded_vector[6]
            l7 += padded_row[7] * padded_vector[7]
            out[r, m] = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))


@compiled_kernel(parallel=True)
def _matvec_vjp_into(
    matrix_gradient: Any,
    vector_gradient: Any,
    upstream: Any,
    matrices: Any,
    vectors: Any,
) -> int:  # pragma: no cover - JIT
    count, rows, width = matrices.shape
    blocks = min(count, BLOCKS)
    bad = 0
    for block in prange(blocks):
        block_bad = 0
        for r in range(block * count // blocks, (block + 1) * count // blocks):
            vector = vectors[r]
            total = vector_gradient[r]
            for f in range(width):
                total[f] = 0.0
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


def matvec_into(out: FloatArray, matrices: FloatArray, vectors: FloatArray) -> None:
    """``out[r, m] = matrices[r, m, :] . vectors[r, :]`` in the lane order.

    Shape:
        ``out``: ``[R, M]``; ``matrices``: ``[R, M, d]``; ``vectors``: ``[R, d]`` (all
        C-contiguous, one dtype).
    """
    _matvec_into(out, matrices, vectors, matrices.dtype.type(0))


def matvec_vjp_into(
    matrix_gradient: FloatArray,
    vector_gradient: FloatArray,
    upstream: FloatArray,
    matrices: FloatArray,
    vectors: FloatArray,
) -> int:
    """``matrix_gradient[r, m, :] = upstream[r, m] * vectors[r, :]`` and
    ``vector_gradient[r, :] = sum over m of upstream[r, m] * matrices[r, m, :]``, m in order;
    returns how many of the values written are NaN or infinite (``x - x`` is not 0 exactly
    for those).

    Shape:
        as :func:`matvec_into`; ``upstream``: ``[R, M]``; the gradients: as their operands.
    """
    return int(_matvec_vjp_into(matrix_gradient, vector_gradient, upstream, matrices, vectors))


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
