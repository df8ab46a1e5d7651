"""Token IDs as the embedding layers read them: flat IDs with a token shape, or an integer array
or nested lists whose own shape is the token shape.

Both forms go through the row gather's checks (:mod:`~llm_from_scratch.autograd.gather`), in the
contract's order, each failure named by the embedding error family; the result is a row-gather
plan that owns the checked index buffer. ``Embedding``, ``EmbeddingBag`` and the functional forms
in :mod:`llm_from_scratch.nn.functional` all read their IDs here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Final

import numpy as np

from llm_from_scratch.autograd.gather import (
    IdErrors,
    RowGatherPlan,
    checked_output_layout,
    checked_row_gather_plan,
    checked_row_gather_plan_of_array,
)
from llm_from_scratch.nn.embedding_errors import (
    IndexAllocationError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdDtypeError,
    TokenIdNestingError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
)
from llm_from_scratch.tensor.storage import (
    MAX_AXES,
    Shape,
    TensorError,
    checked_row_major_layout,
    is_masked_array,
    plain_view,
)


def _output_shape_error(token_shape: object, output_shape: Shape, cause: TensorError) -> Exception:
    return TokenShapeError(token_shape, cause)  # the token shape does not fit this layer


TOKEN_ID_ERRORS: Final = IdErrors(
    shape=TokenShapeError,
    output_shape=_output_shape_error,
    container=TokenIdContainerError,
    count=TokenCountMismatchError,
    non_integer=TokenIdTypeError,
    non_integer_dtype=partial(TokenIdDtypeError, None, None),
    out_of_bounds=TokenIdOutOfBoundsError,
    allocation=IndexAllocationError,
)
"""How the embedding layers name each failure of the row gather's ID checks."""


def flat_token_id_plan(
    token_ids: object, token_shape: object, table_shape: tuple[int, int], itemsize: int
) -> RowGatherPlan:
    """The plan of ``Embedding.forward(token_ids, token_shape)``: flat IDs and their shape.

    Raises:
        TokenShapeError, TokenIdContainerError, TokenCountMismatchError, TokenIdDtypeError,
            IndexAllocationError, TokenIdTypeError, TokenIdOutOfBoundsError: in the contract's
            order (see ``Embedding.forward``).
    """
    return checked_row_gather_plan(token_ids, token_shape, table_shape, itemsize, TOKEN_ID_ERRORS)


def token_id_plan(ids: object, table_shape: tuple[int, int], itemsize: int) -> RowGatherPlan:
    """The plan of the layer call ``embedding(ids)``: an integer array (any subclass, read through
    its plain data; not a masked one) or nested lists and tuples, whose shape is the token shape.

    Raises:
        TokenIdContainerError: a masked array, or ragged nested lists.
        TokenIdNestingError: lists nested deeper than ``MAX_AXES`` levels.
        TokenShapeError, TokenIdDtypeError, IndexAllocationError, TokenIdTypeError,
            TokenIdOutOfBoundsError: as :func:`flat_token_id_plan`.
    """
    if isinstance(ids, np.ndarray) and (is_masked_array(ids) or plain_view(ids).dtype.kind != "O"):
        return checked_row_gather_plan_of_array(ids, table_shape, itemsize, TOKEN_ID_ERRORS)
    flat, shape = _flattened_nest(ids, table_shape, itemsize)
    return flat_token_id_plan(flat, shape, table_shape, itemsize)


def _flattened_nest(
    ids: object, table_shape: tuple[int, int], itemsize: int
) -> tuple[list[object], Shape]:
    """Flatten nested lists (or a single ID, or an object array) in row-major order.

    Order: the nesting depth; the shape the nest claims and the output shape; room for the
    flat IDs; then a walk that insists on a regular shape. No ID is read here.
    """
    if isinstance(ids, np.ndarray):  # an object array: its elements may be lists themselves
        plain = plain_view(ids)
        _reserved(int(plain.size))
        ids = plain.tolist()
    shape = _claimed_shape(ids)
    try:
        _, count = checked_row_major_layout(shape)
        checked_output_layout(shape, table_shape, itemsize)
    except TensorError as error:
        raise TokenShapeError(shape, error) from error
    flat = _reserved(count)
    _fill_flat(ids, shape, flat)
    return flat, shape


def _claimed_shape(ids: object) -> Shape:
    """Each level's length, following first items, at most ``MAX_AXES`` levels deep."""
    shape: list[int] = []
    probe = ids
    while isinstance(probe, list | tuple):
        if len(shape) == MAX_AXES:
            raise TokenIdNestingError(f"lists nested more than {MAX_AXES} deep", MAX_AXES)
        items = _items_of(probe)
        shape.append(len(items))
        if not items:
            break
        probe = items[0]
    return tuple(shape)


def _items_of(container: list[object] | tuple[object, ...]) -> Sequence[object]:
    """The items a list or tuple holds, read by the base class (a subclass's overrides of
    ``len``, indexing or iteration do not run)."""
    if type(container) in (list, tuple):
        return container
    if isinstance(container, list):
        return tuple(list.__iter__(container))
    return tuple(tuple.__iter__(container))


def _reserved(count: int) -> list[object]:
    try:
        return [None] * count
    except (MemoryError, OverflowError) as error:
        raise IndexAllocationError(count) from error


def _fill_flat(ids: object, shape: Shape, flat: list[object]) -> None:
    """Write the leaves of a regular nest into ``flat`` (as long as its element count)."""
    filled = 0
    stack: list[tuple[object, int, tuple[int, ...]]] = [(ids, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        if depth == len(shape):
            if isinstance(item, list | tuple):
                raise TokenIdContainerError(f"ragged nesting at index {list(path)}")
            flat[filled] = item
            filled += 1
            continue
        items = _items_of(item) if isinstance(item, list | tuple) else None
        if items is None or len(items) != shape[depth]:
            raise TokenIdContainerError(
                f"ragged nesting at index {list(path)}: expected {shape[depth]} items"
            )
        stack.extend((items[i], depth + 1, (*path, i)) for i in reversed(range(len(items))))
