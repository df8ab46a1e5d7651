"""The tape: nodes, operation records, ``no_grad()``, graph release and the backward pass.

A node is a parameter leaf (it stores a gradient), a constant leaf, or an operation result that
records its operation: the parents, each parent's value revision at recording time, a small
frozen record of the facts its VJP needs, and the VJP itself (which sits next to its forward in
:mod:`~llm_from_scratch.autograd.ops` or :mod:`~llm_from_scratch.autograd.gather`).

Only a parameter's values ever change, and only by an in-place update
(:func:`update_parameters_in_place`, used by optimizers), which bumps the parameter's value
revision. No other node shares memory with a parameter: :func:`record` copies an operation's
value when it would view a parameter's values (``reshape`` of a parameter), and leaves built
from a ``Tensor`` copy it. So a constant or an operation result never changes after it is
built, whether it was built under ``no_grad()`` or not, and a backward pass through an
operation that read a parameter at an older revision raises ``StaleValueError``.

Threads: each parameter has an update lock. Holding it, a backward pass commits (reads the
stored gradient, adds its pass gradient, checks finiteness, stores), ``zero_grad`` resets, and
an update plans and writes the values and bumps the revision; several parameters' locks are
always taken in their creation order. Computing a forward value or a backward pass takes no
lock: a forward reads its parameter operands optimistically and runs again under their locks
only if an update started meanwhile (:func:`consistent_read`), so every value and recorded
revision belong to one revision of each parameter.
"""

from __future__ import annotations

import enum
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

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

_T = TypeVar("_T")

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


_creation_order = itertools.count()


class Node:
    """One value on the tape. Package-private: users hold a ``TensorValue``.

    ``array`` is never handed out (callers get read-only views of it). A parameter also has an
    update ``lock``; ``writes_begun`` counts the in-place updates that started writing and
    ``writes_ended`` those that stopped, so the two differ exactly while an update is writing;
    ``revision`` counts the updates that succeeded (one that raised put its values back).
    """

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
        self.revision = 0
        self.writes_begun = 0
        self.writes_ended = 0
        self.creation_rank = next(_creation_order)
        self.lock = threading.Lock() if kind == "parameter" else None
        self.clean_epoch = _release_state.epoch
        self.gradient: Gradient | None = zero_gradient(array) if kind == "parameter" else None

    @property
    def requires_grad(self) -> bool:
        return self.kind != "constant"

    def release(self) -> None:
        operation = self.operation
        if operation is not None:
            self.released_name = operation.name  # before the operation goes (see its readers)
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
        self._lock = threading.Lock()

    def advance(self) -> None:
        """Start a new epoch, after a pass released its nodes (no increment is lost)."""
        with self._lock:
            self.epoch += 1


_release_state = _ReleaseState()
_recording = threading.local()


def is_recording() -> bool:
    """False inside ``no_grad()``."""
    return bool(getattr(_recording, "enabled", True))


@contextmanager
def no_grad() -> Iterator[None]:
    """Switch recording off for the calling thread: operations inside build untracked
    constant values (other threads keep recording).

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
    compute: Callable[[], FloatArray],
    saved: object,
    vjp: Vjp,
) -> Node:
    """Compute an operation's value and wrap it: an operation node, or a constant when nothing
    needs a gradient.

    ``compute`` reads the operands' values; it runs as :func:`consistent_read` says, and the
    operation records the revisions it read. A value that would share memory with a parameter's
    values is copied, so that it never changes when the parameter does.

    Raises:
        OutputAllocationError: that copy cannot be allocated.
    """
    return record_with_saved(operation, operands, lambda: (compute(), saved), vjp)


def record_with_saved(
    operation: str,
    operands: Sequence[tuple[str, Node]],
    compute: Callable[[], tuple[FloatArray, object]],
    vjp: Vjp,
) -> Node:
    """:func:`record` for an operation whose VJP needs facts its forward finds (such as which
    row produced a maximum): ``compute`` returns the value and the saved record together.
    """
    nodes = tuple(node for _, node in operands)

    def computed() -> tuple[FloatArray, object]:
        value, saved = compute()
        return _not_viewing_a_parameter(operation, value, nodes), saved

    (value, saved), revisions = consistent_read(nodes, computed)
    if not is_recording() or not any(node.requires_grad for node in nodes):
        return Node(value, "constant", None)
    return Node(
        value,
        "operation",
        Operation(
            name=operation,
            operand_names=tuple(name for name, _ in operands),
            parents=nodes,
            parent_revisions=revisions,
            saved=saved,
            vjp=vjp,
        ),
    )


def _not_viewing_a_parameter(
    operation: str, value: FloatArray, operands: Sequence[Node]
) -> FloatArray:
    for node in operands:
        if node.kind == "parameter" and np.may_share_memory(value, node.array):
            try:
                return np.array(value, copy=True)
            except MemoryError as error:
                raise OutputAllocationError(operation, int(value.size)) from error
    return value


def consistent_read(nodes: Sequence[Node], compute: Callable[[], _T]) -> tuple[_T, tuple[int, ...]]:
    """Run ``compute``, which reads the values of ``nodes``, on one revision of each of them.

    Returns ``compute()`` and the revision of each node it read. ``compute`` first runs without
    a lock; if an in-place update of a parameter among ``nodes`` was writing when it started, or
    started before it finished, it runs once more holding those parameters' update locks (no
    update can start then).
    """
    ended = tuple(node.writes_ended for node in nodes)  # before the revisions: see Node
    revisions = tuple(node.revision for node in nodes)
    result = compute()
    if all(node.writes_begun == seen for node, seen in zip(nodes, ended, strict=True)):
        return result, revisions
    with ParameterLocks(nodes):
        return compute(), tuple(node.revision for node in nodes)


class ParameterLocks:
    """Hold the update lock of every parameter among ``nodes`` for a ``with`` block.

    Each lock is taken once, in the parameters' creation order, so two threads that lock
    overlapping sets never wait for each other in a cycle. Not reentrant: code holding a lock
    takes no other.
    """

    __slots__ = ("_locks",)

    def __init__(self, nodes: Iterable[Node]) -> None:
        parameters = {id(node): node for node in nodes if node.lock is not None}.values()
        ordered = sorted(parameters, key=_creation_rank) if len(parameters) > 1 else parameters
        self._locks = [node.lock for node in ordered if node.lock is not None]

    def __enter__(self) -> None:
        taken: list[threading.Lock] = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise

    def __exit__(self, *_: object) -> None:
        for lock in reversed(self._locks):
            lock.release()


def _creation_rank(node: Node) -> int:
    return node.creation_rank


def _reaches_released(start: Node) -> bool:
    epoch = _release_state.epoch
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


@dataclass(frozen=True, slots=True)
class _ParameterRead:
    """One recorded operand that is a parameter, and the revision the operation read."""

    operation: str
    operand: str
    parameter: Node
    recorded: int


def backward(root: Node, seed: FloatArray, retention: GraphRetention) -> None:
    """Propagate ``seed`` from ``root`` and add each parameter's pass gradient to its store.

    Transactional: every check runs and every new gradient is computed before any is stored.
    The pass is computed without a lock; the commit then holds the update locks of every
    parameter involved, checks the recorded revisions again, and adds, checks and stores all
    gradients, so concurrent passes into shared parameters sum exactly and an update that ran
    during the pass makes it raise ``StaleValueError`` with nothing stored.
    ``seed`` has been validated (shape, dtype, finiteness) by the caller.
    """
    steps, reads = _recorded(root)
    reached = _reached_parameters(_propagated(root, seed, steps, reads))
    with _committing(reads, [node for node, _ in reached]):
        with _allocating(root):
            updates = _accumulated(reached)
        _store(updates)
    _finish_pass(steps, retention)


_Step: TypeAlias = "tuple[Node, Operation]"


def _topological_order(root: Node) -> list[_Step]:
    """Operation nodes reachable from ``root`` with their operations, every node before its
    parents. The operations are taken once, so a concurrent release cannot change the pass."""
    order: list[_Step] = []
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
                raise GraphReleasedError(node.released_name)
            continue
        stack.append((node, operation))
        stack.extend((parent, None) for parent in operation.parents)
    order.reverse()
    return order


def _parameter_reads(steps: Sequence[_Step]) -> list[_ParameterRead]:
    """Every recorded parameter operand, in the order the revision check reports them (only a
    parameter's revision ever changes)."""
    return [
        _ParameterRead(operation.name, name, parent, recorded)
        for _, operation in steps
        for name, parent, recorded in zip(
            operation.operand_names, operation.parents, operation.parent_revisions, strict=True
        )
        if parent.kind == "parameter"
    ]


def _recorded(root: Node) -> tuple[list[_Step], list[_ParameterRead]]:
    """The operations a pass from ``root`` walks and their parameter reads, checked fresh."""
    if not root.requires_grad:
        raise NotRecordedError()
    steps = _topological_order(root)
    reads = _parameter_reads(steps)
    _raise_if_stale(reads)
    return steps, reads


def _propagated(
    root: Node,
    seed: FloatArray,
    steps: Sequence[_Step],
    reads: Sequence[_ParameterRead],
    deferred: dict[int, FloatArray | None] | None = None,
) -> list[tuple[Node, Gradient]]:
    """:func:`_propagate`, blaming a concurrent update (not the values) for a non-finite
    gradient when one ran meanwhile."""
    try:
        with _allocating(root):
            return _propagate(root, seed, steps, deferred)
    except NonFiniteGradientError:
        _raise_if_stale(reads)  # values changed by a concurrent update are not the cause
        raise


def _reached_parameters(
    pass_gradients: Sequence[tuple[Node, Gradient]],
) -> list[tuple[Node, Gradient]]:
    return [(node, gradient) for node, gradient in pass_gradients if node.kind == "parameter"]


@contextmanager
def _allocating(root: Node) -> Iterator[None]:
    """Report running out of memory during a pass as the pass's ``OutputAllocationError``."""
    try:
        yield
    except MemoryError as error:
        raise OutputAllocationError("backward", int(root.array.size)) from error


@contextmanager
def _committing(reads: Sequence[_ParameterRead], nodes: Iterable[Node]) -> Iterator[None]:
    """Hold the update locks of every parameter the graph read and of ``nodes``, and check the
    recorded revisions again before the block stores anything."""
    with ParameterLocks([*(read.parameter for read in reads), *nodes]):
        _raise_if_stale(reads)
        yield


def _store(updates: Iterable[tuple[Node, Gradient]]) -> None:
    """Store each parameter's new gradient (the caller holds the locks)."""
    for node, gradient in updates:
        node.gradient = gradient


def _finish_pass(steps: Sequence[_Step], retention: GraphRetention) -> None:
    """Release the walked operations after a successful pass, when asked to."""
    if retention is GraphRetention.RELEASE:
        for node, _ in steps:
            node.release()
        _release_state.advance()


def _raise_if_stale(reads: Sequence[_ParameterRead]) -> None:
    for read in reads:
        if read.parameter.revision != read.recorded:
            raise StaleValueError(
                read.operation, read.operand, read.recorded, read.parameter.revision
            )


def _propagate(
    root: Node,
    seed: FloatArray,
    steps: Sequence[_Step],
    deferred: dict[int, FloatArray | None] | None = None,
) -> list[tuple[Node, Gradient]]:
    """Run each VJP in order; a node listed in ``deferred`` gets its upstream recorded there
    instead of running its VJP."""
    pending: dict[int, tuple[Node, Gradient]] = {id(root): (root, seed)}
    for node, operation in steps:
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
    return list(pending.values())


def _accumulated(
    pass_gradients: Sequence[tuple[Node, Gradient]],
) -> list[tuple[Node, Gradient]]:
    """Each parameter's stored gradient plus its pass gradient (the caller holds the locks)."""
    updates = []
    for node, gradient in pass_gradients:
        if node.gradient is None:
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


def reset_gradient(node: Node) -> None:
    """Set a parameter's stored gradient to zero, atomically with respect to backward commits."""
    if node.kind != "parameter":
        raise NotAParameterError("zero_grad", node.kind)
    zero = zero_gradient(node.array)
    with ParameterLocks((node,)):
        node.gradient = zero


Write: TypeAlias = "Callable[[FloatArray], None]"
"""One planned in-place write of a parameter's values."""


def update_parameters_in_place(
    nodes: Sequence[Node], planned: Callable[[], Sequence[Write | None]]
) -> None:
    """Plan and write in-place updates of parameters' values as one atomic step.

    Holding every node's update lock, ``planned()`` reads values and gradients and returns one
    write per node (or None: that node is left as it is); it may raise, and then nothing is
    written. The writes then run as :func:`write_parameters` runs them, so that operations
    recorded before the change refuse to run backward. No backward commit, ``zero_grad`` or
    other update of these parameters runs in between.

    Raises:
        NotAParameterError: a node is a constant or an operation result (checked first).
    """
    update_parameters_then_read(nodes, planned, _nothing)


def update_parameters_then_read(
    nodes: Sequence[Node], planned: Callable[[], Sequence[Write | None]], read: Callable[[], _T]
) -> _T:
    """:func:`update_parameters_in_place`, then ``read()`` before the locks are released, so
    that what ``read`` computes sees the written values and no other update; returns its result.

    ``read`` takes no update lock itself (a forward, which :func:`consistent_read` lets run
    without one once no write is under way).
    """
    for node in nodes:
        if node.kind != "parameter":
            raise NotAParameterError("an in-place update", node.kind)
    with ParameterLocks(nodes):
        write_parameters(nodes, planned())
        return read()


def _nothing() -> None:
    return None


def write_parameters(nodes: Sequence[Node], writes: Sequence[Write | None]) -> None:
    """Run one write per parameter on its values, in order; the caller holds their locks.

    A node whose write is None is left as it is. Every written node's array is writeable from
    the first write until the last one returns, so a write may also use the arrays handed to
    the writes before it. When all return, each written node's value revision goes up by one.
    A write that raises must leave every array as it found it, and the writes before it must
    have been undone by then: no revision changes.
    """
    chosen = [(node, write) for node, write in zip(nodes, writes, strict=True) if write is not None]
    for node, _ in chosen:
        node.writes_begun += 1
        node.array.flags.writeable = True
    try:
        for node, write in chosen:
            write(node.array)
        for node, _ in chosen:
            node.revision += 1
    finally:
        for node, _ in chosen:
            node.array.flags.writeable = False
            node.writes_ended += 1


# Deferred table VJPs (package-internal, for optimizers that fuse their update) -----------------

DeferredVjp: TypeAlias = "tuple[object, FloatArray]"
"""A deferred operation's saved facts and its upstream gradient."""
PassGradient: TypeAlias = "Gradient | DeferredVjp | None"
Finish: TypeAlias = "Callable[[list[PassGradient]], Sequence[Callable[[FloatArray], None]]]"


def backward_deferring_table_vjps(
    root: Node,
    seed: FloatArray,
    retention: GraphRetention,
    leaves: Sequence[Node],
    deferrable: Callable[[object], bool],
    finish: Finish,
) -> None:
    """:func:`backward` fused with an in-place update of the parameters ``leaves``, whose
    gradients the pass hands to ``finish`` instead of storing them.

    A leaf reached only through one operation, whose saved facts ``deferrable`` accepts (a row
    gather, a bag) and which has no other parent, and whose stored gradient is empty, never
    gets its gradient summed: that operation's VJP does not run. The pass is computed without
    a lock; then, holding the update locks of every parameter the graph recorded or the pass reached
    and of every leaf, the recorded revisions are checked again and ``finish`` gets, for each
    of ``leaves`` in order, the operation's saved facts and upstream (deferred), or the gradient
    the pass would store (stored plus pass), or None (not reached). It checks everything and
    returns one write per leaf, which run as :func:`write_parameters` runs them. Then every
    leaf's gradient is reset to zero and every other parameter's gradient is stored, still
    under the locks. ``finish`` and the writes may raise, having changed nothing.
    """
    steps, reads = _recorded(root)
    uses = _deferrable_uses(steps, leaves, deferrable)
    deferred: dict[int, FloatArray | None] = dict.fromkeys(uses)
    reached = _reached_parameters(_propagated(root, seed, steps, reads, deferred))
    with _allocating(root):
        zeros = [zero_gradient(leaf.array) for leaf in leaves]
    with _committing(reads, [*(node for node, _ in reached), *leaves]):
        with _allocating(root):
            given, others = _handed_over(reached, leaves, uses, deferred)
        write_parameters(leaves, finish(given))
        _store([*zip(leaves, zeros, strict=True), *others])
    _finish_pass(steps, retention)


_Uses: TypeAlias = "dict[int, tuple[Node, Operation, int]]"


def _deferrable_uses(
    steps: Sequence[_Step], leaves: Sequence[Node], deferrable: Callable[[object], bool]
) -> _Uses:
    """``id(node) -> (node, its operation, leaf position)`` for each leaf whose only recorded
    use in ``steps`` is one ``deferrable`` operation with no other parent, and whose stored
    gradient is empty (read without the lock: :func:`_handed_over` looks again)."""
    positions = {id(leaf): position for position, leaf in enumerate(leaves)}
    uses: dict[int, list[_Step]] = {}
    for node, operation in steps:
        for parent in operation.parents:
            if id(parent) in positions:
                uses.setdefault(id(parent), []).append((node, operation))
    deferred: _Uses = {}
    for leaf in leaves:
        found = uses.get(id(leaf), [])
        if len(found) != 1 or not _holds_no_rows(leaf):
            continue
        node, operation = found[0]
        if len(operation.parents) == 1 and deferrable(operation.saved):
            deferred[id(node)] = (node, operation, positions[id(leaf)])
    return deferred


def _holds_no_rows(leaf: Node) -> bool:
    stored = leaf.gradient
    return isinstance(stored, RowSparseGradient) and stored.rows.size == 0


def _handed_over(
    reached: Sequence[tuple[Node, Gradient]],
    leaves: Sequence[Node],
    uses: _Uses,
    deferred: dict[int, FloatArray | None],
) -> tuple[list[PassGradient], list[tuple[Node, Gradient]]]:
    """What ``finish`` gets for each leaf, and the gradients to store for the other parameters
    (the caller holds the locks). A deferred leaf whose store a concurrent pass filled since
    the pass began gets the operation's VJP now, added to its store like any other gradient."""
    late: list[tuple[Node, Gradient]] = []
    given: list[PassGradient] = [None] * len(leaves)
    for node_id, (_, operation, position) in uses.items():
        upstream = deferred[node_id]
        if upstream is None:
            continue
        if _holds_no_rows(leaves[position]):
            given[position] = (operation.saved, upstream)
            continue
        _raise_if_non_finite(operation.name, upstream)  # a root operation's seed is not checked yet
        (gradient,) = operation.vjp(operation.saved, upstream)
        assert gradient is not None  # a deferred operation's only parent is the table
        _raise_if_non_finite(operation.name, gradient)
        late.append((leaves[position], gradient))
    positions = {id(leaf): position for position, leaf in enumerate(leaves)}
    others: list[tuple[Node, Gradient]] = []
    for node, gradient in _accumulated([*reached, *late]):
        at = positions.get(id(node))
        if at is None:
            others.append((node, gradient))
        else:
            given[at] = gradient
    return given, others
