"""Threads on the tape: consistent reads, locked commits and in-place updates of parameters.

A reader of the tape can skip this room; what it guarantees:

- Each parameter has an update lock (``Node.lock``). Holding it, a backward pass commits its
  gradients, ``zero_grad`` resets, and an update (an optimizer step, a checkpoint load, a
  ``max_norm`` lookup) plans and writes the values and bumps the value revision. Several
  parameters' locks are always taken in their creation order (:func:`parameter_locks`), so two
  threads never wait for each other in a cycle.
- A forward takes no lock: :func:`consistent_read` reads its parameter operands optimistically
  and runs again under their locks only if an update started meanwhile, so every value and
  recorded revision belong to one revision of each parameter. ``writes_begun`` counts the
  updates that started writing a parameter and ``writes_ended`` those that stopped; the two
  differ exactly while an update is writing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, ExitStack
from threading import Lock
from typing import Final, Protocol, TypeAlias, TypeVar

from llm_from_scratch.errors import TapeError
from llm_from_scratch.tensor.storage import FloatArray


class Node(Protocol):
    """What this room reads of a tape node (:class:`llm_from_scratch.autograd.tape.Node`)."""

    array: FloatArray
    lock: Lock | None
    creation_rank: int
    revision: int
    writes_begun: int
    writes_ended: int

    @property
    def kind(self) -> str: ...


_T = TypeVar("_T")
_WRITES_BEGUN: Final = operator.attrgetter("writes_begun")
_WRITES_ENDED: Final = operator.attrgetter("writes_ended")
_REVISION: Final = operator.attrgetter("revision")
_CREATION_RANK: Final = operator.attrgetter("creation_rank")

Write: TypeAlias = "Callable[[FloatArray], None]"
"""One planned in-place write of a parameter's values."""


def consistent_read(nodes: Sequence[Node], compute: Callable[[], _T]) -> tuple[_T, tuple[int, ...]]:
    """Run ``compute``, which reads the values of ``nodes``, on one revision of each of them.

    Returns ``compute()`` and the revision of each node it read. ``compute`` first runs without
    a lock; if an in-place update of a parameter among ``nodes`` was writing when it started, or
    started before it finished, it runs once more holding those parameters' update locks.
    """
    ended = tuple(map(_WRITES_ENDED, nodes))  # before the revisions: see the docstring
    revisions = tuple(map(_REVISION, nodes))
    result = compute()
    if tuple(map(_WRITES_BEGUN, nodes)) == ended:
        return result, revisions
    with parameter_locks(nodes):
        return compute(), tuple(map(_REVISION, nodes))


def parameter_locks(nodes: Iterable[Node]) -> AbstractContextManager[object]:
    """A ``with`` block that holds the update lock of every parameter among ``nodes``, each
    once, taken in the parameters' creation order. Not reentrant: code holding a lock takes no
    other."""
    parameters = {}
    for node in nodes:
        if node.lock is not None:
            parameters[id(node)] = node
    if len(parameters) == 1:
        (only,) = parameters.values()
        return only.lock  # type: ignore[return-value]
    stack = ExitStack()
    try:
        for node in sorted(parameters.values(), key=_CREATION_RANK):
            stack.enter_context(node.lock)  # type: ignore[arg-type]
    except BaseException:
        stack.close()  # the locks taken so far
        raise
    return stack


def update_parameters(
    nodes: Sequence[Node],
    planned: Callable[[], Sequence[Write | None]],
    read: Callable[[], _T] | None = None,
) -> _T | None:
    """Plan and write in-place updates of parameters' values as one atomic step, then ``read()``
    (a forward of these parameters) before the locks are released; return what it returns.

    Holding every node's update lock, ``planned()`` reads values and gradients and returns one
    write per node (or None: that node is left as it is); it may raise, and then nothing is
    written. The writes run as :func:`write_parameters` runs them. No backward commit,
    ``zero_grad`` or other update of these parameters runs in between.

    Raises:
        TapeError: a node is a constant or an operation result (checked first).
    """
    for node in nodes:
        if node.kind != "parameter":
            raise not_a_parameter("an in-place update", node.kind)
    with parameter_locks(nodes):
        write_parameters(nodes, planned())
        return None if read is None else read()


def write_parameters(nodes: Sequence[Node], writes: Sequence[Write | None]) -> None:
    """Run one write per parameter on its values, in order; the caller holds their locks.

    Every written node's array is writeable from the first write until the last one returns, so
    a write may also use the arrays handed to the writes before it. When all return, each
    written node's value revision goes up by one. A write that raises must leave every array as
    it found it, and the writes before it must have been undone by then: no revision changes.
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


def not_a_parameter(action: str, kind: str) -> TapeError:
    """The error of ``action`` on a node of ``kind`` that is no parameter: a constant (the
    message names ``freeze=False``) or an operation result."""
    if kind == "constant":
        return TapeError("tape.constant-not-parameter", action=action)
    return TapeError("tape.result-not-parameter", action=action)
