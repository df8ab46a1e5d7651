"""What every optimizer shares: named parameters, state arrays, a step count, and steps that
change everything or nothing.

A step first plans the update of every parameter: it computes (or, for large row-sparse
gradients, a compiled kernel checks) every new value and state without writing anything, and
raises :class:`NonFiniteStepError` if any would be NaN or infinite. Only then does it write,
each parameter through the tape's in-place update (which bumps the value revision, so graphs
recorded before the step refuse to run backward), and count the step.

One large row-sparse update per step is not checked ahead: it is written first, in one pass
that also copies the old rows and states into an undo log kept by the optimizer (reused
between steps; ``[k, 1 + states, d]`` for ``k`` touched rows), and if any new value came out
non-finite the old rows go back before the error is raised, still before anything else was
written. One pass with the copy reads the gradient and the rows once instead of twice, which
measured faster for every optimizer (``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from llm_from_scratch.autograd import GraphRetention, RowSparseGradient, TensorValue
from llm_from_scratch.autograd.deferred import DeferredRowGradient
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.value import (
    backward_with_deferred_row_gradients,
    update_leaf_in_place,
)
from llm_from_scratch.nn.init import NamedParameter
from llm_from_scratch.optim.errors import (
    DuplicateParameterError,
    NonFiniteStepError,
    OutputTypeError,
    ParameterEntryError,
    ParameterListError,
)
from llm_from_scratch.optim.kernels import Mode
from llm_from_scratch.optim.rows import RowGradient, RowGroups
from llm_from_scratch.optim.state import (
    STEP_KEY,
    checked_state,
    expected_arrays,
    exported,
    state_key,
)
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, Tensor

Write: TypeAlias = Callable[[FloatArray], None]
"""An in-place update of one parameter: it gets the writeable values and also writes the
optimizer's state arrays of that parameter."""
StepGradient: TypeAlias = "FloatArray | RowSparseGradient | DeferredRowGradient"


class Optimizer:
    """Base class of the optimizers (see the module docstring).

    Subclasses set :attr:`state_names`, build each parameter's state arrays in
    :meth:`initial_state`, compute new values and states with NumPy in :meth:`updated` (dense)
    and :meth:`updated_rows` (the listed rows of a row-sparse gradient), and run the compiled
    row update in :meth:`row_kernel`.

    Args:
        kind: the optimizer's name in error messages (``SGD``, ``Adam``, ...).
        parameters: named parameters or parameter leaves; a leaf is named by its position.
    """

    state_names: tuple[str, ...] = ()

    def __init__(self, kind: str, parameters: Iterable[NamedParameter | TensorValue]) -> None:
        self._kind = kind
        self._names, self._leaves = named_leaves(kind, parameters)
        self._states = tuple(self.initial_state(leaf.numpy()) for leaf in self._leaves)
        self._steps = 0
        self._undo: FloatArray = np.empty(0)

    # Reading ----------------------------------------------------------------------------------

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The state-dict name of each parameter, in order."""
        return self._names

    @property
    def step_count(self) -> int:
        """How many steps changed the parameters."""
        return self._steps

    # Steps ------------------------------------------------------------------------------------

    def step(self) -> None:
        """Apply one update to every parameter; if any new value or state would be NaN or
        infinite, change nothing.

        Raises:
            NonFiniteStepError: the first parameter, state and flat index that would be NaN
                or infinite; no value, state or step count changed.
        """
        gradients = [stored_gradient(leaf) for leaf in self._leaves]
        self._commit(self._planned_all(gradients, self._steps + 1))

    def backward_step(
        self,
        output: TensorValue,
        seed: Tensor | np.ndarray[Any, Any] | None = None,
        retention: GraphRetention = GraphRetention.RETAIN,
    ) -> None:
        """Run reverse mode from ``output`` and apply one step, fusing row updates into it.

        The result is bit for bit that of ``output.backward_with_seed(seed, retention)``,
        ``step()`` and ``zero_grad()``. A parameter reached only through one row gather (an
        embedding lookup) whose stored gradient is empty never stores its gradient: each of its
        rows is summed and updated in one pass. All or nothing: on any error no gradient, value,
        state or step count changed.

        Args:
            output: the value to differentiate.
            seed: its gradient, as for ``backward_with_seed``; None for a scalar output (1.0).
            retention: keep or release the recorded operations after a successful step.

        Raises:
            OutputTypeError: ``output`` is not a TensorValue.
            NotScalarOutputError, SeedTypeError, SeedShapeMismatchError, NonFiniteSeedError,
                RetentionTypeError, NotRecordedError, GraphReleasedError, StaleValueError,
                NonFiniteGradientError: as for ``backward_with_seed``. A non-finite sum of a
                fused row is reported after the other gradients are checked.
            NonFiniteStepError: as for :meth:`step`.
        """
        if not isinstance(output, TensorValue):
            raise OutputTypeError(self._kind, type(output).__name__)

        def finish(given: list[StepGradient | None]) -> Callable[[], None]:
            gradients = [
                stored_gradient(leaf) if item is None else item
                for leaf, item in zip(self._leaves, given, strict=True)
            ]
            plans = self._planned_all(gradients, self._steps + 1)

            def commit() -> None:
                self._commit(plans)
                self.zero_grad()

            return commit

        backward_with_deferred_row_gradients(output, seed, retention, self._leaves, finish)

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
        expected = expected_arrays(self._names, self._states)
        checked = checked_state(self._kind, expected, state)
        for name, arrays in zip(self._names, self._states, strict=True):
            for state_name, array in arrays.items():
                np.copyto(array, checked[state_key(name, state_name)])
        self._steps = int(checked[STEP_KEY])

    # Subclass hooks ---------------------------------------------------------------------------

    def initial_state(self, values: FloatArray) -> dict[str, FloatArray]:
        """The state arrays of a new parameter with these values (owned, writeable)."""
        return {}

    def updated(
        self,
        values: FloatArray,
        states: Mapping[str, FloatArray],
        gradient: FloatArray,
        step: int,
    ) -> list[tuple[str, FloatArray]]:
        """The new values (``value``) and states, in :attr:`state_names` order, computed with
        NumPy from the old ones and a dense gradient (the dense rule); may hold NaN or
        infinities."""
        raise NotImplementedError

    def updated_rows(
        self,
        values: FloatArray,
        states: Mapping[str, FloatArray],
        gradient: FloatArray,
        step: int,
    ) -> list[tuple[str, FloatArray]]:
        """:meth:`updated` for the listed rows of a row-sparse gradient (the row-sparse rule,
        the same as the dense one unless the optimizer says otherwise)."""
        return self.updated(values, states, gradient, step)

    def row_kernel(
        self,
        table: FloatArray,
        states: Mapping[str, FloatArray],
        groups: RowGroups,
        step: int,
        mode: Mode,
        undo: FloatArray | None,
    ) -> tuple[int, int]:
        """Run the compiled row update in ``mode`` (see :mod:`~llm_from_scratch.optim.kernels`),
        which computes what :meth:`updated_rows` computes, bit for bit."""
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

    def _planned_all(self, gradients: Sequence[StepGradient], step: int) -> list[Planned]:
        """Plan every parameter's update; the first compiled row update runs in one pass with
        an undo log when it is written, every other one is checked now."""
        plans: list[Planned] = []
        for position, gradient in enumerate(gradients):
            one_pass = not any(plan.fallible for plan in plans)
            plans.append(self._planned(position, gradient, step, one_pass))
        return plans

    def _planned(self, position: int, gradient: StepGradient, step: int, one_pass: bool) -> Planned:
        values = self._leaves[position].numpy()
        states = self._states[position]
        if not isinstance(gradient, RowSparseGradient | DeferredRowGradient):
            new = self.updated(values, states, gradient, step)
            self.raise_non_finite(position, new)
            return Planned(_writing(new, states, None))
        rows = RowGradient(gradient)
        if rows.compiled:
            groups = rows.groups()
            if one_pass:
                return Planned(self._one_pass(position, rows, groups, step), fallible=True)
            if self.row_kernel(values, states, groups, step, Mode.CHECK, None) == (0, 0):
                return Planned(self._kernel_write(states, groups, step))
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

    def _kernel_write(
        self, states: Mapping[str, FloatArray], groups: RowGroups, step: int
    ) -> Write:
        def write(array: FloatArray) -> None:
            self.row_kernel(array, states, groups, step, Mode.WRITE, None)

        return write

    def _one_pass(
        self, position: int, gradient: RowGradient, groups: RowGroups, step: int
    ) -> Write:
        """Write the rows while keeping the old ones; if anything came out non-finite, put them
        back and raise the error the checked path would raise."""
        states = self._states[position]

        def write(array: FloatArray) -> None:
            width, count = array.shape[1], groups.rows.size
            undo = self._undo_log((count, 1 + len(states), width), array.dtype)
            if self.row_kernel(array, states, groups, step, Mode.WRITE_WITH_UNDO, undo) == (0, 0):
                return
            for index, target in enumerate([array, *states.values()]):
                target[groups.rows] = undo[:, index]
            self._numpy_rows(position, array, gradient, step)  # raises
            raise RuntimeError("the compiled row update and NumPy disagree on finiteness")

        return write

    def _undo_log(self, shape: tuple[int, int, int], dtype: np.dtype[Any]) -> FloatArray:
        """A scratch array kept between steps (fresh pages would cost more than the copy)."""
        size = shape[0] * shape[1] * shape[2]
        if self._undo.dtype != dtype or self._undo.size < size:
            self._undo = np.empty(size, dtype=dtype)
        return self._undo[:size].reshape(shape)

    def _commit(self, plans: Sequence[Planned]) -> None:
        """Write the one-pass update first (it may still raise, having changed nothing), then
        the others; then count the step."""
        order = sorted(range(len(plans)), key=lambda position: not plans[position].fallible)
        for position in order:
            update_leaf_in_place(self._leaves[position], plans[position].write)
        self._steps += 1


@dataclass(frozen=True, slots=True)
class Planned:
    """A checked update of one parameter; a ``fallible`` one checks while it writes and undoes
    itself before raising."""

    write: Write
    fallible: bool = False


def _writing(
    new: Sequence[tuple[str, FloatArray]],
    states: Mapping[str, FloatArray],
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
        ParameterListError: not an iterable of parameters (a single parameter included).
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
            got = type(entry).__name__
            if isinstance(entry, TensorValue):
                got = f"a TensorValue of kind {entry.kind}"
            raise ParameterEntryError(kind, position, got)
        for first, (other_name, other) in enumerate(zip(names, leaves, strict=True)):
            if other.is_same_node(leaf):
                raise DuplicateParameterError(kind, position, "leaf", first, name)
            if other_name == name:
                raise DuplicateParameterError(kind, position, "name", first, name)
        names.append(name)
        leaves.append(leaf)
    return tuple(names), tuple(leaves)
