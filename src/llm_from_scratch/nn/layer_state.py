"""What the embedding layers share: their constructors, self-check, parameters, state dicts,
copies and pickles, all built through :func:`layer_of` (a crafted pickle meets a new layer's
checks)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd.value import copied_values, update_leaves_in_place
from llm_from_scratch.errors import TableError
from llm_from_scratch.nn.init import FROZEN_DETAIL, NamedParameter, NamedParameters, Seed
from llm_from_scratch.nn.options import BagOptions, LookupOptions
from llm_from_scratch.nn.tables import (
    FrozenTable,
    Options,
    Table,
    check_finite,
    checked_parameter_size,
    checked_sizes,
    new_table,
    pretrained_table,
)
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import FloatArray, is_masked_array, plain_view

_L = TypeVar("_L", bound="TableLayer")


def _pickle_error(layer: str, field: str, detail: str) -> TableError:
    return TableError("layer.pickle-state", layer=layer, field=field, detail=detail)


def hold_fields(layer: TableLayer, table: object, options: object) -> None:
    """Set ``table``, ``options``, ``vocabulary_size`` and ``embedding_width`` on ``layer`` once
    they make one of its class (else ``layer.pickle-state``)."""
    kind = type(layer)
    if not is_table(table):
        detail = f"must be a NamedParameter or a FrozenTable, got {type(table).__name__}"
        raise _pickle_error(kind.__name__, "table", detail)
    rows, width = checked_sizes(table.tensor.shape)  # type: ignore[attr-defined]
    if not isinstance(options, kind.options_type) or options.vocabulary_size != rows:
        detail = f"must be {kind.options_type.__name__} checked for {rows} rows, got {options!r}"
        raise _pickle_error(kind.__name__, "options", detail)
    held = {"table": table, "options": options, "vocabulary_size": rows, "embedding_width": width}
    for name, value in held.items():
        object.__setattr__(layer, name, value)


def layer_of(kind: type[_L], table: object, options: object) -> _L:
    """The layer of class ``kind`` holding ``table`` and ``options``, checked (else
    ``layer.pickle-state``)."""
    if not (isinstance(kind, type) and issubclass(kind, TableLayer) and kind is not TableLayer):
        layer = getattr(kind, "__name__", "layer")
        raise _pickle_error(layer, "class", f"must be Embedding or EmbeddingBag, got {kind!r}")
    layer = object.__new__(kind)
    hold_fields(layer, table, options)
    return layer


# The constructors' one body each; ``options`` are the options' fields after the row count.


def hold_new(
    layer: TableLayer,
    sizes: tuple[Any, Any],
    name: str,
    rng: Seed,
    dtype: npt.DTypeLike,
    options: tuple[Any, ...],
) -> None:
    """``__init__``: a table drawn as ``new`` draws it, or the two fields (``table``,
    ``options``), as earlier versions' pickles give them."""
    if is_table(sizes[0]):
        hold_fields(layer, *sizes)
    else:
        hold_fields(layer, *new_table(name, *sizes, rng, dtype, _options_for(type(layer), options)))


def wrapping(kind: type[_L], table: NamedParameter, options: tuple[Any, ...]) -> _L:
    """``from_parameter``: the parameter's type and shape checked, then the options."""
    rows, _ = checked_parameter_size(table)
    return layer_of(kind, table, _options_for(kind, options)(rows))


def drawn(
    kind: type[_L],
    name: str,
    sizes: tuple[int, int],
    rng: Seed,
    dtype: npt.DTypeLike,
    options: tuple[Any, ...],
) -> _L:
    """``new``: checked and drawn by :func:`~llm_from_scratch.nn.tables.new_table`."""
    return layer_of(kind, *new_table(name, *sizes, rng, dtype, _options_for(kind, options)))


def pretrained(
    kind: type[_L], table: object, name: str, freeze: bool, options: tuple[Any, ...]
) -> _L:
    """``from_pretrained``: checked by :func:`~llm_from_scratch.nn.tables.pretrained_table`."""
    return layer_of(kind, *pretrained_table(table, name, freeze, _options_for(kind, options)))


def _options_for(kind: type[TableLayer], options: tuple[Any, ...]) -> Callable[[int], Options]:
    return lambda rows: kind.options_type(rows, *options)


def is_table(value: object) -> bool:
    """True for a layer's table (a :class:`NamedParameter` or a :class:`FrozenTable`)."""
    return isinstance(value, NamedParameter | FrozenTable)


class TableLayer:
    """The base of the embedding layers: frozen dataclasses of ``table`` and ``options``."""

    __slots__ = ()
    table: Table
    options: LookupOptions | BagOptions
    vocabulary_size: int
    embedding_width: int
    options_type: ClassVar[type[LookupOptions] | type[BagOptions]]

    weight = PyTorchName("table.tensor, the table's leaf (its numbers: table.tensor.numpy())")
    num_embeddings = PyTorchName("vocabulary_size")
    embedding_dim = PyTorchName("embedding_width")

    @property
    def padding_idx(self) -> int | None:
        """The row that receives no gradient (a bag skips its entries), in ``[0, V)``, or None."""
        return self.options.padding_idx

    @property
    def max_norm(self) -> float | None:
        """The norm above which a looked-up row is scaled down, or None."""
        return self.options.max_norm

    @property
    def norm_type(self) -> float:
        """The ``p`` of that norm."""
        return self.options.norm_type

    @property
    def frozen(self) -> bool:
        """True when the table is a :class:`FrozenTable`."""
        return isinstance(self.table, FrozenTable)

    def __repr__(self) -> str:
        options = [f.name for f in fields(self.options)[1:] if f.repr]  # vocabulary_size first
        shown = ", ".join(f"{name}={getattr(self.options, name)!r}" for name in options)
        return (
            f"{type(self).__name__}(name={self.table.name!r}, "
            f"vocabulary_size={self.vocabulary_size}, embedding_width={self.embedding_width}, "
            f"dtype={self.table.tensor.dtype}, {shown}, frozen={self.frozen})"
        )

    def parameters(self) -> NamedParameters:
        """The table (the same leaf), or none for a frozen table, whose name ``frozen`` keeps."""
        if isinstance(self.table, FrozenTable):
            return NamedParameters((), frozen=(self.table.name,))
        return NamedParameters((self.table,))

    def zero_grad(self) -> None:
        """Reset the table's stored gradient (a frozen table stores none)."""
        for parameter in self.parameters():
            parameter.tensor.zero_grad()

    def state_dict(self) -> dict[str, FloatArray]:
        """A new writeable copy of the table's numbers, of one value revision, under the table's
        full name (a checkpoint's key; PyTorch's is ``weight``).

        Example:
            >>> from llm_from_scratch.nn import Embedding
            >>> state = Embedding(4, 2).state_dict()
            >>> list(state), state["token_embedding.weight"].shape
            (['token_embedding.weight'], (4, 2))
            >>> Embedding(4, 2, rng=1).load_state_dict(state)
        """
        return {self.table.name: copied_values(self.table.tensor)}

    def load_state_dict(self, state: Mapping[str, npt.NDArray[Any]]) -> None:
        """Write ``state``'s table into the layer's in place, as PyTorch's strict
        ``load_state_dict`` (the stored gradient kept), once all is checked: a mapping whose one
        key is the table's name, of a NumPy array (not masked) of its shape, dtype, finite.

        Raises:
            TableError: ``layer.state-dict``: a frozen layer (``field`` ``table``), then the
                first failing check (``state``, ``key``, ``value``).
            NonFiniteError: ``parameter.non-finite``, the first in flat order.
        """
        table = self.table
        refused = partial(TableError, "layer.state-dict", layer=type(self).__name__)
        if isinstance(table, FrozenTable):
            raise refused(field="table", detail=FROZEN_DETAIL)
        name, leaf = table.name, table.tensor
        if not isinstance(state, Mapping):
            detail = "must be a mapping of the table's name to an array, got "
            raise refused(field="state", detail=detail + type(state).__name__)
        for key in state:
            if key != name:
                raise refused(field="key", detail=f"{key!r} is not the table's name {name!r}")
        if name not in state:
            raise refused(field="key", detail=f"{name!r}, the table's name, is missing")
        value = state[name]
        if not isinstance(value, np.ndarray) or is_masked_array(value):
            detail = f"must be a NumPy array, got {type(value).__name__}"
            raise refused(field="value", detail=detail)
        array = plain_view(value)
        if array.shape != tuple(leaf.shape) or array.dtype != leaf.dtype:
            rule = f"must have the table's shape {list(leaf.shape)} and dtype {leaf.dtype}"
            raise refused(field="value", detail=f"{rule}, got {list(array.shape)} {array.dtype}")
        check_finite(array)
        update_leaves_in_place([leaf], lambda: [partial(np.copyto, src=array)])

    def clone(self) -> Self:
        """A new layer object holding the same table (the same leaf) and the same options."""
        return layer_of(type(self), self.table, self.options)

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """The same options and an independent leaf (a frozen table is shared)."""
        return layer_of(type(self), copy.deepcopy(self.table, memo), self.options)

    def __reduce__(self) -> tuple[Any, ...]:
        return layer_of, (type(self), self.table, self.options)
