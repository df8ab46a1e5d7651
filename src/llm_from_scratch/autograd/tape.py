"""The tape: nodes, operation records, ``no_grad()``, graph release and the backward pass.

A node is a parameter leaf (it stores a gradient), a constant leaf, or an operation result that
records its operation: the parents, each parent's value revision at recording time, a small
frozen record of the facts its VJP needs, and the VJP itself (which sits next to its forward in
:mod:`~llm_from_scratch.autograd.ops` or :mod:`~llm_from_scratch.autograd.gather`).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from llm_from_scratch.autograd.errors import (
    GraphReleasedError,
    NonFiniteGradientError,
    NotAParameterError,
    NotRecordedError,
    OutputAllocationError,
    ReleasedOperandError,
    StaleValueError,
)
from llm_from_scratch.autograd.gradient import (
    Gradient,
    RowSparseGradient,
    add_gradients,
    as_dense,
    first_non_finite,
)
from llm_from_scratch.tensor.storage import FloatArray

NodeKind: TypeAlias = Literal["parameter", "constant", "operation"]
Vjp: TypeAlias = "Callable[[Any, FloatArray], Sequence[Gradient | None]]"


class GraphRetention(enum.Enum):
    """What a backward pass does with the recorded operations it walked."""

    RETAIN = "retain"
    """Keep every saved fact so that another backward can run (gradients add up again)."""
    RELEASE = "release"
    """Free every non-leaf node's saved facts after a successful pass."""


@dataclass(frozen=True, slots=True)
class Operation:
    """What an operation result recorded: enough to run its VJP, nothing more."""

    name: str
    operand_names: tuple[str, ...]
    parents: tuple[Node, ...]
    parent_revisions: tuple[int, ...]
    saved: object
    vjp: Vjp


class Node:
    """One value on the tape. Package-private: users hold a ``TensorValue``."""

    __slots__ = (
        "array",
        "clean_epoch",
        "gradient",
        "kind",
        "operation",
        "released_name",
        "revision",
    )

    def __init__(self, array: FloatArray, kind: NodeKind, operation: Operation | None) -> None:
        array.flags.writeable = False
        self.array = array
        self.kind: NodeKind = kind
        self.operation = operation
        self.released_name: str | None = None
        self.revision = 0
        self.clean_epoch = _release_state.epoch
        self.gradient: Gradient | None = zero_gradient(array) if kind == "parameter" else None

    @property
    def requires_grad(self) -> bool:
        return self.kind != "constant"

    def release(self) -> None:
        if self.operation is not None:
            self.released_name = self.operation.name
            self.operation = None


def zero_gradient(array: FloatArray) -> Gradient:
    """The all-zero gradient of a parameter: row-sparse with no rows for a rank-two table,
    dense zeros otherwise."""
    if array.ndim == 2:
        return RowSparseGradient.empty((int(array.shape[0]), int(array.shape[1])), array.dtype)
    return np.zeros(array.shape, dtype=array.dtype)


class _ReleaseState:
    """Counts release passes so that clean nodes need not be walked again."""

    def __init__(self) -> None:
        self.epoch = 0


_release_state = _ReleaseState()
_recording = threading.local()


def is_recording() -> bool:
    """False inside ``no_grad()``."""
    return bool(getattr(_recording, "enabled", True))


@contextmanager
def no_grad() -> Iterator[None]:
    """Switch recording off: operations inside build untracked constant values.

    Example:
        >>> from llm_from_scratch.autograd import TensorValue
        >>> from llm_from_scratch.tensor import Tensor
        >>> w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
        >>> with no_grad():
        ...     y = w.mul(w)
        >>> y.kind
        'constant'
    """
    previous = is_recording()
    _recording.enabled = False
    try:
        yield
    finally:
        _recording.enabled = previous


def check_operands(operation: str, operands: Sequence[tuple[str, Node]]) -> None:
    """Raise ``ReleasedOperandError`` if an operand reaches a released tape (while recording)."""
    if not is_recording():
        return
    for operand_name, node in operands:
        if _reaches_released(node):
            raise ReleasedOperandError(operation, operand_name)


def record(
    operation: str,
    operands: Sequence[tuple[str, Node]],
    value: FloatArray,
    saved: object,
    vjp: Vjp,
) -> Node:
    """Wrap a forward ``value``: an operation node, or a constant when nothing needs a gradient."""
    if not is_recording() or not any(node.requires_grad for _, node in operands):
        return Node(value, "constant", None)
    parents = tuple(node for _, node in operands)
    return Node(
        value,
        "operation",
        Operation(
            name=operation,
            operand_names=tuple(name for name, _ in operands),
            parents=parents,
            parent_revisions=tuple(parent.revision for parent in parents),
            saved=saved,
            vjp=vjp,
        ),
    )


def _reaches_released(start: Node) -> bool:
    epoch = _release_state.epoch
    stack, walked, seen = [start], [], set()
    while stack:
        node = stack.pop()
        if node.released_name is not None:
            return True
        if node.clean_epoch == epoch or id(node) in seen:
            continue
        seen.add(id(node))
        walked.append(node)
        if node.operation is not None:
            stack.extend(node.operation.parents)
    for node in walked:  # nothing below them is released as of this epoch: skip them next time
        node.clean_epoch = epoch
    return False


def backward(root: Node, seed: FloatArray, retention: GraphRetention) -> None:
    """Propagate ``seed`` from ``root`` and add each parameter's pass gradient to its store.

    Transactional: every check runs and every new gradient is computed before any is stored.
    ``seed`` has been validated (shape, dtype, finiteness) by the caller.
    """
    if not root.requires_grad:
        raise NotRecordedError()
    order = _topological_order(root)
    _check_revisions(order)
    try:
        updates = _accumulated(_propagate(root, seed, order))
    except MemoryError as error:
        raise OutputAllocationError("backward", int(root.array.size)) from error
    for node, gradient in updates:
        node.gradient = gradient
    if retention is GraphRetention.RELEASE:
        for node in order:
            node.release()
        _release_state.epoch += 1


def _topological_order(root: Node) -> list[Node]:
    """Operation nodes reachable from ``root``, every node before its parents."""
    order: list[Node] = []
    visited: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        if node.released_name is not None:
            raise GraphReleasedError(node.released_name)
        if node.operation is None:
            continue
        stack.append((node, True))
        stack.extend((parent, False) for parent in node.operation.parents)
    order.reverse()
    return order


def _check_revisions(order: Sequence[Node]) -> None:
    for node in order:
        operation = node.operation
        assert operation is not None  # only operation nodes are ordered
        for name, parent, recorded in zip(
            operation.operand_names, operation.parents, operation.parent_revisions, strict=True
        ):
            if parent.revision != recorded:
                raise StaleValueError(operation.name, name, recorded, parent.revision)


def _propagate(
    root: Node,
    seed: FloatArray,
    order: Sequence[Node],
    deferred: dict[int, FloatArray | None] | None = None,
) -> dict[int, tuple[Node, Gradient]]:
    """Run each VJP in order; a node listed in ``deferred`` gets its upstream recorded there
    instead of running its VJP."""
    pending: dict[int, tuple[Node, Gradient]] = {id(root): (root, seed)}
    for node in order:
        operation = node.operation
        assert operation is not None
        entry = pending.pop(id(node), None)
        if entry is None:
            continue
        upstream = as_dense(entry[1])
        if deferred is not None and id(node) in deferred:
            deferred[id(node)] = upstream
            continue
        for parent, gradient in zip(
            operation.parents, operation.vjp(operation.saved, upstream), strict=True
        ):
            if gradient is None or not parent.requires_grad:
                continue
            _raise_if_non_finite(operation.name, gradient)
            earlier = pending.get(id(parent))
            if earlier is None:
                pending[id(parent)] = (parent, gradient)
                continue
            total = add_gradients(earlier[1], gradient)
            _raise_if_non_finite(operation.name, total)  # every upstream a VJP sees is finite
            pending[id(parent)] = (parent, total)
    return pending


def _accumulated(
    pass_gradients: dict[int, tuple[Node, Gradient]],
) -> list[tuple[Node, Gradient]]:
    updates = []
    for node, gradient in pass_gradients.values():
        if node.kind != "parameter" or node.gradient is None:
            continue
        total = add_gradients(node.gradient, gradient)
        if total is not gradient:  # adding to an all-zero store returns the checked pass
            _raise_if_non_finite("accumulated parameter", total)
        updates.append((node, total))
    return updates


def _raise_if_non_finite(operation: str, gradient: Gradient) -> None:
    found = first_non_finite(gradient)
    if found is not None:
        raise NonFiniteGradientError(operation, found[0], found[1])


def update_parameter_in_place(node: Node, update: Callable[[FloatArray], None]) -> None:
    """Let ``update`` write a parameter's values in place, then bump the value revision, so that
    operations recorded before the change refuse to run backward."""
    if node.kind != "parameter":
        raise NotAParameterError("an in-place update", node.kind)
    node.array.flags.writeable = True
    try:
        update(node.array)
    finally:
        node.array.flags.writeable = False
    node.revision += 1


# Deferred row gathers (package-internal, for optimizers that fuse their update) ----------------

DeferredVjp: TypeAlias = "tuple[object, FloatArray]"
"""A deferred operation's saved facts and its upstream gradient."""
PassGradient: TypeAlias = "Gradient | DeferredVjp | None"


def backward_deferring_row_gathers(
    root: Node,
    seed: FloatArray,
    retention: GraphRetention,
    leaves: Sequence[Node],
    is_row_gather: Callable[[object], bool],
    finish: Callable[[list[PassGradient]], Callable[[], None]],
) -> None:
    """:func:`backward`, except that a leaf reached only through one row gather, and whose
    stored gradient is empty, never receives its gradient: the gather's VJP does not run.

    ``finish`` gets, for each of ``leaves`` in order, the gather's saved facts and upstream
    (deferred), or the gradient the pass would store (stored plus pass), or None (not reached).
    It checks everything and returns a commit, which owns the gradients of ``leaves``: the pass
    stores none of them. ``finish`` and the commit may raise, having changed nothing; after the
    commit the pass stores the gradients of every other parameter it reached.
    """
    if not root.requires_grad:
        raise NotRecordedError()
    order = _topological_order(root)
    _check_revisions(order)
    gathers = _deferrable_row_gathers(order, leaves, is_row_gather)
    deferred: dict[int, FloatArray | None] = dict.fromkeys(gathers)
    try:
        updates = _accumulated(_propagate(root, seed, order, deferred))
    except MemoryError as error:
        raise OutputAllocationError("backward", int(root.array.size)) from error
    totals = {id(node): gradient for node, gradient in updates}
    given: list[PassGradient] = [totals.get(id(leaf)) for leaf in leaves]
    for gather_id, (gather, position) in gathers.items():
        upstream = deferred[gather_id]
        if upstream is not None and gather.operation is not None:
            given[position] = (gather.operation.saved, upstream)
    commit = finish(given)
    commit()
    handed_over = {id(leaf) for leaf in leaves}
    for node, gradient in updates:
        if id(node) not in handed_over:
            node.gradient = gradient
    if retention is GraphRetention.RELEASE:
        for node in order:
            node.release()
        _release_state.epoch += 1


def _deferrable_row_gathers(
    order: Sequence[Node], leaves: Sequence[Node], is_row_gather: Callable[[object], bool]
) -> dict[int, tuple[Node, int]]:
    """``id(gather node) -> (gather node, leaf position)`` for each leaf whose only recorded
    use in ``order`` is one row gather and whose stored gradient is empty."""
    positions = {id(leaf): position for position, leaf in enumerate(leaves)}
    uses: dict[int, list[Node]] = {}
    for node in order:
        assert node.operation is not None
        for parent in node.operation.parents:
            if id(parent) in positions:
                uses.setdefault(id(parent), []).append(node)
    gathers = {}
    for leaf in leaves:
        found = uses.get(id(leaf), [])
        stored = leaf.gradient
        if (
            len(found) == 1
            and found[0].operation is not None
            and is_row_gather(found[0].operation.saved)
            and isinstance(stored, RowSparseGradient)
            and stored.rows.size == 0
        ):
            gathers[id(found[0])] = (found[0], positions[id(leaf)])
    return gathers
