"""What the embedding layers share: their table checks, parameter list, copying and pickling.

A layer is a frozen dataclass of two fields, its ``table`` and its checked ``options`` (one
frozen record built once), and it checks itself when built (:func:`checked_layer_table`): the
table must be a :class:`NamedParameter` (the trainable leaf) or a :class:`FrozenTable` of rank
two with ``V, d > 0``, and the options must have been checked for its ``V``. Cloning, deep
copies and unpickling build the layer again through the same constructor, so a crafted pickle
meets exactly the checks a new layer meets.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol, Self

from llm_from_scratch.nn.embedding_errors import EmbeddingStateError
from llm_from_scratch.nn.init import NamedParameter, NamedParameters
from llm_from_scratch.nn.tables import FrozenTable, Table, checked_sizes

__all__ = ["TableLayer", "checked_layer_table"]


class _Options(Protocol):
    @property
    def vocabulary_size(self) -> int: ...


def checked_layer_table(
    layer: str, table: object, options: object, options_type: type[_Options]
) -> tuple[int, int]:
    """``(V, d)`` of a layer's table, after checking that ``table`` and ``options`` make one.

    Raises:
        EmbeddingStateError: ``table`` is neither a NamedParameter nor a FrozenTable, or
            ``options`` are not ``options_type`` checked for the table's ``V``.
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: the table's shape.
    """
    if not isinstance(table, NamedParameter | FrozenTable):
        detail = f"must be a NamedParameter or a FrozenTable, got {type(table).__name__}"
        raise EmbeddingStateError("table", detail, layer)
    rows, width = checked_sizes(table.tensor.shape)
    if not isinstance(options, options_type) or options.vocabulary_size != rows:
        detail = f"must be {options_type.__name__} checked for {rows} rows, got {options!r}"
        raise EmbeddingStateError("options", detail, layer)
    return rows, width


class TableLayer:
    """The base of the embedding layers: frozen dataclasses with ``table`` and ``options``."""

    __slots__ = ()
    table: Table
    options: object

    def parameters(self) -> NamedParameters:
        """The layer's trainable parameters: a :class:`NamedParameters` holding :attr:`table`
        (the same leaf), or none for a frozen table."""
        if isinstance(self.table, FrozenTable):
            return NamedParameters(())
        return NamedParameters((self.table,))

    @property
    def frozen(self) -> bool:
        """True when the table is a :class:`FrozenTable`."""
        return isinstance(self.table, FrozenTable)

    def clone(self) -> Self:
        """A new layer object holding the same table (the same leaf) and the same options."""
        return type(self)(self.table, self.options)  # type: ignore[call-arg]

    def __copy__(self) -> Self:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """A layer with the same options and an independent table leaf holding equal values
        and an equal stored gradient (in the same form); a frozen table is shared."""
        return type(self)(copy.deepcopy(self.table, memo), self.options)  # type: ignore[call-arg]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the table and the options, rebuilt (and checked) by the constructor."""
        return type(self), (self.table, self.options)
