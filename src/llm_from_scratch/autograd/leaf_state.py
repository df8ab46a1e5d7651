"""Pickling and deep-copying tape leaves: the state a leaf carries, checked when it is rebuilt.

A leaf pickles as its kind, its values (at one revision) and, for a parameter, its stored
gradient, dense or row-sparse; a rebuilt or deep-copied leaf is a new node at revision 0, and
handles on one node come back on one new node. A pickle can be crafted, so
:func:`restore_node` checks what it receives as a public boundary does (``tape.leaf-state``).
"""

from __future__ import annotations

import copyreg
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import numpy as np

from llm_from_scratch.autograd.gradient import Gradient, RowSparseGradient, first_non_finite
from llm_from_scratch.autograd.tape import Node, output_allocation_error, raise_if_non_finite
from llm_from_scratch.autograd.threads import consistent_read
from llm_from_scratch.errors import NonFiniteError, TapeError
from llm_from_scratch.tensor.storage import (
    FloatArray,
    IndexArray,
    Shape,
    is_masked_array,
    kept_float_dtype,
    plain_view,
)

_STATE_KEYS: Final = {"constant": ("kind", "values"), "parameter": ("kind", "values", "gradient")}
_GRADIENT_KEYS: Final = {
    "dense": ("form", "values"),
    "row_sparse": ("form", "rows", "values", "summed"),
}


def refuse_operation(node: Node, action: str) -> None:
    """``tape.unpicklable`` if ``node`` is an operation result."""
    if node.kind != "operation":
        return
    operation = node.operation  # read before the name: a release sets the name first
    name = operation.name if operation is not None else node.released_name
    raise TapeError("tape.unpicklable", action=action, operation=name or "unknown")


def reduce_node(node: Node) -> tuple[Callable[[object], Node], tuple[dict[str, object]]]:
    """How ``pickle`` writes a node: :func:`restore_node` and the leaf's state."""
    refuse_operation(node, "pickle")
    if node.kind == "constant":  # a constant's values never change: no copy needed
        return restore_node, ({"kind": "constant", "values": node.array},)
    state: dict[str, object] = {
        "kind": "parameter",
        "values": _values_snapshot(node),
        "gradient": _gradient_state(node.gradient),
    }
    return restore_node, (state,)


copyreg.pickle(Node, reduce_node)


def _gradient_state(gradient: Gradient | None) -> dict[str, object]:
    if isinstance(gradient, RowSparseGradient):
        summed = gradient.summed
        return {
            "form": "row_sparse",
            "rows": gradient.rows.astype(np.int64),  # the same on every platform
            "values": gradient.values,
            "summed": None if summed is None else summed.astype(np.int64),
        }
    return {"form": "dense", "values": gradient}


def restore_node(state: object) -> Node:
    """Rebuild a pickled leaf from its own native-order copies, checking, in order, the state,
    its kind, the values, the gradient's form, its rows, values and summed positions
    (``tape.leaf-state``) and finiteness (``parameter.non-finite``, ``gradient.non-finite``)."""
    kind, fields = _checked_state("state", state, "kind", _STATE_KEYS)
    values = _owned(_float_view("values", fields["values"]))
    if kind == "constant":
        return Node(values, "constant", None)
    found = first_non_finite(values)
    if found is not None:
        raise NonFiniteError("parameter.non-finite", value=found[1], position=found[0])
    gradient = _restored_gradient(fields["gradient"], values)
    node = Node(values, "parameter", None)
    node.gradient = gradient  # before anyone else can see the node
    return node


def _restored_gradient(state: object, values: FloatArray) -> Gradient:
    form, fields = _checked_state("gradient", state, "form", _GRADIENT_KEYS)
    if form == "row_sparse":
        return _restored_row_sparse(fields, values)
    dense = _float_view("gradient values", fields["values"])
    _check_layout("gradient values", dense, tuple(values.shape), values.dtype)
    owned = _owned(dense)
    raise_if_non_finite("restored", owned)
    return owned


def _restored_row_sparse(fields: dict[str, object], values: FloatArray) -> RowSparseGradient:
    if values.ndim != 2:
        detail = f"is row-sparse, which only a rank-two parameter has; got rank {values.ndim}"
        raise _state_error("gradient", detail)
    shape = (int(values.shape[0]), int(values.shape[1]))
    rows = _checked_positions("gradient rows", fields["rows"], shape[0])
    row_values = _float_view("gradient values", fields["values"])
    _check_layout("gradient values", row_values, (int(rows.size), shape[1]), values.dtype)
    summed = fields["summed"]
    positions = None if summed is None else _checked_positions("gradient summed", summed, rows.size)
    owned = _owned(row_values)
    every_row = RowSparseGradient(rows, owned, shape, None)  # not only the summed ones
    raise_if_non_finite("restored", every_row)
    return RowSparseGradient(rows, owned, shape, positions)


def _checked_state(
    part: str, state: object, key: str, choices: dict[str, tuple[str, ...]]
) -> tuple[str, dict[str, object]]:
    """``state[key]`` and ``state``, a dict with exactly the keys its choice lists."""
    if type(state) is not dict:
        raise _state_error(part, f"must be a dict, got {type(state).__name__}")
    choice = state.get(key)
    if type(choice) is not str or choice not in choices:
        raise _state_error(key, f"must be one of {sorted(choices)}, got {choice!r}")
    keys = choices[choice]
    if len(state) != len(keys) or set(state) != set(keys):
        got = ", ".join(sorted(repr(name) for name in state))
        raise _state_error(part, f"must have the keys {sorted(keys)}, got [{got}]")
    return choice, state


def _float_view(part: str, array: object) -> FloatArray:
    """The plain data of a float32 or float64 array (not yet copied)."""
    plain = _plain_array(part, array)
    if kept_float_dtype(plain.dtype) is None:
        raise _state_error(part, f"must be float32 or float64, got {plain.dtype}")
    return plain


def _plain_array(part: str, array: object) -> np.ndarray[Any, Any]:
    if not isinstance(array, np.ndarray):
        raise _state_error(part, f"must be a NumPy array, got {type(array).__name__}")
    if is_masked_array(array):
        raise _state_error(part, "must not be a masked array")
    return plain_view(array)


def _check_layout(part: str, array: FloatArray, shape: Shape, dtype: np.dtype[Any]) -> None:
    if tuple(array.shape) != shape:
        raise _state_error(part, f"must have shape {list(shape)}, got {list(array.shape)}")
    if kept_float_dtype(array.dtype) != dtype:
        raise _state_error(part, f"must have the values' dtype {dtype}, got {array.dtype}")


def _checked_positions(part: str, array: object, bound: int) -> IndexArray:
    """A new intp copy of a 1-D integer array of at most ``bound`` (checked before any entry is
    read) sorted unique entries in ``[0, bound)``."""
    plain = _plain_array(part, array)
    if plain.dtype.kind not in "iu" or plain.ndim != 1:
        raise _state_error(part, f"must be a 1-D integer array, got {plain.ndim}-D {plain.dtype}")
    if plain.size > bound:
        detail = f"must hold at most {bound} sorted unique positions, got {plain.size}"
        raise _state_error(part, detail)
    if plain.size and not bool(np.all(plain[1:] > plain[:-1])):
        raise _state_error(part, "must be sorted and unique")
    if plain.size and (int(plain[0]) < 0 or int(plain[-1]) >= bound):
        first, last = int(plain[0]), int(plain[-1])
        raise _state_error(part, f"must lie in [0, {bound}), got {first} to {last}")
    try:
        return plain.astype(np.intp)  # in range, so exact
    except MemoryError as error:
        raise output_allocation_error("leaf copy", plain.size) from error


def _state_error(part: str, detail: str) -> TapeError:
    return TapeError("tape.leaf-state", part=part, detail=detail)


def deep_copied_node(node: Node) -> Node:
    """A new leaf node (revision 0, a new lock) with copies of the values and gradient."""
    refuse_operation(node, "deep-copy")
    if node.kind == "constant":
        return Node(_owned(node.array), "constant", None)
    gradient = node.gradient  # read once: a backward commit replaces it, never writes into it
    copy = Node(_values_snapshot(node), "parameter", None)
    copy.gradient = _copied_gradient(gradient)
    return copy


def _copied_gradient(gradient: Gradient | None) -> Gradient | None:
    if isinstance(gradient, RowSparseGradient):
        summed = gradient.summed
        return RowSparseGradient(
            _owned(gradient.rows),
            _owned(gradient.values),
            gradient.shape,
            None if summed is None else _owned(summed),
        )
    return None if gradient is None else _owned(gradient)


def _values_snapshot(node: Node) -> FloatArray:
    """A copy of a parameter's values, all of one value revision."""
    copy, _ = consistent_read((node,), lambda: _owned(node.array))
    return copy


_ArrayT = TypeVar("_ArrayT", bound="np.ndarray[Any, Any]")


def _owned(array: _ArrayT) -> _ArrayT:
    """A new C-contiguous copy of ``array`` in native byte order."""
    try:
        copy = np.array(array, dtype=array.dtype.newbyteorder("="), order="C", copy=True)
    except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
        raise output_allocation_error("leaf copy", array.size) from error
    return cast(_ArrayT, copy)
