"""What the embedding layers share: their table checks, parameter list, copying and pickling.

A layer is a frozen dataclass of two fields, its ``table`` and its checked ``options`` (one
frozen record built once), and it checks itself when built (:func:`hold_fields`): the table
must be a :class:`NamedParameter` (the trainable leaf) or a :class:`FrozenTable` of rank two
with ``V, d > 0``, and the options must have been checked for its ``V``. Calling the class with
sizes draws a new table; the constructors, cloning, deep copies and unpickling build a layer
from its two fields through :func:`layer_of`, so a crafted pickle meets exactly the checks a
new layer meets.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, TypeVar

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import copied_values, update_leaves_in_place
from llm_from_scratch.errors import NonFiniteError
from llm_from_scratch.nn.embedding_errors import EmbeddingStateError
from llm_from_scratch.nn.init import FROZEN_DETAIL, NamedParameter, NamedParameters
from llm_from_scratch.nn.tables import FrozenTable, Table, checked_sizes
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import FloatArray, is_masked_array, plain_view

__all__ = ["TableLayer", "checked_layer_table", "hold_fields", "is_table", "layer_of"]


class _Options(Protocol):
    @property
    def vocabulary_size(self) -> int: ...


_L = TypeVar("_L", bound="TableLayer")


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


def hold_fields(layer: TableLayer, table: object, options: object) -> None:
    """Check ``table`` and ``options`` (:func:`checked_layer_table`) and set them on the new
    ``layer``, with ``vocabulary_size`` and ``embedding_width``.

    Raises:
        EmbeddingStateError, TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: as
            :func:`checked_layer_table`.
    """
    kind = type(layer)
    rows, width = checked_layer_table(kind.__name__, table, options, kind.options_type)
    for name, value in (("table", table), ("options", options)):
        object.__setattr__(layer, name, value)
    object.__setattr__(layer, "vocabulary_size", rows)
    object.__setattr__(layer, "embedding_width", width)


def layer_of(kind: type[_L], table: object, options: object) -> _L:
    """The layer of class ``kind`` holding ``table`` and ``options``, checked: what the
    constructors build, and what copies and pickles rebuild (the unpickler's entry point).

    Raises:
        EmbeddingStateError: ``kind`` is no layer class (a crafted pickle), or as
            :func:`hold_fields`.
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: as :func:`hold_fields`.
    """
    if not (isinstance(kind, type) and issubclass(kind, TableLayer) and kind is not TableLayer):
        detail = f"must be Embedding or EmbeddingBag, got {kind!r}"
        raise EmbeddingStateError("class", detail, getattr(kind, "__name__", "layer"))
    layer = object.__new__(kind)
    hold_fields(layer, table, options)
    return layer


def checked_state(layer: str, name: str, leaf: TensorValue, state: object) -> FloatArray:
    """The array ``state`` holds for the table ``name`` (``leaf``), checked as
    :meth:`TableLayer.load_state_dict` promises.

    Raises:
        EmbeddingStateError, NonFiniteParameterError: see there.
    """

    def refused(field: str, detail: str) -> EmbeddingStateError:
        return EmbeddingStateError(field, detail, layer, "state dict")

    if not isinstance(state, Mapping):
        detail = f"must be a mapping of the table's name to an array, got {type(state).__name__}"
        raise refused("state", detail)
    for key in state:
        if key != name:
            raise refused("key", f"{key!r} is not the table's name {name!r}")
    if name not in state:
        raise refused("key", f"{name!r}, the table's name, is missing")
    value = state[name]
    if not isinstance(value, np.ndarray) or is_masked_array(value):
        raise refused("value", f"must be a NumPy array, got {type(value).__name__}")
    array = plain_view(value)
    if array.shape != tuple(leaf.shape) or array.dtype != leaf.dtype:
        rule = f"must have the table's shape {list(leaf.shape)} and dtype {leaf.dtype}"
        raise refused("value", f"{rule}, got {list(array.shape)} {array.dtype}")
    found = first_non_finite(array)
    if found is not None:
        raise NonFiniteError("parameter.non-finite", value=found[1], position=found[0])
    return array


def is_table(value: object) -> bool:
    """True for a layer's table: the class called with it and its options rebuilds a layer (as
    pickles written before :func:`layer_of` do)."""
    return isinstance(value, NamedParameter | FrozenTable)


class TableLayer:
    """The base of the embedding layers: frozen dataclasses with ``table`` and ``options``."""

    __slots__ = ()
    table: Table
    options: object
    options_type: ClassVar[type[_Options]]

    weight = PyTorchName("table.tensor, the table's leaf (its numbers: table.tensor.numpy())")
    num_embeddings = PyTorchName("vocabulary_size")
    embedding_dim = PyTorchName("embedding_width")

    def parameters(self) -> NamedParameters:
        """The layer's trainable parameters: a :class:`NamedParameters` holding :attr:`table`
        (the same leaf), or none for a frozen table (whose name it keeps in ``frozen``, so
        that an optimizer or a checkpoint load given it says that the table is frozen)."""
        if isinstance(self.table, FrozenTable):
            return NamedParameters((), frozen=(self.table.name,))
        return NamedParameters((self.table,))

    @property
    def frozen(self) -> bool:
        """True when the table is a :class:`FrozenTable`."""
        return isinstance(self.table, FrozenTable)

    def zero_grad(self) -> None:
        """Reset the table's stored gradient, as PyTorch's ``Module.zero_grad()`` (a frozen
        table stores none: nothing to do)."""
        for parameter in self.parameters():
            parameter.tensor.zero_grad()

    # State, as a module's --------------------------------------------------------------------

    def state_dict(self) -> dict[str, FloatArray]:
        """A copy of the table's numbers under the table's name, as PyTorch's ``state_dict()``
        (whose key is ``weight``, relative to the module; here it is the table's full name, the
        key a checkpoint file gives it). A frozen table is in it too, as in PyTorch.

        The array is new and writeable, all of one value revision (a concurrent optimizer step
        is either in it or not).

        Example:
            >>> from llm_from_scratch.nn import Embedding
            >>> layer = Embedding(4, 2)
            >>> state = layer.state_dict()
            >>> list(state), state["token_embedding.weight"].shape
            (['token_embedding.weight'], (4, 2))
            >>> Embedding(4, 2, rng=1).load_state_dict(state)
        """
        return {self.table.name: copied_values(self.table.tensor)}

    def load_state_dict(self, state: Mapping[str, npt.NDArray[Any]]) -> None:
        """Write ``state``'s table into the layer's, in place, as PyTorch's strict
        ``load_state_dict``: its value revision is bumped (a graph recorded before refuses to
        run backward) and its stored gradient kept. Everything is checked before anything is
        written: ``state`` is a mapping with exactly one key, the table's name, whose value is
        a real NumPy array (an ndarray subclass read through its plain data, not a masked one)
        of the table's shape and dtype, with finite values.

        Raises:
            EmbeddingStateError: the first failing check (``field``: ``state``, ``key``,
                ``value``), or a frozen layer (``table``: build it with ``freeze=False``).
            NonFiniteParameterError: a NaN or infinity, the first in flat order.
        """
        table = self.table
        layer = type(self).__name__
        if isinstance(table, FrozenTable):
            raise EmbeddingStateError("table", FROZEN_DETAIL, layer, "state dict")
        values = checked_state(layer, table.name, table.tensor, state)
        update_leaves_in_place([table.tensor], lambda: [partial(np.copyto, src=values)])

    def clone(self) -> Self:
        """A new layer object holding the same table (the same leaf) and the same options."""
        return layer_of(type(self), self.table, self.options)

    def __copy__(self) -> Self:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """A layer with the same options and an independent table leaf holding equal values
        and an equal stored gradient (in the same form); a frozen table is shared."""
        return layer_of(type(self), copy.deepcopy(self.table, memo), self.options)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the class, the table and the options, rebuilt (and checked) by
        :func:`layer_of`."""
        return layer_of, (type(self), self.table, self.options)
