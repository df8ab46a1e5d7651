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

import numpy as np

from llm_from_scratch.autograd.errors import TokenIdContainerError
from llm_from_scratch.autograd.gather import IdProblem, flat_source, read_ids
from llm_from_scratch.errors import AllocationError, IdError
from llm_from_scratch.tensor.storage import IndexArray, Shape


def bag_starts(index_shape: Shape, offsets: object, include_last_offset: bool) -> IndexArray:
    """Where each bag starts, and, last, the number of IDs: ``[B + 1]`` positions.

    ``include_last_offset`` describes the offsets; 2-D IDs take none, so it does not apply to
    them.

    Raises:
        IdError: ``bag.layout`` (IDs that are not 2-D without offsets or 1-D with offsets), then
            the offsets' rules in the order of the module docstring.
        AllocationError: ``ids.allocation`` (``operation`` ``offsets conversion``).
    """
    given = offsets is not None
    if len(index_shape) == 2 and not given:
        bags, length = index_shape
        return np.arange(bags + 1, dtype=np.intp) * length
    if len(index_shape) == 1 and given:
        return checked_offsets(offsets, index_shape[0], include_last_offset)
    raise IdError("bag.layout", rank=len(index_shape), offsets_given=given)


def checked_offsets(offsets: object, id_count: int, include_last_offset: bool) -> IndexArray:
    """The bag boundaries ``[B + 1]`` that offsets describe for ``id_count`` IDs (the errors of
    :func:`bag_starts`, in its order)."""
    try:
        source, count = flat_source(offsets, "embedding")
    except TokenIdContainerError as container:
        raise IdError("offsets.container", detail=container.detail) from None
    if count == 0:
        raise IdError("offsets.empty")
    try:
        read = read_ids(source, count, id_count + 1)
    except MemoryError as error:  # the offsets' own buffer
        operation = "offsets conversion"
        raise AllocationError("ids.allocation", elements=count, operation=operation) from error
    if isinstance(read, IdProblem):
        raise _offset_error(read, count, id_count)
    if int(read[0]) != 0:
        raise IdError("offsets.first", offset=int(read[0]))
    decreasing = np.flatnonzero(read[1:] < read[:-1])
    if decreasing.size:
        at = int(decreasing[0]) + 1
        before = int(read[at - 1])
        raise IdError("offsets.increasing", offset=int(read[at]), position=at, bound=before)
    if not include_last_offset:
        return np.append(read, id_count).astype(np.intp, copy=False)
    if int(read[-1]) != id_count:
        raise IdError("offsets.last", bound=id_count, offset=int(read[-1]))
    return read


def _offset_error(problem: IdProblem, count: int, id_count: int) -> IdError:
    at, value = problem.position, problem.value
    if problem.kind == "type":
        return IdError("offsets.type", position=at, offset=value)
    if problem.kind == "bounds":
        return IdError("offsets.range", offset=value, position=at, bound=id_count)
    if problem.kind == "count":
        detail = f"the sequence's length is {count}, but it held {value} items"
        return IdError("offsets.container", detail=detail)
    return IdError("offsets.container", detail=f"an empty array of dtype {value}")
