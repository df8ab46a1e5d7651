"""Threads on the tape (a reader of the tape can skip this room): each parameter's update lock,
taken in creation order, held by a backward pass's commit, ``zero_grad`` and every in-place
update; a read takes no lock unless an update wrote meanwhile (``writes_begun`` and
``writes_ended`` differ exactly while one writes)."""

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
WRITES_BEGUN: Final = operator.attrgetter("writes_begun")
WRITES_ENDED: Final = operator.attrgetter("writes_ended")
REVISION: Final = operator.attrgetter("revision")
_CREATION_RANK: Final = operator.attrgetter("creation_rank")

Write: TypeAlias = "Callable[[FloatArray], None]"  # one planned in-place write of the values


def consistent_read(nodes: Sequence[Node], compute: Callable[[], _T]) -> tuple[_T, tuple[int, ...]]:
    """``compute()``, which reads ``nodes``, run on one revision of each (again under their
    locks if an update was or started writing meanwhile), and the revisions it read (the tape's
    ``record`` reads the same way, calling :func:`locked_read` only when it must)."""
    ended = tuple(map(WRITES_ENDED, nodes))  # first: a write under way or begun later shows
    revisions = tuple(map(REVISION, nodes))
    result = compute()
    if tuple(map(WRITES_BEGUN, nodes)) == ended:
        return result, revisions
    return locked_read(nodes, compute)


def locked_read(nodes: Sequence[Node], compute: Callable[[], _T]) -> tuple[_T, tuple[int, ...]]:
    """``compute()`` and the revisions it read, holding every parameter's lock."""
    with parameter_locks(nodes):
        return compute(), tuple(map(REVISION, nodes))


def parameter_locks(nodes: Iterable[Node]) -> AbstractContextManager[object]:
    """Hold the lock of every parameter among ``nodes`` once, in creation order (not
    reentrant: code holding a lock takes no other)."""
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
    """Under every node's lock: ``planned()`` returns one write per node (None: left as it is)
    or raises, writing nothing; the writes run (:func:`write_parameters`); then ``read()``, whose
    result is returned. A node that is no parameter is a ``TapeError`` first."""
    for node in nodes:
        if node.kind != "parameter":
            raise not_a_parameter("an in-place update", node.kind)
    with parameter_locks(nodes):
        write_parameters(nodes, planned())
        return None if read is None else read()


def write_parameters(nodes: Sequence[Node], writes: Sequence[Write | None]) -> None:
    """Run one write per parameter, in order, under the caller's locks; when all return, each
    written node's revision goes up by one. The arrays stay writeable until the last write
    returns; a write that raises must leave every array as it found it (earlier ones undone).
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
    """The error of ``action`` on a constant or an operation result."""
    if kind == "constant":
        return TapeError("tape.constant-not-parameter", action=action)
    return TapeError("tape.result-not-parameter", action=action)
