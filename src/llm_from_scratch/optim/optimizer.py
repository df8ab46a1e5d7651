"""What every optimizer shares: named parameters, state arrays, a step count, and steps that
change everything or nothing.

A step first plans the update of every parameter: it computes (or, for large row-sparse
gradients, a compiled kernel checks) every new value and state without writing anything, and
raises :class:`NonFiniteStepError` if any would be NaN or infinite. Only then does it write,
each parameter through the tape's in-place update (which bumps the value revision, so graphs
recorded before the step refuse to run backward), and count the step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
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
from llm_from_scratch.optim.rows import RowGradient
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
    :meth:`initial_state`, and plan updates in :meth:`planned_dense` and :meth:`planned_rows`.

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
        step = self._steps + 1
        writes = [
            self._planned(position, stored_gradient(leaf), step)
            for position, leaf in enumerate(self._leaves)
        ]
        self._commit(writes)

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
            step = self._steps + 1
            writes = [
                self._planned(position, stored_gradient(leaf) if item is None else item, step)
                for position, (leaf, item) in enumerate(zip(self._leaves, given, strict=True))
            ]

            def commit() -> None:
                self._commit(writes)
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

    def planned_dense(
        self, position: int, values: FloatArray, gradient: FloatArray, step: int
    ) -> Write:
        """Check the update of a parameter with a dense gradient; return its write."""
        raise NotImplementedError

    def planned_rows(
        self, position: int, values: FloatArray, gradient: RowGradient, step: int
    ) -> Write:
        """Check the update of a parameter with a row-sparse gradient; return its write."""
        raise NotImplementedError

    def state_of(self, position: int) -> dict[str, FloatArray]:
        """The state arrays of parameter ``position`` (for the subclass's kernels)."""
        return self._states[position]

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

    # Internals --------------------------------------------------------------------------------

    def _planned(self, position: int, gradient: StepGradient, step: int) -> Write:
        values = self._leaves[position].numpy()
        if isinstance(gradient, RowSparseGradient | DeferredRowGradient):
            return self.planned_rows(position, values, RowGradient(gradient), step)
        return self.planned_dense(position, values, gradient, step)

    def _commit(self, writes: Sequence[Write]) -> None:
        for leaf, write in zip(self._leaves, writes, strict=True):
            update_leaf_in_place(leaf, write)
        self._steps += 1


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
