"""What the embedding layers share: their parameter list, and copying and pickling by fields.

:class:`TableLayer` gives both layers ``parameters()``, ``frozen``, ``clone()`` and the copy and
pickle protocols. A layer pickles as exactly its dataclass fields and is rebuilt from them by
the checks that build it: the table must be a :class:`NamedParameter` (the trainable leaf,
which pickles its values and gradient) or a :class:`FrozenTable`, the options are checked for
its row count as the constructors check them, and every field of the rebuilt layer must equal
the pickled one, so a field derived from the table (``vocabulary_size``) cannot disagree with
it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, Self, TypeVar, cast

from llm_from_scratch.nn.embedding_errors import EmbeddingStateError, FrozenTableMaxNormError
from llm_from_scratch.nn.init import NamedParameter, NamedParameters
from llm_from_scratch.nn.tables import FrozenTable, Table, checked_sizes

__all__ = ["TableLayer", "layer_fields", "restored_layer"]


class _Options(Protocol):
    @property
    def max_norm(self) -> float | None: ...


_Layer = TypeVar("_Layer")
_O = TypeVar("_O", bound=_Options)


class TableLayer:
    """The base of the embedding layers, sealed dataclasses with a ``table`` field.

    A subclass names, in :meth:`_restorer`, the module-level function that rebuilds it from its
    fields (a :func:`restored_layer` call, which is also what the unpickler calls).
    """

    __slots__ = ()
    table: Table

    @classmethod
    def _restorer(cls) -> Callable[[object], TableLayer]:
        raise NotImplementedError(f"{cls.__name__} names no restore function")

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
        return cast(Self, self._restorer()(layer_fields(self)))

    def __copy__(self) -> Self:
        return self.clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """A layer with the same options and an independent table leaf holding equal values
        and an equal stored gradient (in the same form); a frozen table is shared."""
        fields = {name: copy.deepcopy(value, memo) for name, value in layer_fields(self).items()}
        return cast(Self, self._restorer()(fields))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the layer's fields (a parameter table pickles its leaf's values and
        gradient), rebuilt by the layer's restore function."""
        return self._restorer(), (layer_fields(self),)


def layer_fields(layer: Any) -> dict[str, object]:
    """A layer's dataclass fields by name, in declaration order."""
    return {field.name: getattr(layer, field.name) for field in dataclasses.fields(layer)}


def restored_layer(
    layer_type: type[_Layer],
    state: object,
    options_type: Callable[..., _O],
    build: Callable[[Table, _O], _Layer],
    error: type[EmbeddingStateError],
) -> _Layer:
    """Rebuild a ``layer_type`` from pickled (or deep-copied) fields.

    ``options_type`` is the layer's options dataclass (its first field the row count, the
    others named as the layer's option fields) and ``build`` the layer's trusted constructor.

    Raises:
        EmbeddingStateError (``error``): ``state`` is not a dict with exactly the layer's fields,
            the table is neither a ``NamedParameter`` nor a ``FrozenTable``, or a field differs
            from the rebuilt layer's.
        TableRankError, EmptyVocabularyError, ZeroEmbeddingWidthError: the table's shape.
        The options' errors, then FrozenTableMaxNormError: as when the layer is built.
    """
    fields = _checked_state(layer_type, state, error)
    table = fields["table"]
    if not isinstance(table, NamedParameter | FrozenTable):
        raise error(
            "table", f"must be a NamedParameter or a FrozenTable, got {type(table).__name__}"
        )
    rows, _ = checked_sizes(table.tensor.shape)
    names = [field.name for field in dataclasses.fields(options_type)][1:]  # type: ignore[arg-type]
    options = options_type(rows, **{name: fields[name] for name in names})
    if isinstance(table, FrozenTable) and options.max_norm is not None:
        raise FrozenTableMaxNormError("constant")
    layer = build(table, options)
    for name, value in layer_fields(layer).items():
        pickled = fields[name]
        if not _same_field(value, pickled):
            raise error(name, f"is {pickled!r}, but the rebuilt layer has {value!r}")
    return layer


def _checked_state(
    layer_type: type[object], state: object, error: type[EmbeddingStateError]
) -> dict[str, object]:
    names = [field.name for field in dataclasses.fields(layer_type)]  # type: ignore[arg-type]
    if type(state) is not dict:
        raise error("state", f"must be a dict, got {type(state).__name__}")
    if len(state) != len(names) or set(state) != set(names):
        got = ", ".join(sorted(repr(name) for name in state))
        raise error("state", f"must have the fields {sorted(names)}, got [{got}]")
    return state


def _same_field(value: object, pickled: object) -> bool:
    return value is pickled or (type(value) is type(pickled) and bool(value == pickled))
