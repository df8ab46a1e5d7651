"""What every optimizer shares: named parameters, state arrays, a step count, and steps that
change everything or nothing.

A step holds every parameter's update lock while it reads the gradients, plans and writes. With
NumPy it plans every new value and state without writing, refuses the step if any is not
finite, then writes them all (bumping the values' revisions) and counts the step. A large
row-sparse update (a compiled kernel) writes at once, copying the old rows into an undo log
(``[k, 1 + states, d]``, kept between steps), and puts them back before it raises (one pass reads
each row once: ``docs/performance.md``). The optimizer's own lock orders its steps, state dicts
and state files.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias

import numpy as np

from llm_from_scratch.autograd import GraphRetention, RowSparseGradient, TensorValue
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.errors import NonFiniteError, OptionError
from llm_from_scratch.nn.init import FREEZE_FALSE, FROZEN_DETAIL, NamedParameter, NamedParameters
from llm_from_scratch.nn.tables import FrozenTable
from llm_from_scratch.optim.fused import DeferredRowGradient, StepGradient, fused_backward_step
from llm_from_scratch.optim.rows import RowGradient, RowGroups
from llm_from_scratch.optim.state import (
    STEP_KEY,
    STEP_LIMIT,
    STEP_LIMIT_REQUIREMENT,
    ExpectedArray,
    checked_state,
    expected_arrays,
    exported,
    state_error,
    state_key,
    viewed,
)
from llm_from_scratch.optim.validation import checked_learning_rate
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, Tensor

Write: TypeAlias = Callable[[FloatArray], None]
"""An in-place update of one parameter's writeable values (and of its state arrays)."""
States: TypeAlias = Mapping[str, FloatArray]
"""One parameter's state arrays by state name (all of them, or the listed rows)."""
NewArrays: TypeAlias = list[tuple[str, FloatArray]]
"""Planned new arrays of one parameter: ``("value", values)`` first, then each state by name."""


class Optimizer:
    """Base class of the optimizers: subclasses set :attr:`state_names` and compute new values
    and states in :meth:`updated` (dense), :meth:`updated_rows` (rows) and :meth:`row_kernel`.

    Args:
        kind: the optimizer's name in error messages (``SGD``, ``Adam``, ...).
        parameters: named parameters or parameter leaves; a leaf is named by its position.
    """

    state_names: tuple[str, ...] = ()
    _learning_rate: float  # set and checked by the subclass before this class's __init__

    lr = PyTorchName("learning_rate (settable between steps)")
    param_groups = PyTorchName("learning_rate (settable), hyperparameters and parameter_names")
    state = PyTorchName("state_dict()")

    def __init__(self, kind: str, parameters: Iterable[NamedParameter | TensorValue]) -> None:
        self._kind = kind
        self._names, self._leaves = named_leaves(kind, parameters)
        self._states = tuple(self.initial_state(leaf.numpy()) for leaf in self._leaves)
        self._steps = 0
        self._undo_logs: dict[int, FloatArray] = {}
        self._lock = threading.Lock()

    def __reduce__(self) -> NoReturn:
        """Refuse ``pickle`` and ``copy`` (``TypeError``): an optimizer updates the very leaves
        it was built on; save :meth:`state_dict` (or ``save_state``) and load it into a new one."""
        raise TypeError(
            f"cannot pickle or copy an optimizer ({self._kind}): it updates the leaves it was "
            "built on; save state_dict() (or save_state) and load it into a new optimizer"
        )

    def __repr__(self) -> str:
        """The kind, the parameters' names, every setting as the constructor takes it and the
        step count.

        Example:
            >>> from llm_from_scratch.nn import Embedding
            >>> from llm_from_scratch.optim import Adam
            >>> Adam(Embedding(4, 2).parameters(), learning_rate=1e-3)
            Adam(parameters=['token_embedding.weight'], learning_rate=0.001, \
betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0, step_count=0)
        """
        settings: dict[str, object] = {"parameters": list(self._names)}
        for key, value in self.hyperparameters.items():
            name, _, index = key.partition("[")  # betas[0] and betas[1] make betas
            settings[name] = (*settings.get(name, ()), value) if index else value  # type: ignore[misc]
        settings["step_count"] = self._steps
        return f"{self._kind}({', '.join(f'{k}={v!r}' for k, v in settings.items())})"

    @property
    def kind(self) -> str:
        """The optimizer's name: ``SGD``, ``Adagrad``, ``Adam`` or ``AdamW``."""
        return self._kind

    @property
    def learning_rate(self) -> float:
        """The step size of the next step."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: float) -> None:
        """Set the step size of the steps that follow, checked as the constructor checks it; it
        takes effect between two steps, never during one.

        Raises:
            OptionError: as the constructor; the step size is then unchanged.

        Example:
            >>> from llm_from_scratch.nn import Embedding
            >>> from llm_from_scratch.optim import SGD
            >>> optimizer = SGD(Embedding(4, 2).parameters(), learning_rate=0.025)
            >>> optimizer.learning_rate = 0.0125
            >>> optimizer.learning_rate, optimizer.hyperparameters
            (0.0125, {'learning_rate': 0.0125})
        """
        checked = checked_learning_rate(learning_rate, optimizer=self._kind)
        with self._lock:
            self._learning_rate = checked

    @property
    def hyperparameters(self) -> dict[str, float]:
        """The settings as the optimizer uses them (each a float), by argument name; ``betas``
        as ``betas[0]`` and ``betas[1]`` (``decoupled`` is in :attr:`kind`)."""
        return {}

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The state-dict name of each parameter, in order."""
        return self._names

    @property
    def step_count(self) -> int:
        """How many steps changed the parameters, at most ``2**63 - 1`` (a state dict's int64)."""
        return self._steps

    def _check_step_count(self) -> None:
        if self._steps >= STEP_LIMIT:
            raise state_error(self._kind, STEP_KEY, STEP_LIMIT_REQUIREMENT, self._steps)

    def step(self) -> None:
        """Apply one update to every parameter from its stored gradient, atomic to other threads;
        if any new value or state would not be finite, change nothing.

        Raises:
            FormatError: ``optimizer.state``, the step count is already ``2**63 - 1``.
            NonFiniteError: ``optimizer.non-finite-step``, the first parameter, state and flat
                index that would not be finite; nothing changed.
        """
        stored_gradients = [None] * len(self._leaves)
        with self._lock:
            self._check_step_count()
            update_leaves_in_place(self._leaves, lambda: self._planned_writes(stored_gradients))
            self._steps += 1

    def backward_step(
        self,
        output: TensorValue,
        seed: Tensor | np.ndarray[Any, Any] | None = None,
        retention: GraphRetention = GraphRetention.RETAIN,
    ) -> None:
        """Run reverse mode from ``output`` and apply one step, fusing row updates into it (see
        :mod:`~llm_from_scratch.optim.fused`): bit for bit ``output.backward_with_seed(seed,
        retention)``, ``step()`` and ``zero_grad()``, all or nothing.

        Args:
            output: the value to differentiate.
            seed: its gradient, as for ``backward_with_seed``; None for a scalar output (1.0).
            retention: keep or release the recorded operations after a successful step.

        Raises:
            OptionError: ``optimizer.output-type``, ``output`` is no TensorValue.
            FormatError, NonFiniteError: as :meth:`step`; and what ``backward_with_seed``
                raises, in its order.
        """
        if not isinstance(output, TensorValue):
            raise OptionError(
                "optimizer.output-type", optimizer=self._kind, value_type=type(output).__name__
            )
        with self._lock:
            self._check_step_count()
            fused_backward_step(output, seed, retention, self._leaves, self._planned_writes)
            self._steps += 1

    def zero_grad(self) -> None:
        """Reset every parameter's gradient."""
        for leaf in self._leaves:
            leaf.zero_grad()

    def state_dict(self) -> dict[str, np.ndarray[Any, Any]]:
        """Copies of the state: ``<parameter name>.<state name>`` for each state array, and
        ``step``, a 0-d ``int64`` array."""
        with self._lock:
            return exported(self._names, self._states, self._steps)

    def load_state_dict(self, state: Mapping[str, np.ndarray[Any, Any]]) -> None:
        """Replace the state with copies of ``state``'s arrays, all checked first (the keys of
        :meth:`state_dict`, moments finite, sums of squares and ``step`` at least zero).

        Raises:
            FormatError: ``optimizer.state-type`` (no mapping), then ``optimizer.state``: the
                first failing check, naming its key.
        """
        self._load(state, copy=True)

    def _load(self, state: object, copy: bool) -> None:
        with self._lock:
            checked = checked_state(self._kind, state_layout(self), state, copy=copy)
            for name, arrays in zip(self._names, self._states, strict=True):
                for state_name, array in arrays.items():
                    np.copyto(array, checked[state_key(name, state_name)])
            self._steps = int(checked[STEP_KEY])

    # Subclass hooks ---------------------------------------------------------------------------

    def initial_state(self, values: FloatArray) -> dict[str, FloatArray]:
        """A new parameter's state arrays: zeros for each of :attr:`state_names`."""
        return {name: np.zeros(values.shape, dtype=values.dtype) for name in self.state_names}

    def updated(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """The new values and states (in :attr:`state_names` order) from a dense gradient,
        computed with NumPy; may hold NaN or infinities."""
        raise NotImplementedError

    def updated_rows(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """:meth:`updated` for the rows of a row-sparse gradient (the same rule by default)."""
        return self.updated(values, states, gradient, step)

    def row_kernel(
        self, table: FloatArray, states: States, undo: FloatArray, groups: RowGroups, step: int
    ) -> tuple[int, int]:
        """The compiled :meth:`updated_rows`, bit for bit (:mod:`~llm_from_scratch.optim.
        kernels`): old rows into ``undo``; the counts of non-finite gradients and new values."""
        raise NotImplementedError

    # Planning and committing ------------------------------------------------------------------

    def raise_non_finite(
        self,
        position: int,
        candidates: Sequence[tuple[str, FloatArray]],
        rows: IndexArray | None = None,
    ) -> None:
        """Raise ``optimizer.non-finite-step`` at the lowest flat index (in the parameter) of a
        non-finite value among the planned arrays (of the whole parameter, or of its ``rows``)."""
        worst: tuple[int, str, float] | None = None
        for state, array in candidates:
            found = first_non_finite(array)
            if found is None:
                continue
            index = found[0]
            if rows is not None:
                width = array.shape[1]
                index = int(rows[index // width]) * width + index % width
            if worst is None or index < worst[0]:
                worst = (index, state, found[1])
        if worst is not None:
            index, state, value = worst
            parameter = self._names[position]
            raise NonFiniteError(
                "optimizer.non-finite-step",
                optimizer=self._kind,
                state=state,
                parameter=parameter,
                index=index,
                value=value,
            )

    def _planned_writes(self, given: Sequence[StepGradient | None]) -> list[Write]:
        """Plan the step from each parameter's given gradient (its stored one where None);
        the writes that carry it out."""
        step = self._steps + 1
        plans = [
            self._planned_one(position, stored_gradient(leaf) if item is None else item, step)
            for position, (leaf, item) in enumerate(zip(self._leaves, given, strict=True))
        ]
        return self._writes(plans)

    def _planned_one(self, position: int, gradient: StepGradient, step: int) -> Planned:
        values = self._leaves[position].numpy()
        states = self._states[position]
        if not isinstance(gradient, RowSparseGradient | DeferredRowGradient):
            new = self.updated(values, states, gradient, step)
            self.raise_non_finite(position, new)
            return Planned(_writing(new, states, None))
        rows = RowGradient(gradient)
        if rows.compiled:
            return self._one_pass(position, rows, step)
        return Planned(self._numpy_rows(position, values, rows, step))

    def _numpy_rows(
        self, position: int, values: FloatArray, gradient: RowGradient, step: int
    ) -> Write:
        rows, summed = gradient.summed()
        states = self._states[position]
        old_states = {name: array[rows] for name, array in states.items()}
        new = self.updated_rows(values[rows], old_states, summed, step)
        self.raise_non_finite(position, new, rows)
        return _writing(new, states, rows)

    def _one_pass(self, position: int, gradient: RowGradient, step: int) -> Planned:
        """The compiled update, checked as it writes: if anything came out non-finite, the old
        rows go back and the NumPy path raises its error."""
        states = self._states[position]
        groups = gradient.groups()
        values = self._leaves[position].numpy()
        shape = (groups.rows.size, 1 + len(states), values.shape[1])
        undo = self._undo_log(position, shape, values.dtype)

        def restore(array: FloatArray) -> None:
            for index, target in enumerate([array, *states.values()]):
                target[groups.rows] = undo[:, index]

        def write(array: FloatArray) -> None:
            if self.row_kernel(array, states, undo, groups, step) == (0, 0):
                return
            restore(array)
            self._numpy_rows(position, array, gradient, step)  # raises
            raise RuntimeError("the compiled row update and NumPy disagree on finiteness")

        return Planned(write, restore)

    def _undo_log(
        self, position: int, shape: tuple[int, int, int], dtype: np.dtype[Any]
    ) -> FloatArray:
        """Scratch space kept between steps (fresh pages would cost more than the copy)."""
        size = shape[0] * shape[1] * shape[2]
        log = self._undo_logs.get(position)
        if log is None or log.dtype != dtype or log.size < size:
            log = self._undo_logs[position] = np.empty(size, dtype=dtype)
        return log[:size].reshape(shape)

    def _writes(self, plans: Sequence[Planned]) -> list[Write]:
        """One write per parameter for the tape's in-place update: each hands its writeable
        values over, and the last runs :meth:`_commit` on all of them."""
        arrays: list[FloatArray] = []

        def hand_over(array: FloatArray) -> None:
            arrays.append(array)
            if len(arrays) == len(plans):
                self._commit(plans, arrays)

        return [hand_over] * len(plans)

    def _commit(self, plans: Sequence[Planned], arrays: Sequence[FloatArray]) -> None:
        """The compiled updates first, each of which may still raise (undoing those written
        before it); then the others."""
        order = sorted(range(len(plans)), key=lambda position: plans[position].undo is None)
        written: list[int] = []
        try:
            for position in order:
                plans[position].write(arrays[position])
                written.append(position)
        except BaseException:
            for position in reversed(written):
                undo = plans[position].undo
                if undo is not None:
                    undo(arrays[position])
            raise


# For the state files (package-internal) ---------------------------------------------------------


def state_layout(optimizer: Optimizer) -> dict[str, ExpectedArray]:
    """Every key of the optimizer's state dict, in order, with its array's shape and dtype."""
    return expected_arrays(optimizer._names, optimizer._states)


@contextlib.contextmanager
def held_state(optimizer: Optimizer) -> Iterator[list[tuple[str, np.ndarray[Any, Any]]]]:
    """The state as :meth:`Optimizer.state_dict` gives it, as read-only views (no copy), while
    the optimizer's lock holds its steps and loads back."""
    with optimizer._lock:
        yield viewed(optimizer._names, optimizer._states, optimizer._steps)


def load_owned_state(optimizer: Optimizer, state: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """:meth:`Optimizer.load_state_dict` of arrays no one else holds (just read from a file),
    checked and loaded without a copy."""
    optimizer._load(state, copy=False)


@dataclass(frozen=True, slots=True)
class Planned:
    """A checked update of one parameter, or (with ``undo``) a compiled one that checks as it
    writes and can be undone."""

    write: Write
    undo: Write | None = None


def _writing(new: NewArrays, states: States, rows: IndexArray | None) -> Write:
    """The write of NumPy-computed values and states (all of them, or the listed rows)."""
    where: Any = Ellipsis if rows is None else rows

    def write(array: FloatArray) -> None:
        for name, values in new:
            target = array if name == "value" else states[name]
            target[where] = values

    return write


def stored_gradient(leaf: TensorValue) -> FloatArray | RowSparseGradient:
    """A parameter's stored gradient: row-sparse when it is stored so, else dense."""
    sparse = leaf.sparse_gradient
    if sparse is not None:
        return sparse
    dense = leaf.gradient
    assert dense is not None  # a parameter leaf always holds a gradient
    return dense.numpy()


def named_leaves(
    kind: str, parameters: Iterable[NamedParameter | TensorValue]
) -> tuple[tuple[str, ...], tuple[TensorValue, ...]]:
    """Check the parameter list; name each bare leaf by its position.

    Raises:
        OptionError: ``optimizer.parameters-type`` (no iterable of parameters, a single
            parameter included), ``optimizer.parameter-type`` (an entry that is neither a
            NamedParameter nor a parameter leaf), ``optimizer.duplicate-parameter`` (one leaf
            twice, or two parameters of one name), ``optimizer.no-parameters`` (none, such as a
            frozen layer's ``parameters()``: the message says so).
    """
    if isinstance(parameters, NamedParameter | TensorValue | str | bytes) or not isinstance(
        parameters, Iterable
    ):
        value_type = type(parameters).__name__
        raise OptionError("optimizer.parameters-type", optimizer=kind, value_type=value_type)
    names: list[str] = []
    leaves: list[TensorValue] = []
    for position, entry in enumerate(parameters):
        if isinstance(entry, NamedParameter):
            name, leaf = entry.name, entry.tensor
        elif isinstance(entry, TensorValue) and entry.kind == "parameter":
            name, leaf = str(position), entry
        else:
            got = _entry_type(entry)
            raise OptionError(
                "optimizer.parameter-type", optimizer=kind, position=position, got=got
            )
        for first, (other_name, other) in enumerate(zip(names, leaves, strict=True)):
            repeated = "leaf" if other.is_same_node(leaf) else "name" if other_name == name else ""
            if repeated:
                raise OptionError(
                    "optimizer.duplicate-parameter",
                    optimizer=kind,
                    position=position,
                    repeated=repeated,
                    first=first,
                    name=name,
                )
        names.append(name)
        leaves.append(leaf)
    if not leaves:
        frozen = parameters.frozen if isinstance(parameters, NamedParameters) else ()
        detail = "".join(f": the table {name!r} {FROZEN_DETAIL}" for name in frozen[:1])
        value_type = type(parameters).__name__
        raise OptionError(
            "optimizer.no-parameters", optimizer=kind, value_type=value_type, detail=detail
        )
    return tuple(names), tuple(leaves)


def _entry_type(entry: object) -> str:
    """What a parameter entry that is none is."""
    if isinstance(entry, FrozenTable):
        return f"a FrozenTable: the table {entry.name!r} {FROZEN_DETAIL}"
    if isinstance(entry, TensorValue):
        if entry.kind == "constant":
            return f"a TensorValue of kind constant (a frozen table's leaf is one: {FREEZE_FALSE})"
        return f"a TensorValue of kind {entry.kind}"
    return type(entry).__name__
