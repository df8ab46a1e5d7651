"""What every optimizer shares: named parameters, state arrays, a step count, and steps that
change everything or nothing.

A step holds the update lock of every parameter (the tape's in-place update, see
``docs/errors.md`` "Threads") while it reads the gradients, plans and writes. It first plans the
update of every parameter: with NumPy it computes every new value and state without writing
anything, and raises :class:`NonFiniteStepError` if any would be NaN or infinite. Only then
does it write all parameters (which bumps their value revisions, so graphs recorded before the
step refuse to run backward), and count the step. The optimizer's own lock keeps its steps,
``state_dict()``, ``load_state_dict()`` and the writing of a state file (``save_state``) one
after the other.

A large row-sparse update (a compiled kernel) is not checked ahead: it is written first, in one
pass that also copies the old rows and states into an undo log kept by the optimizer (reused
between steps; ``[k, 1 + states, d]`` for ``k`` touched rows), and if any new value came out
non-finite the old rows go back, with those of every large update written before it, and the
error is raised before anything else is written and before any value revision changes. One
pass with the copy reads the gradient and the rows once instead of twice, which measured faster
for every optimizer (``docs/performance.md``).
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
from llm_from_scratch.nn.init import (
    FREEZE_FALSE,
    FROZEN_DETAIL,
    NamedParameter,
    NamedParameters,
)
from llm_from_scratch.nn.tables import FrozenTable
from llm_from_scratch.optim.errors import (
    DuplicateParameterError,
    NonFiniteStepError,
    OutputTypeError,
    ParameterEntryError,
    ParameterListError,
    StateError,
)
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
    state_key,
    viewed,
)
from llm_from_scratch.optim.validation import checked_learning_rate
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, Tensor

Write: TypeAlias = Callable[[FloatArray], None]
"""An in-place update of one parameter: it gets the writeable values and also writes the
optimizer's state arrays of that parameter."""
States: TypeAlias = Mapping[str, FloatArray]
"""One parameter's state arrays by state name (all of them, or the listed rows)."""
NewArrays: TypeAlias = list[tuple[str, FloatArray]]
"""Planned new arrays of one parameter: ``("value", values)`` first, then each state by name."""


class Optimizer:
    """Base class of the optimizers (see the module docstring).

    Subclasses set :attr:`state_names`, build each parameter's state arrays in
    :meth:`initial_state` when they do not start at zero, compute new values and states with
    NumPy in :meth:`updated` (dense) and :meth:`updated_rows` (the listed rows of a row-sparse
    gradient), and run the compiled row update in :meth:`row_kernel`.

    Args:
        kind: the optimizer's name in error messages (``SGD``, ``Adam``, ...).
        parameters: named parameters or parameter leaves; a leaf is named by its position.
    """

    state_names: tuple[str, ...] = ()
    _learning_rate: float  # set by the subclass, checked, before this class's __init__

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
        """Refuse ``pickle`` and ``copy``: an optimizer updates the very leaves it was built
        on, under its own lock, and a copy could hold neither. Its state pickles as the arrays
        of :meth:`state_dict` (or a state file, ``save_state``), which a new optimizer over the
        same parameters loads.

        Raises:
            TypeError: always.
        """
        raise TypeError(
            f"cannot pickle or copy an optimizer ({self._kind}): it updates the leaves it was "
            "built on; save state_dict() (or save_state) and load it into a new optimizer"
        )

    # Reading ----------------------------------------------------------------------------------

    def __repr__(self) -> str:
        """The kind, the parameters' names, every hyperparameter as the constructor takes it
        and the step count, on one line.

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
        """Set the step size of the steps that follow (a learning-rate schedule), checked as
        the constructor checks it and read once; it takes effect between two steps, never
        during one.

        Raises:
            HyperparameterTypeError, HyperparameterValueError: as the constructor; the step
                size is then unchanged.

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
        """The hyperparameters the optimizer was built with, as it uses them (each a float), by
        argument name; ``betas`` as ``betas[0]`` and ``betas[1]``. ``decoupled`` is in
        :attr:`kind` (``AdamW``)."""
        return {}

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The state-dict name of each parameter, in order."""
        return self._names

    @property
    def step_count(self) -> int:
        """How many steps changed the parameters: a Python int from 0 to ``2**63 - 1``.

        It is exact and is bounded where it enters and leaves: :meth:`load_state_dict` and
        ``load_state`` take an ``int64`` at least zero, and a step that would count past
        ``2**63 - 1`` is refused before anything changes, so every :meth:`state_dict` and state
        file holds it as an ``int64``.
        """
        return self._steps

    def _check_step_count(self) -> None:
        """Refuse a step that could not be counted in a state dict's ``int64``."""
        if self._steps >= STEP_LIMIT:
            raise StateError(self._kind, STEP_KEY, STEP_LIMIT_REQUIREMENT, self._steps)

    # Steps ------------------------------------------------------------------------------------

    def step(self) -> None:
        """Apply one update to every parameter; if any new value or state would be NaN or
        infinite, change nothing.

        The step is atomic with respect to backward passes, ``zero_grad`` and other steps on
        other threads: it reads each gradient and writes each parameter while no gradient of
        these parameters is stored or reset and no other update of them runs.

        Raises:
            StateError: the step count is already ``2**63 - 1`` (see :meth:`step_count`), the
                largest a state dict or state file holds; checked first.
            NonFiniteStepError: the first parameter, state and flat index that would be NaN
                or infinite; no value, state or step count changed.
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
        """Run reverse mode from ``output`` and apply one step, fusing row updates into it.

        The result is bit for bit that of ``output.backward_with_seed(seed, retention)``,
        ``step()`` and ``zero_grad()``. A parameter reached only through one row gather (an
        embedding lookup without ``padding_idx`` or ``scale_grad_by_freq``) or one ``sum`` or
        ``mean`` embedding bag without per-sample weights, whose stored gradient is empty,
        never stores its gradient: each of its rows is summed and updated in one pass. Every
        other gradient (a lookup with a padding row or frequency scaling, a ``max`` bag, a
        weighted bag) is computed by its VJP, with its rule, and handed to the same update.

        All or nothing: on any error no gradient, value, state or step count changed. The pass
        is computed without a lock; from the check of the recorded revisions to the reset of
        the gradients it holds the update locks of every parameter involved, so to other
        threads it is one backward, one step and one ``zero_grad`` with nothing in between.

        Args:
            output: the value to differentiate.
            seed: its gradient, as for ``backward_with_seed``; None for a scalar output (1.0).
            retention: keep or release the recorded operations after a successful step.

        Raises:
            OutputTypeError: ``output`` is not a TensorValue.
            StateError: the step count is already ``2**63 - 1``, as for :meth:`step`.
            NotScalarOutputError, SeedTypeError, SeedShapeMismatchError, NonFiniteSeedError,
                RetentionTypeError, NotRecordedError, GraphReleasedError, StaleValueError,
                NonFiniteGradientError: as for ``backward_with_seed``. A non-finite sum of a
                fused row is reported after the other gradients are checked.
            NonFiniteStepError: as for :meth:`step`.
        """
        if not isinstance(output, TensorValue):
            raise OutputTypeError(self._kind, type(output).__name__)

        with self._lock:
            self._check_step_count()
            fused_backward_step(output, seed, retention, self._leaves, self._planned_writes)
            self._steps += 1

    def zero_grad(self) -> None:
        """Reset every parameter's gradient."""
        for leaf in self._leaves:
            leaf.zero_grad()

    # State ------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, np.ndarray[Any, Any]]:
        """Independent copies of the optimizer's state.

        Keys are ``<parameter name>.<state name>`` for each state array (a bare leaf is named by
        its position) and ``step``, a 0-d ``int64`` array.
        """
        with self._lock:
            return exported(self._names, self._states, self._steps)

    def load_state_dict(self, state: Mapping[str, np.ndarray[Any, Any]]) -> None:
        """Replace the optimizer's state with copies of ``state``'s arrays.

        Every key, shape, dtype and value is checked before anything changes: exactly the keys
        :meth:`state_dict` gives, each array of the same shape and dtype, moments finite, sums
        of squares at least zero, ``step`` an ``int64`` at least zero.

        Raises:
            StateMappingError, StateKeyError, StateArrayError, StateShapeError,
                StateDtypeError, StateValueError: the first failing check, naming its key.
        """
        self._load(state, copy=True)

    def _load(self, state: object, copy: bool) -> None:
        with self._lock:
            expected = expected_arrays(self._names, self._states)
            checked = checked_state(self._kind, expected, state, copy=copy)
            for name, arrays in zip(self._names, self._states, strict=True):
                for state_name, array in arrays.items():
                    np.copyto(array, checked[state_key(name, state_name)])
            self._steps = int(checked[STEP_KEY])

    # Subclass hooks ---------------------------------------------------------------------------

    def initial_state(self, values: FloatArray) -> dict[str, FloatArray]:
        """The state arrays of a new parameter with these values (owned, writeable): zeros of
        its shape and dtype for each of :attr:`state_names`, unless the optimizer says
        otherwise."""
        return {name: np.zeros(values.shape, dtype=values.dtype) for name in self.state_names}

    def updated(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """The new values (``value``) and states, in :attr:`state_names` order, computed with
        NumPy from the old ones and a dense gradient (the dense rule); may hold NaN or
        infinities."""
        raise NotImplementedError

    def updated_rows(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """:meth:`updated` for the listed rows of a row-sparse gradient (the row-sparse rule,
        the same as the dense one unless the optimizer says otherwise)."""
        return self.updated(values, states, gradient, step)

    def row_kernel(
        self, table: FloatArray, states: States, undo: FloatArray, groups: RowGroups, step: int
    ) -> tuple[int, int]:
        """Run the compiled row update (see :mod:`~llm_from_scratch.optim.kernels`), which
        computes what :meth:`updated_rows` computes, bit for bit, keeps the old rows in
        ``undo`` and counts the non-finite gradient values and new values."""
        raise NotImplementedError

    # Checks -----------------------------------------------------------------------------------

    def raise_non_finite(
        self,
        position: int,
        candidates: Sequence[tuple[str, FloatArray]],
        rows: IndexArray | None = None,
    ) -> None:
        """Raise :class:`NonFiniteStepError` at the first non-finite candidate, if any.

        ``candidates`` are the planned new arrays (``value`` first, then the states), of the
        whole parameter, or of its ``rows`` when given; the reported index is the flat index
        in the parameter, the lowest over all candidates (ties go to the earlier candidate).
        """
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
            raise NonFiniteStepError(self._kind, self._names[position], state, index, value)

    # Planning and committing ------------------------------------------------------------------

    def _planned_writes(self, given: Sequence[StepGradient | None]) -> list[Write]:
        """Plan the next step from each parameter's given gradient (its stored one where None),
        and return the writes that carry it out."""
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
        """The compiled update, checked while it writes: if anything came out non-finite, it
        puts the old rows back and raises the error the NumPy path raises."""
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
        """One write per parameter for the tape's in-place update: each hands over its
        parameter's writeable values, and the last one runs :meth:`_commit` on all of them
        (the tape keeps every array writeable until the last write returns)."""
        arrays: list[FloatArray] = []

        def hand_over(array: FloatArray) -> None:
            arrays.append(array)
            if len(arrays) == len(plans):
                self._commit(plans, arrays)

        return [hand_over] * len(plans)

    def _commit(self, plans: Sequence[Planned], arrays: Sequence[FloatArray]) -> None:
        """Write the compiled updates first, each of which may still raise; then undo the ones
        written before it, so that nothing changed. Then the others."""
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
    """Every key of the optimizer's state dict, in order, with the shape and dtype its array
    must have (these never change)."""
    return expected_arrays(optimizer._names, optimizer._states)


@contextlib.contextmanager
def held_state(optimizer: Optimizer) -> Iterator[list[tuple[str, np.ndarray[Any, Any]]]]:
    """The optimizer's state as :meth:`Optimizer.state_dict` gives it, but as read-only views
    of the arrays it steps (no copy), while its lock keeps its steps and loads waiting."""
    with optimizer._lock:
        yield viewed(optimizer._names, optimizer._states, optimizer._steps)


def load_owned_state(optimizer: Optimizer, state: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """:meth:`Optimizer.load_state_dict` of arrays that no one else holds (just read from a
    file): the same checks, in the same order, on the arrays themselves rather than copies."""
    optimizer._load(state, copy=False)


@dataclass(frozen=True, slots=True)
class Planned:
    """A checked update of one parameter, or (with ``undo``) a compiled one that checks while
    it writes, undoes itself before raising, and can be undone after it succeeded."""

    write: Write
    undo: Write | None = None


def _writing(
    new: Sequence[tuple[str, FloatArray]],
    states: States,
    rows: IndexArray | None,
) -> Write:
    """The write of NumPy-computed new values and states (all of them, or the listed rows)."""
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
        ParameterListError: not an iterable of parameters (a single parameter included), or
            one of no parameter (a frozen layer's ``parameters()``: the message says so).
        ParameterEntryError: an entry that is neither a NamedParameter nor a parameter leaf.
        DuplicateParameterError: the same leaf twice, or two parameters with one name.
    """
    if isinstance(parameters, NamedParameter | TensorValue | str | bytes) or not isinstance(
        parameters, Iterable
    ):
        raise ParameterListError(kind, type(parameters).__name__)
    names: list[str] = []
    leaves: list[TensorValue] = []
    for position, entry in enumerate(parameters):
        if isinstance(entry, NamedParameter):
            name, leaf = entry.name, entry.tensor
        elif isinstance(entry, TensorValue) and entry.kind == "parameter":
            name, leaf = str(position), entry
        else:
            raise ParameterEntryError(kind, position, _entry_type(entry))
        for first, (other_name, other) in enumerate(zip(names, leaves, strict=True)):
            if other.is_same_node(leaf):
                raise DuplicateParameterError(kind, position, "leaf", first, name)
            if other_name == name:
                raise DuplicateParameterError(kind, position, "name", first, name)
        names.append(name)
        leaves.append(leaf)
    if not leaves:
        frozen = parameters.frozen if isinstance(parameters, NamedParameters) else ()
        detail = "".join(f": the table {name!r} {FROZEN_DETAIL}" for name in frozen[:1])
        raise ParameterListError(kind, type(parameters).__name__, "empty", detail)
    return tuple(names), tuple(leaves)


def _entry_type(entry: object) -> str:
    """What a parameter entry that is none is, for :class:`ParameterEntryError`."""
    if isinstance(entry, FrozenTable):
        return f"a FrozenTable: the table {entry.name!r} {FROZEN_DETAIL}"
    if isinstance(entry, TensorValue):
        if entry.kind == "constant":
            return f"a TensorValue of kind constant (a frozen table's leaf is one: {FREEZE_FALSE})"
        return f"a TensorValue of kind {entry.kind}"
    return type(entry).__name__
