"""The tape (course chapters 15-16): nodes, recorded operations, ``no_grad()`` and reverse mode.

An operation result records its parents, the value revision it read of each, its VJP's facts
and the VJP; a pass through one that read a revision since updated is ``tape.stale-value``.
"""

from __future__ import annotations

import enum
import itertools
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, Final, Literal, NamedTuple, Protocol, TypeAlias

import numpy as np

from llm_from_scratch.autograd.gradient import (
    Gradient,
    RowSparseGradient,
    add_gradients,
    first_non_finite,
)
from llm_from_scratch.autograd.threads import (
    REVISION,
    WRITES_BEGUN,
    WRITES_ENDED,
    locked_read,
    not_a_parameter,
    parameter_locks,
)
from llm_from_scratch.errors import AllocationError, NonFiniteError, TapeError
from llm_from_scratch.tensor.storage import FloatArray

NodeKind: TypeAlias = Literal["parameter", "constant", "operation"]
Vjp: TypeAlias = "Callable[[Any, FloatArray], Sequence[Gradient | None]]"


class GraphRetention(enum.Enum):
    """What a backward pass does with the recorded operations it walked."""

    RETAIN = "retain"
    """Keep every saved fact so that another backward can run (gradients add up again)."""
    RELEASE = "release"
    """Free every non-leaf node's saved facts after a successful pass."""


class Operation(NamedTuple):
    """What an operation result recorded: enough to run its VJP, nothing more."""

    name: str
    operand_names: tuple[str, ...]
    parents: tuple[Node, ...]
    parent_revisions: tuple[int, ...]
    saved: object
    vjp: Vjp


_creation_order = itertools.count()


class Node:
    """One value on the tape (users hold a ``TensorValue``); ``array`` is never handed out. A
    parameter also has an update ``lock`` and counts its writes (:mod:`.threads`)."""

    __slots__ = (
        "array",
        "clean_epoch",
        "creation_rank",
        "gradient",
        "kind",
        "lock",
        "operation",
        "released_name",
        "revision",
        "writes_begun",
        "writes_ended",
    )

    def __init__(self, array: FloatArray, kind: NodeKind, operation: Operation | None) -> None:
        array.flags.writeable = False
        self.array = array
        self.kind: NodeKind = kind
        self.operation = operation
        self.released_name: str | None = None
        self.revision = self.writes_begun = self.writes_ended = 0
        self.creation_rank = next(_creation_order)
        self.clean_epoch = _release_epoch[0]
        self.lock: threading.Lock | None = None
        self.gradient: Gradient | None = None
        if kind == "parameter":
            self.lock = threading.Lock()
            self.gradient = zero_gradient(array)

    @property
    def requires_grad(self) -> bool:
        return self.kind != "constant"

    def release(self) -> None:
        operation = self.operation
        if operation is not None:
            self.released_name = operation.name  # before the operation goes (see its readers)
            self.operation = None


def zero_gradient(array: FloatArray) -> Gradient:
    """A parameter's all-zero gradient: row-sparse with no rows for a table, else dense zeros."""
    if array.ndim == 2:
        return RowSparseGradient.empty((int(array.shape[0]), int(array.shape[1])), array.dtype)
    return np.zeros(array.shape, dtype=array.dtype)


_recording = threading.local()
_release_epoch = [0]  # counts release passes, so that clean nodes need not be walked again
_release_lock = threading.Lock()


@contextmanager
def no_grad() -> Iterator[None]:
    """Switch recording off for the calling thread: operations inside build constants.

    Example:
        >>> from llm_from_scratch.autograd import TensorValue
        >>> from llm_from_scratch.tensor import Tensor
        >>> w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
        >>> with no_grad():
        ...     y = w.mul(w)
        >>> y.kind
        'constant'
    """
    previous = getattr(_recording, "enabled", True)
    _recording.enabled = False
    try:
        yield
    finally:
        _recording.enabled = previous


def record(
    operation: str,
    operands: Sequence[tuple[str, Node]],
    compute: Callable[[], tuple[FloatArray, object]],
    vjp: Vjp,
) -> Node:
    """Wrap what ``compute`` returns (a new array, never a view of a parameter's values, and
    the VJP's facts) in an operation node, or a constant when nothing needs a gradient or under
    ``no_grad()``; an operand that reaches a released tape is ``tape.released-operand``."""
    recording, tracked, epoch = getattr(_recording, "enabled", True), False, _release_epoch[0]
    for name, node in operands:
        tracked = tracked or node.kind != "constant"
        clean = node.released_name is None and node.clean_epoch == epoch  # nothing to walk
        if recording and node.kind == "operation" and not clean and _reaches_released(node):
            raise TapeError("tape.released-operand", operation=operation, operand=name)
    names, nodes = zip(*operands, strict=True)
    ended = tuple(map(WRITES_ENDED, nodes))  # first: a write under way or begun later shows
    revisions = tuple(map(REVISION, nodes))
    value, saved = compute()
    if tuple(map(WRITES_BEGUN, nodes)) != ended:  # an update wrote meanwhile
        (value, saved), revisions = locked_read(nodes, compute)
    if not (recording and tracked):
        return Node(value, "constant", None)
    return Node(value, "operation", Operation(operation, names, nodes, revisions, saved, vjp))


def _reaches_released(start: Node) -> bool:
    epoch = _release_epoch[0]
    stack, walked, seen = [start], [], set()
    while stack:
        node = stack.pop()
        operation = node.operation  # read before the name: a release sets the name first
        if node.released_name is not None:
            return True
        if node.clean_epoch == epoch or id(node) in seen:
            continue
        seen.add(id(node))
        walked.append(node)
        if operation is not None:
            stack.extend(operation.parents)
    for node in walked:  # nothing below them is released as of this epoch: skip them next time
        node.clean_epoch = epoch
    return False


# Reverse mode ----------------------------------------------------------------------------------

Step: TypeAlias = "tuple[Node, Operation]"
Reads: TypeAlias = "list[tuple[Operation, str, Node, int]]"  # operand name, parameter, revision
Finish: TypeAlias = "Callable[[list[tuple[Node, Gradient]]], list[tuple[Node, Gradient]]]"
_KIND: Final = operator.attrgetter("kind")


def backward(
    root: Node, seed: FloatArray, retention: GraphRetention, consumer: PassConsumer | None = None
) -> None:
    """Propagate ``seed`` (checked by the caller) from ``root`` without a lock, then, holding
    every involved parameter's lock, check the revisions again and add each parameter's pass
    gradient to its store: all or nothing, and concurrent passes sum exactly. A ``consumer``
    (an optimizer's fused step) takes part in the pass.

    Raises:
        TapeError: ``tape.not-recorded``, ``tape.released``, ``tape.stale-value``.
        NonFiniteError: ``gradient.non-finite``; AllocationError: ``output.allocation``.
    """
    operation = root.operation
    if root.kind == "constant":
        raise TapeError("tape.not-recorded")
    if operation is not None and "operation" not in map(_KIND, operation.parents):
        steps = [(root, operation)]  # one operation of leaves (a lookup): nothing to order
    else:
        steps = _topological_order(root)
    reads: Reads = []
    for _, step in steps:
        for name, parent, revision in zip(
            step.operand_names, step.parents, step.parent_revisions, strict=True
        ):
            if parent.kind == "parameter":
                reads.append((step, name, parent, revision))
    _raise_if_stale(reads)
    deferred: dict[int, FloatArray | None] = {}
    locked: list[Node] = []
    finish: Finish | None = None
    if consumer is not None:  # the one place a consumer joins: its leaves, deferrals, commit
        deferred, locked = consumer.deferred(steps), [*consumer.leaves]
        finish = partial(consumer.commit, deferred=deferred)
    try:
        reached = _propagate(root, seed, steps, deferred)
    except NonFiniteError:
        _raise_if_stale(reads)  # values changed by a concurrent update are not the cause
        raise
    except MemoryError as error:
        raise output_allocation_error("backward", root.array.size) from error
    _commit(root, reads, reached, locked, finish)
    if retention is GraphRetention.RELEASE:
        _release(steps)


def _release(steps: Sequence[Step]) -> None:
    for node, _ in steps:
        node.release()
    with _release_lock:
        _release_epoch[0] += 1


def _topological_order(root: Node) -> list[Step]:
    """The operation nodes reachable from ``root``, each before its parents and read once (a
    concurrent release cannot change the pass); a released one is ``tape.released``."""
    order: list[Step] = []
    visited: set[int] = set()
    stack: list[tuple[Node, Operation | None]] = [(root, None)]
    while stack:
        node, expanded = stack.pop()
        if expanded is not None:
            order.append((node, expanded))
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        operation = node.operation  # read before the name: a release sets the name first
        if operation is None:
            if node.released_name is not None:
                raise TapeError("tape.released", operation=node.released_name)
            continue
        stack.append((node, operation))
        for parent in operation.parents:
            stack.append((parent, None))
    order.reverse()
    return order


def _propagate(
    root: Node, seed: FloatArray, steps: Sequence[Step], deferred: dict[int, FloatArray | None]
) -> list[tuple[Node, Gradient]]:
    """Run each VJP in order and return every leaf's pass gradient, each gradient checked for
    NaN and infinities as it is handed on (by the VJP when its record says
    ``vjp_checks_finiteness``); a node in ``deferred`` gets its upstream recorded there."""
    pending: dict[int, tuple[Node, Gradient]] = {id(root): (root, seed)}
    for node, operation in steps:
        entry = pending.pop(id(node), None)
        if entry is None:
            continue
        upstream = entry[1]
        if isinstance(upstream, RowSparseGradient):
            upstream = upstream.to_dense()
        if id(node) in deferred:
            deferred[id(node)] = upstream
            continue
        checked = getattr(operation.saved, "vjp_checks_finiteness", False)
        gradients = operation.vjp(operation.saved, upstream)
        for parent, gradient in zip(operation.parents, gradients, strict=True):
            if gradient is None or parent.kind == "constant":
                continue
            if not checked:
                raise_if_non_finite(operation.name, gradient)
            earlier = pending.get(id(parent))
            if earlier is not None:
                gradient = add_gradients(earlier[1], gradient)
                raise_if_non_finite(operation.name, gradient)  # every upstream is finite
            pending[id(parent)] = (parent, gradient)
    return list(pending.values())


def _commit(
    root: Node,
    reads: Reads,
    reached: Sequence[tuple[Node, Gradient]],
    locked: list[Node],
    finish: Finish | None,
) -> None:
    """Under the locks of ``locked`` and every parameter read or reached: check the revisions,
    add each pass gradient to its store and check it, let ``finish`` (a consumer's commit) see
    the sums, and store what it returns."""
    for _, _, parameter, _ in reads:
        locked.append(parameter)
    for node, _ in reached:
        locked.append(node)
    only = locked[0].lock if len(set(map(id, locked))) == 1 else None  # a lookup's one table
    with parameter_locks(locked) if only is None else only:
        _raise_if_stale(reads)
        updates = []
        try:
            for node, gradient in reached:
                stored = node.gradient
                if stored is None:  # not a parameter
                    continue
                total = add_gradients(stored, gradient)
                if total is not gradient:  # adding to an all-zero store returns the checked pass
                    raise_if_non_finite("accumulated parameter", total)
                updates.append((node, total))
            if finish is not None:
                updates = finish(updates)
        except MemoryError as error:
            raise output_allocation_error("backward", root.array.size) from error
        for node, gradient in updates:
            node.gradient = gradient


def _raise_if_stale(reads: Reads) -> None:
    for operation, operand, parameter, recorded in reads:
        if parameter.revision != recorded:
            raise TapeError(
                "tape.stale-value",
                operation=operation.name,
                operand=operand,
                recorded_revision=recorded,
                current_revision=parameter.revision,
            )


def raise_if_non_finite(operation: str | None, gradient: Gradient) -> None:
    """``gradient.non-finite`` at the first NaN or infinity of what ``operation`` handed on, or
    ``seed.non-finite`` in a pass's seed (``operation`` None)."""
    found = first_non_finite(gradient)
    if found is None:
        return
    if operation is None:
        raise NonFiniteError("seed.non-finite", value=found[1], index=found[0])
    raise NonFiniteError("gradient.non-finite", operation=operation, value=found[1], index=found[0])


def output_allocation_error(operation: str, elements: int) -> AllocationError:
    """``output.allocation``: the output (or gradient) of ``operation`` cannot be allocated."""
    return AllocationError("output.allocation", elements=int(elements), operation=operation)


def reset_gradient(node: Node) -> None:
    """Set a parameter's stored gradient to zero, atomically with respect to backward commits."""
    if node.kind != "parameter":
        raise not_a_parameter("zero_grad", node.kind)
    zero = zero_gradient(node.array)
    with parameter_locks((node,)):  # one lock, taken as every commit takes it
        node.gradient = zero


class PassConsumer(Protocol):
    """Code that takes part in a backward pass (:mod:`llm_from_scratch.optim.fused`):
    its ``leaves`` are locked with the pass's; the pass records the upstream of each node (by
    ``id``) ``deferred(steps)`` names instead of running its VJP; holding the locks,
    ``commit(updates, deferred)`` may write the parameters (or raise, changing nothing) and
    returns the gradients to store."""

    leaves: Sequence[Node]

    def deferred(self, steps: Sequence[Step]) -> dict[int, FloatArray | None]: ...

    def commit(
        self, updates: list[tuple[Node, Gradient]], deferred: dict[int, FloatArray | None]
    ) -> list[tuple[Node, Gradient]]: ...
