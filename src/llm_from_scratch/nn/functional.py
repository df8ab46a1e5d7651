"""The embedding lookups as functions of a table, as PyTorch's ``torch.nn.functional`` has them.

:func:`embedding` and :func:`embedding_bag` take the IDs, a table (any rank-two ``TensorValue``:
a parameter, a constant or an operation result) and PyTorch's keyword arguments, check every
argument once, in the order their docstrings list, and run the one row gather (or bag
operation) of :mod:`llm_from_scratch.autograd`, as the layers do with their checked options.

Differences from PyTorch: ``max_norm`` writes a parameter table through the package's in-place
update, so a graph recorded before a forward that changed a row refuses to run backward
(``tape.stale-value``) instead of silently using the changed values; a constant table (a frozen
table) is never written: its looked-up rows are renormalized into a new array that the lookup
reads; an operation result refuses ``max_norm``; gradients are row-sparse always; offsets are
checked (PyTorch leaves several bad offsets unchecked).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.bag import bag_plan_from_validated, embedding_bag_with_plan
from llm_from_scratch.autograd.gather import plan_of_ids
from llm_from_scratch.autograd.value import constant_from_owned_array
from llm_from_scratch.errors import IdError, OptionError, TableError
from llm_from_scratch.nn.bag_offsets import bag_starts
from llm_from_scratch.nn.embedding import PYTORCH_KEYWORDS, lookup
from llm_from_scratch.nn.options import BagOptions, LookupOptions, checked_flag
from llm_from_scratch.nn.renorm import renormalized_rows, renormalized_then
from llm_from_scratch.nn.tables import qualified_type_name
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import IndexArray, Shape, Tensor, is_masked_array, plain_view

SPARSE: Final = PYTORCH_KEYWORDS["sparse"]

Weights = TensorValue | Tensor | np.ndarray[Any, Any] | None


@pytorch_keywords(input="token_ids", weight="table", sparse=SPARSE)
def embedding(
    token_ids: object,
    table: TensorValue,
    *,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
) -> TensorValue:
    """Look up one row of ``table`` per ID: ``out[..., :] = table[token_ids[...], :]``.

    Args:
        token_ids: an integer array or nested lists; its shape is the token shape.
        table: a rank-two ``TensorValue`` ``[V, d]``.
        padding_idx: a row in ``[-V, V)`` that receives no gradient (negative counts from the
            end); its lookups still return its values.
        max_norm: before the lookup, each distinct row the IDs name whose ``norm_type``-norm
            exceeds ``max_norm`` is scaled by ``max_norm / (norm + 1e-7)``: in place for a
            parameter table (bumping its value revision); a constant table stays as it is and
            the lookup returns the scaled rows. An operation result takes no ``max_norm``.
        norm_type: the ``p`` of that norm.
        scale_grad_by_freq: divide each row's gradient by the number of times its ID occurs
            in ``token_ids``.

    Shape:
        ``token_ids``: ``[*]``; ``table``: ``[V, d]``; output: ``[*, d]``.

    Raises:
        TableError: ``table.type``, ``table.rank`` (checked first).
        OptionError: the options, in the order of :class:`LookupOptions`; then ``max_norm``
            with a table that is an operation result.
        The ID errors of the layer call, then the tape's.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = TensorValue.parameter(Tensor((4, 2), [10, 11, 20, 21, 30, 31, 40, 41]))
        >>> x = embedding([[2, 0, 2]], table, padding_idx=0, scale_grad_by_freq=True)
        >>> x.numpy().tolist()
        [[[30.0, 31.0], [10.0, 11.0], [30.0, 31.0]]]
        >>> x.sum().backward()
        >>> table.sparse_gradient.rows.tolist(), table.sparse_gradient.values.tolist()
        ([2], [[1.0, 1.0]])
    """
    rows, width = _table_shape(table)
    options = LookupOptions(rows, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    _check_renormalizable(table, options.max_norm)
    plan = plan_of_ids(token_ids, (rows, width), table.dtype.itemsize, options.gradient_rule)
    return lookup(table, plan, options)


@pytorch_keywords(input="token_ids", weight="table", sparse=SPARSE)
def embedding_bag(
    token_ids: object,
    table: TensorValue,
    offsets: object = None,
    *,
    mode: str = "mean",
    per_sample_weights: Weights = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
) -> TensorValue:
    """Reduce the rows of each bag of IDs to one row: their ``sum``, ``mean`` or ``max``.

    Args:
        token_ids: 2-D IDs ``[B, L]`` (each row a bag; no offsets), or 1-D IDs ``[N]`` with
            ``offsets``; an integer array or nested lists.
        table: a rank-two ``TensorValue`` ``[V, d]``.
        offsets: with 1-D IDs, where each bag starts: a 1-D integer array or sequence, first
            ``0``, never decreasing, at most ``N``.
        mode: ``"sum"``, ``"mean"`` (PyTorch's default) or ``"max"``. ``max`` is taken per
            coordinate; on a tie the first entry in flat order wins and its row receives the
            gradient.
        per_sample_weights: only with ``"sum"``: a weight per ID (the IDs' shape) that
            multiplies its row; a ``TensorValue`` receives a gradient, a ``Tensor`` or a real
            NumPy array is a constant.
        include_last_offset: ``offsets`` holds ``B + 1`` boundaries, the last one ``N``.
        padding_idx: a row whose entries are skipped: they add nothing, count for nothing in a
            mean and receive no gradient (negative counts from the end).
        max_norm, norm_type: as in :func:`embedding` (every ID's row, padding included).

    Shape:
        output: ``[B, d]``; an empty bag gives a row of zeros.

    Raises:
        TableError: ``table.type``, ``table.rank`` (checked first).
        OptionError: the options, in the order of :class:`BagOptions`; then
            ``include_last_offset``. IdError: ``weights.mode``. OptionError: ``max_norm`` with
            an operation result.
        The ID errors of :func:`embedding`; then IdError: ``bag.layout``, the offsets' rules
            (``offsets.container``, ``offsets.empty``, ``offsets.type`` or ``offsets.range``
            at the first bad offset, ``offsets.first``, ``offsets.increasing``,
            ``offsets.last``), ``weights.type``, ``weights.shape``.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = TensorValue.parameter(Tensor((4, 2), [10, 11, 20, 21, 30, 31, 40, 41]))
        >>> bags = embedding_bag([2, 1, 2, 3], table, [0, 3, 3], mode="sum")
        >>> bags.numpy().tolist()
        [[80.0, 83.0], [0.0, 0.0], [40.0, 41.0]]
    """
    rows, _ = _table_shape(table)
    options = BagOptions(rows, mode, padding_idx, max_norm, norm_type)  # type: ignore[arg-type]
    return bag_of_ids(table, options, token_ids, offsets, per_sample_weights, include_last_offset)


def bag_of_ids(
    table: TensorValue,
    options: BagOptions,
    token_ids: object,
    offsets: object,
    weights: object,
    include_last_offset: object,
) -> TensorValue:
    """The embedding bag with checked options (package-internal: ``EmbeddingBag`` and
    :func:`embedding_bag` call it): the arguments of a call checked in their order, then the
    bag; with ``max_norm`` a parameter's rows are renormalized in place, a constant's rows
    are renormalized into a new array that the bag reads."""
    last_offset = checked_flag("include_last_offset", include_last_offset)
    if weights is not None and options.mode != "sum":
        raise IdError("weights.mode", value=options.mode)
    _check_renormalizable(table, options.max_norm)
    ids = plan_of_ids(token_ids, (table.shape[0], table.shape[1]), table.dtype.itemsize)
    starts = bag_starts(ids.index_shape, offsets, last_offset)
    checked = _checked_weights(weights, ids.index_shape, table.dtype)
    if options.max_norm is not None and table.kind == "constant":
        return _frozen_bag(table, ids.indices, starts, checked, options)
    shape = (table.shape[0], table.shape[1])
    plan = bag_plan_from_validated(ids.indices, starts, shape, options.mode, options.padding_idx)
    if options.max_norm is None:
        return embedding_bag_with_plan(table, plan, checked)
    return renormalized_then(
        table,
        plan.indices,
        options.max_norm,
        options.norm_type,
        lambda: embedding_bag_with_plan(table, plan, checked),
    )


def _frozen_bag(
    table: TensorValue,
    indices: IndexArray,
    starts: IndexArray,
    weights: TensorValue | None,
    options: BagOptions,
) -> TensorValue:
    """The bag of a constant table with ``max_norm``: the distinct rows it names, renormalized
    into a new array, are what the bag reads (the padding row found among them)."""
    assert options.max_norm is not None  # the caller's branch
    rows, renormalized, positions = renormalized_rows(
        table.numpy(), indices, options.max_norm, options.norm_type
    )
    padding_row = None
    if options.padding_idx is not None:
        found = int(np.searchsorted(rows, options.padding_idx))
        if found < rows.size and int(rows[found]) == options.padding_idx:
            padding_row = found
    shape = (int(rows.size), table.shape[1])
    plan = bag_plan_from_validated(positions, starts, shape, options.mode, padding_row)
    return embedding_bag_with_plan(constant_from_owned_array(renormalized), plan, weights)


OPERATION_TABLE_MAX_NORM: Final = (
    "None when the table is an operation result (renormalize a parameter or a constant table)"
)
"""The requirement of ``max_norm`` with an operation-result table."""


def _check_renormalizable(table: TensorValue, max_norm: float | None) -> None:
    """Refuse ``max_norm`` on an operation result, whose rows can be neither written nor
    replaced outside the tape (``option.value``)."""
    if max_norm is not None and table.kind == "operation":
        raise OptionError(
            "option.value", name="max_norm", requirement=OPERATION_TABLE_MAX_NORM, value=max_norm
        )


def _checked_weights(
    weights: object, index_shape: Shape, dtype: np.dtype[Any]
) -> TensorValue | None:
    """Per-sample weights as a ``TensorValue`` of the table's dtype and the IDs' shape: their
    type, then their shape checked (``weights.type``, ``weights.shape``) before a ``Tensor`` or
    an array becomes a constant copy."""
    if weights is None:
        return None
    value = _weights_source(weights, dtype)
    shape = tuple(int(extent) for extent in value.shape)
    if shape != index_shape:
        raise IdError("weights.shape", expected=index_shape, value=shape)
    if isinstance(value, TensorValue):
        return value
    if isinstance(value, Tensor):
        return TensorValue.constant(value)
    return TensorValue.constant(Tensor(shape, value, dtype=dtype))


def _weights_source(
    weights: object, dtype: np.dtype[Any]
) -> TensorValue | Tensor | np.ndarray[Any, Any]:
    """The weights once their type is checked: a value or tensor of ``dtype``, or the plain
    data of a real NumPy array (not yet copied)."""
    if isinstance(weights, TensorValue | Tensor):
        if weights.dtype == dtype:
            return weights
        described = f"{type(weights).__name__} of dtype {weights.dtype}"
    elif isinstance(weights, np.ndarray) and not is_masked_array(weights):
        plain = plain_view(weights)
        if plain.dtype.kind in "biuf":
            return plain
        described = f"ndarray of dtype {plain.dtype}"
    else:
        described = type(weights).__name__
    raise IdError("weights.type", expected=str(dtype), value=described)


def _table_shape(table: object) -> tuple[int, int]:
    if not isinstance(table, TensorValue):
        raise TableError("table.type", table_type=qualified_type_name(table))
    shape = table.shape
    if len(shape) != 2:
        raise TableError("table.rank", rank=len(shape))
    return shape[0], shape[1]
