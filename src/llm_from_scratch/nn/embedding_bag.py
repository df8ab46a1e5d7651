"""The embedding-bag layer: one row per bag of token IDs, their sum, mean or max, computed by
:func:`bag_of_ids` for the layer and ``functional.embedding_bag`` alike (offsets read as IDs are).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.bag import BagMode, bag_plan_from_validated, embedding_bag_with_plan
from llm_from_scratch.autograd.ids import IdProblem, flat_source, plan_of_ids, read_ids
from llm_from_scratch.autograd.value import constant_from_owned_array
from llm_from_scratch.errors import AllocationError, IdError
from llm_from_scratch.nn.embedding import PYTORCH_KEYWORDS
from llm_from_scratch.nn.init import NamedParameter, Seed
from llm_from_scratch.nn.layer_state import TableLayer, drawn, hold_new, pretrained, wrapping
from llm_from_scratch.nn.options import BagOptions, checked_flag
from llm_from_scratch.nn.renorm import check_renormalizable, renormalized_rows, renormalized_then
from llm_from_scratch.nn.tables import (
    TABLE_NAME,
    Table,
)
from llm_from_scratch.pytorch_names import pytorch_keywords
from llm_from_scratch.tensor.storage import IndexArray, Shape, Tensor, is_masked_array, plain_view

BAG_PYTORCH_KEYWORDS: Final = {  # PyTorch's keywords the constructors refuse, pointing to ours
    **PYTORCH_KEYWORDS,
    "_weight": "EmbeddingBag.from_pretrained(table, freeze=False)",
    "include_last_offset": "an argument of each call: bags(ids, offsets, include_last_offset=True)",
}


@dataclass(frozen=True, eq=False, repr=False, init=False)
class EmbeddingBag(TableLayer):
    """A ``[V, d]`` token table that reduces each bag of IDs to one row.

    Built and held as an :class:`~llm_from_scratch.nn.Embedding` is (its ``options`` are
    :class:`BagOptions`, ``mode`` first); called with 2-D IDs ``[B, L]`` (each row a bag) or 1-D
    IDs and ``offsets``, reduced as :func:`~llm_from_scratch.nn.functional.embedding_bag` says.

    Shape:
        ``token_ids``: ``[B, L]``, or ``[N]`` with ``offsets`` ``[B]`` (``[B + 1]`` with
        ``include_last_offset``); output: ``[B, d]``.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = NamedParameter.from_tensor(
        ...     "token_embedding.weight", Tensor((4, 2), [10, 11, 20, 21, 30, 31, 40, 41]))
        >>> bag_layer = EmbeddingBag.from_parameter(table, mode="max")
        >>> out = bag_layer([[2, 1], [0, 3]])
        >>> out.numpy().tolist()
        [[30.0, 31.0], [40.0, 41.0]]
        >>> out.sum().backward()
        >>> table.tensor.sparse_gradient.rows.tolist()
        [2, 3]
    """

    table: Table
    options: BagOptions
    vocabulary_size: int = field(init=False)
    embedding_width: int = field(init=False)
    options_type: ClassVar[type[BagOptions]] = BagOptions

    @pytorch_keywords(**BAG_PYTORCH_KEYWORDS)
    def __init__(
        self,
        vocabulary_size: int,
        embedding_width: int,
        *,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        dtype: npt.DTypeLike = np.float32,
        rng: Seed = 0,
        name: str = TABLE_NAME,
    ) -> None:
        """A new bag layer, as ``nn.EmbeddingBag(V, d)`` and ``Embedding(V, d)``; PyTorch's
        ``include_last_offset`` is an argument of each call here.

        Example:
            >>> bags = EmbeddingBag(100, 8, mode="sum")
            >>> bags([[1, 2], [3, 3]]).shape, bags.table.tensor.dtype
            ((2, 8), dtype('float32'))
        """
        options = (mode, padding_idx, max_norm, norm_type)
        hold_new(self, (vocabulary_size, embedding_width), name, rng, dtype, options)

    @property
    def mode(self) -> BagMode:
        """``"sum"``, ``"mean"`` or ``"max"``."""
        return self.options.mode

    @classmethod
    def from_parameter(
        cls,
        table: NamedParameter,
        *,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
    ) -> EmbeddingBag:
        """Wrap an existing named parameter, as ``Embedding.from_parameter``."""
        return wrapping(cls, table, (mode, padding_idx, max_norm, norm_type))

    @classmethod
    @pytorch_keywords(**BAG_PYTORCH_KEYWORDS)
    def new(
        cls,
        name: str,
        vocabulary_size: int,
        embedding_width: int,
        rng: Seed,
        dtype: npt.DTypeLike = np.float64,
        *,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
    ) -> EmbeddingBag:
        """A Xavier-uniform table, as ``Embedding.new``."""
        options = (mode, padding_idx, max_norm, norm_type)
        return drawn(cls, name, (vocabulary_size, embedding_width), rng, dtype, options)

    @classmethod
    @pytorch_keywords(embeddings="table", sparse=PYTORCH_KEYWORDS["sparse"])
    def from_pretrained(
        cls,
        table: object,
        *,
        name: str = TABLE_NAME,
        freeze: bool = True,
        mode: str = "mean",
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
    ) -> EmbeddingBag:
        """A bag layer over a table you already have, as ``Embedding.from_pretrained``."""
        return pretrained(cls, table, name, freeze, (mode, padding_idx, max_norm, norm_type))

    def __call__(
        self,
        token_ids: object,
        offsets: object = None,
        per_sample_weights: TensorValue | Tensor | np.ndarray[Any, Any] | None = None,
        include_last_offset: bool = False,
    ) -> TensorValue:
        """Reduce each bag of ``token_ids`` to one row, checked as by
        ``functional.embedding_bag``."""
        call = (token_ids, offsets, per_sample_weights, include_last_offset)
        return bag_of_ids(self.table.tensor, self.options, *call)


def bag_of_ids(
    table: TensorValue,
    options: BagOptions,
    token_ids: object,
    offsets: object,
    weights: object,
    include_last_offset: object,
) -> TensorValue:
    """The bag of a call with checked options, its arguments checked in their order; with
    ``max_norm`` as :func:`~llm_from_scratch.nn.embedding.lookup`."""
    last_offset = checked_flag("include_last_offset", include_last_offset)
    if weights is not None and options.mode != "sum":
        raise IdError("weights.mode", value=options.mode)
    check_renormalizable(table, options.max_norm)
    ids = plan_of_ids(token_ids, (table.shape[0], table.shape[1]), table.dtype.itemsize)
    starts = bag_starts(ids.index_shape, offsets, last_offset)
    checked = _checked_weights(weights, ids.index_shape, table.dtype)
    indices, padding_idx = ids.indices, options.padding_idx
    if options.max_norm is not None and table.kind == "constant":  # reads renormalized rows
        max_norm, norm_type = options.max_norm, options.norm_type
        rows, renormalized, indices = renormalized_rows(table.numpy(), indices, max_norm, norm_type)
        found = np.flatnonzero(rows == (-1 if padding_idx is None else padding_idx))  # no row -1
        padding_idx = int(found[0]) if found.size else None  # its place among the rows
        table = constant_from_owned_array(renormalized)
    shape = (table.shape[0], table.shape[1])
    plan = bag_plan_from_validated(indices, starts, shape, options.mode, padding_idx)
    bag = partial(embedding_bag_with_plan, table, plan, checked)
    if options.max_norm is None or table.kind == "constant":
        return bag()
    return renormalized_then(table, plan.indices, options.max_norm, options.norm_type, bag)


def _checked_weights(given: object, index_shape: Shape, dtype: np.dtype[Any]) -> TensorValue | None:
    """Per-sample weights checked (``weights.type``, ``.shape``) as a ``TensorValue``."""
    weights: Any = given
    if isinstance(weights, TensorValue | Tensor):
        fits = weights.dtype == dtype
        described = f"{type(weights).__name__} of dtype {weights.dtype}"
    elif isinstance(weights, np.ndarray) and not is_masked_array(weights):
        weights = plain_view(weights)
        fits, described = weights.dtype.kind in "biuf", f"ndarray of dtype {weights.dtype}"
    elif weights is None:
        return None
    else:
        fits, described = False, type(weights).__name__
    if not fits:
        raise IdError("weights.type", expected=str(dtype), value=described)
    shape = tuple(int(extent) for extent in weights.shape)
    if shape != index_shape:
        raise IdError("weights.shape", expected=index_shape, value=shape)
    if isinstance(weights, TensorValue):
        return weights
    return TensorValue.constant(
        weights if isinstance(weights, Tensor) else Tensor(shape, weights, dtype=dtype)
    )


def bag_starts(index_shape: Shape, offsets: object, include_last_offset: bool) -> IndexArray:
    """Where each bag starts, and, last, the number of IDs: ``[B + 1]`` positions (``bag.layout``,
    then the offsets' rules)."""
    given = offsets is not None
    if len(index_shape) == 2 and not given:
        bags, length = index_shape
        return np.arange(bags + 1, dtype=np.intp) * length
    if len(index_shape) == 1 and given:
        return checked_offsets(offsets, index_shape[0], include_last_offset)
    raise IdError("bag.layout", rank=len(index_shape), offsets_given=given)


def checked_offsets(offsets: object, id_count: int, include_last_offset: bool) -> IndexArray:
    """The bag boundaries ``[B + 1]`` that offsets describe for ``id_count`` IDs."""
    try:
        source, count = flat_source(offsets, "embedding")
    except IdError as container:
        raise IdError("offsets.container", detail=container.fields["detail"]) from None
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
