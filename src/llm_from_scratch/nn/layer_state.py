"""Pickling and deep-copying the embedding layers.

A layer pickles as exactly its dataclass fields and is rebuilt from them by the checks that
build it: the table must be a :class:`NamedParameter` (the trainable leaf, which pickles its
values and gradient) or a :class:`FrozenTable`, the options are checked for its row count as the
constructors check them, and every field of the rebuilt layer must equal the pickled one, so a
field derived from the table (``vocabulary_size``) cannot disagree with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from llm_from_scratch.nn.embedding_errors import EmbeddingStateError, FrozenTableMaxNormError
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.nn.tables import FrozenTable, Table, checked_sizes

__all__ = ["layer_fields", "restored_layer"]


class _Options(Protocol):
    @property
    def max_norm(self) -> float | None: ...


_Layer = TypeVar("_Layer")
_O = TypeVar("_O", bound=_Options)


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
