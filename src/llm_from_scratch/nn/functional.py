"""The embedding lookups as functions of a rank-two ``TensorValue`` table, as in PyTorch's
``torch.nn.functional``: every argument checked once, then the layers' own lookup or bag. Unlike
PyTorch's, ``max_norm`` never writes a constant table and refuses an operation result
(:mod:`~llm_from_scratch.nn.renorm`), gradients are row-sparse and offsets are checked."""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.ids import plan_of_ids
from llm_from_scratch.errors import TableError
from llm_from_scratch.nn.embedding import PYTORCH_KEYWORDS, lookup
from llm_from_scratch.nn.embedding_bag import bag_of_ids
from llm_from_scratch.nn.options import BagOptions, LookupOptions
from llm_from_scratch.nn.renorm import check_renormalizable
from llm_from_scratch.nn.tables import qualified_type_name
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import Tensor

SPARSE: Final = PYTORCH_KEYWORDS["sparse"]


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
        padding_idx, max_norm, norm_type, scale_grad_by_freq: as :class:`LookupOptions` reads
            them (``max_norm`` scales a row by ``max_norm / (norm + 1e-7)``).

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
    check_renormalizable(table, options.max_norm)
    plan = plan_of_ids(token_ids, (rows, width), table.dtype.itemsize, options.gradient_rule)
    return lookup(table, plan, options)


@pytorch_keywords(input="token_ids", weight="table", sparse=SPARSE)
def embedding_bag(
    token_ids: object,
    table: TensorValue,
    offsets: object = None,
    *,
    mode: str = "mean",
    per_sample_weights: TensorValue | Tensor | np.ndarray[Any, Any] | None = None,
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
        padding_idx: a row whose entries are skipped (nothing added, counted or sent back).
        max_norm, norm_type: as in :func:`embedding` (every ID's row, padding included).

    Shape:
        output: ``[B, d]``; an empty bag gives a row of zeros.

    Raises:
        TableError: ``table.type``, ``table.rank`` (checked first).
        OptionError: the options, in the order of :class:`BagOptions`; then
            ``include_last_offset``. IdError: ``weights.mode``. OptionError: ``max_norm`` with
            an operation result.
        The ID errors of :func:`embedding`; then IdError: ``bag.layout``, the offsets' rules
            (``offsets.container``, ``.empty``, ``.type`` or ``.range`` at the first bad one,
            ``.first``, ``.increasing``, ``.last``), ``weights.type``, ``weights.shape``.

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


def _table_shape(table: object) -> tuple[int, int]:
    if not isinstance(table, TensorValue):
        raise TableError("table.type", table_type=qualified_type_name(table))
    shape = table.shape
    if len(shape) != 2:
        raise TableError("table.rank", rank=len(shape))
    return shape[0], shape[1]
