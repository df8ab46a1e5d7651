"""How the IDs of an embedding bag form bags: the rows of 2-D IDs, or 1-D IDs cut by offsets.

With 2-D IDs ``[B, L]`` (and no offsets) row ``b`` is bag ``b``. With 1-D IDs ``[N]`` and offsets
``[B]``, bag ``b`` holds positions ``offsets[b]`` up to the next offset (the last bag up to
``N``); with ``include_last_offset=True`` the offsets are ``B + 1`` boundaries and the last one
must be ``N`` (the CSR layout). Offsets are read like IDs (each once, into an owned buffer; an
ndarray subclass through its plain data, a masked array refused) and checked in this order: the
container; at least one offset; in flat order, the first that is not an integer or lies outside
``[0, N]``; the first offset is 0; in flat order, the first smaller than the one before it; with
``include_last_offset``, the last is ``N``.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from llm_from_scratch.autograd.gather import IdProblem, flat_source, read_ids
from llm_from_scratch.errors import AllocationError, IdError
from llm_from_scratch.nn.embedding_errors import BagLayoutError, OffsetsError
from llm_from_scratch.tensor.storage import IndexArray, Shape


def bag_starts(index_shape: Shape, offsets: object, include_last_offset: bool) -> IndexArray:
    """Where each bag starts, and, last, the number of IDs: ``[B + 1]`` positions.

    ``include_last_offset`` describes the offsets; 2-D IDs take none, so it does not apply to
    them.

    Raises:
        BagLayoutError: IDs that are not 2-D without offsets or 1-D with offsets.
        OffsetsError, IndexAllocationError: the offsets, in the order of the module docstring
            (``rule`` names the check).
    """
    given = offsets is not None
    if len(index_shape) == 2 and not given:
        bags, length = index_shape
        return np.arange(bags + 1, dtype=np.intp) * length
    if len(index_shape) == 1 and given:
        return checked_offsets(offsets, index_shape[0], include_last_offset)
    raise BagLayoutError(len(index_shape), given)


def checked_offsets(offsets: object, id_count: int, include_last_offset: bool) -> IndexArray:
    """The bag boundaries ``[B + 1]`` that offsets describe for ``id_count`` IDs.

    Raises:
        The offset errors of :func:`bag_starts`, in its order.
    """
    try:
        source, count = flat_source(offsets, "embedding")
    except IdError as container:
        raise OffsetsError("container", detail=str(container.fields["detail"])) from None
    if count == 0:
        raise OffsetsError("empty")
    try:
        read = read_ids(source, count, id_count + 1)
    except MemoryError as error:  # the offsets' own buffer
        raise AllocationError(
            "ids.allocation", elements=count, operation="offsets conversion"
        ) from error
    if isinstance(read, IdProblem):
        raise _offset_error(read, count, id_count)
    if int(read[0]) != 0:
        raise OffsetsError("first", offset=int(read[0]))
    decreasing = np.flatnonzero(read[1:] < read[:-1])
    if decreasing.size:
        at = int(decreasing[0]) + 1
        raise OffsetsError("increasing", at, int(read[at]), int(read[at - 1]))
    if not include_last_offset:
        return np.append(read, id_count).astype(np.intp, copy=False)
    if int(read[-1]) != id_count:
        raise OffsetsError("last", offset=int(read[-1]), bound=id_count)
    return read


def _offset_error(problem: IdProblem, count: int, id_count: int) -> OffsetsError:
    if problem.kind == "type":
        return OffsetsError("integer", problem.position, problem.value)
    if problem.kind == "bounds":
        return OffsetsError("range", problem.position, cast(int, problem.value), id_count)
    if problem.kind == "count":
        detail = f"the sequence's length is {count}, but it held {problem.value} items"
        return OffsetsError("container", detail=detail)
    return OffsetsError("container", detail=f"an empty array of dtype {problem.value}")
