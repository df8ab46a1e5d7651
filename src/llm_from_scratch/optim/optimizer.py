"""What every optimizer shares: named parameters, settings, state arrays, a step count, and
steps that change everything or nothing.

A step holds every parameter's update lock while it plans and writes. With NumPy it computes
every new value and state and refuses the step if any is not finite before writing; only a
large row update (``optim.kernels``) writes as it checks, keeping an undo log.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, NoReturn, TypeAlias, cast

import numpy as np

from llm_from_scratch.autograd import GraphRetention, RowSparseGradient, TensorValue
from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.gradient import first_non_finite
from llm_from_scratch.autograd.threads import Write, update_parameters
from llm_from_scratch.autograd.value import node_of
from llm_from_scratch.errors import NonFiniteError, OptionError
from llm_from_scratch.nn.init import FREEZE_FALSE, FROZEN_DETAIL, NamedParameter, NamedParameters
from llm_from_scratch.nn.tables import FrozenTable
from llm_from_scratch.optim.fused import RowGradient, StepGradient, fused_backward_step
from llm_from_scratch.optim.kernels import Planned, UndoLog, all_or_nothing, row_plan
from llm_from_scratch.optim.state import (
    STEP_KEY,
    STEP_LIMIT,
    ExpectedArray,
    checked_state,
    expected_arrays,
    keyed,
    state_error,
    viewed,
)
from llm_from_scratch.optim.validation import checked_learning_rate
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import FloatArray, IndexArray, Tensor

States: TypeAlias = Mapping[str, FloatArray]  # one parameter's state arrays (or rows) by name
NewArrays: TypeAlias = list[tuple[str, FloatArray]]  # ("value", values) first, then each state


class Setting:
    """A read-only setting of an optimizer, as its constructor checked it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, optimizer: Optimizer | None, owner: type | None = None) -> Any:
        return self if optimizer is None else optimizer._settings[self.name]


class Optimizer:
    """Base class of the optimizers: a subclass names its :attr:`state_names`, computes new
    values and states with NumPy in :meth:`updated` (dense) and :meth:`updated_rows`, and names
    its compiled row update (:attr:`row_rule`, :meth:`row_constants`).

    Args:
        kind: the optimizer's name in error messages (``SGD``, ``Adam``, ...).
        parameters: named parameters or parameter leaves; a leaf is named by its position.
        learning_rate: checked by the subclass, first.
        settings: the other settings, checked by the subclass, in its signature's order.
    """

    state_names: tuple[str, ...] = ()
    row_rule: str = ""

    lr = PyTorchName("learning_rate (settable between steps)")
    param_groups = PyTorchName("learning_rate (settable), hyperparameters and parameter_names")
    state = PyTorchName("state_dict()")

    def __init__(
        self,
        kind: str,
        parameters: Iterable[NamedParameter | TensorValue],
        learning_rate: float,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self._kind, self._learning_rate, self._settings = kind, learning_rate, dict(settings or {})
        self._names, self._leaves = named_leaves(kind, parameters)
        self._nodes = tuple(map(node_of, self._leaves))
        self._states = tuple(self.initial_state(leaf.numpy()) for leaf in self._leaves)
        self._steps = 0
        self._undo_logs = tuple(UndoLog() for _ in self._leaves)
        self._lock = threading.Lock()

    def __reduce__(self) -> NoReturn:
        """Refuse ``pickle`` and ``copy`` (``TypeError``, saying why and what to do instead)."""
        raise TypeError(
            f"cannot pickle or copy an optimizer ({self._kind}): it updates the leaves it was "
            "built on; save state_dict() (or save_state) and load it into a new optimizer"
        )

    def __repr__(self) -> str:
        """The kind, the parameters' names, every setting and the step count.

        Example:
            >>> from llm_from_scratch.nn import Embedding
            >>> from llm_from_scratch.optim import Adam
            >>> Adam(Embedding(4, 2).parameters(), learning_rate=1e-3)
            Adam(parameters=['token_embedding.weight'], learning_rate=0.001, \
betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0, step_count=0)
        """
        shown = {"parameters": list(self._names), "learning_rate": self._learning_rate}
        shown |= {name: v for name, v in self._settings.items() if not isinstance(v, bool)}
        shown["step_count"] = self._steps
        return f"{self._kind}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

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
        """Set the step size of the steps that follow (between two steps, never during one),
        checked as the constructor checks it (``OptionError``; the step size is then unchanged).

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
        found = {"learning_rate": self._learning_rate}
        for name, value in self._settings.items():
            if isinstance(value, tuple):
                found |= {f"{name}[{index}]": item for index, item in enumerate(value)}
            elif not isinstance(value, bool):
                found[name] = value
        return found

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The state-dict name of each parameter, in order."""
        return self._names

    @property
    def step_count(self) -> int:
        """How many steps changed the parameters, at most ``2**63 - 1`` (a state dict's int64)."""
        return self._steps

    def step(self) -> None:
        """Apply one update to every parameter from its stored gradient, atomic to other threads.

        Raises:
            FormatError: ``optimizer.state``, the step count is already ``2**63 - 1``.
            NonFiniteError: ``optimizer.non-finite-step``, the first parameter, state and flat
                index that would not be finite; nothing changed.
        """
        with self._lock:
            if self._steps >= STEP_LIMIT:
                raise step_limit_error(self._kind, self._steps)
            update_parameters(self._nodes, self._writes)
            self._steps += 1

    def backward_step(
        self,
        output: TensorValue,
        seed: Tensor | np.ndarray[Any, Any] | None = None,
        retention: GraphRetention = GraphRetention.RETAIN,
    ) -> None:
        """Run reverse mode from ``output`` and apply one step, fusing row updates into it: bit
        for bit ``output.backward_with_seed(seed, retention)``, ``step()`` and ``zero_grad()``.

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
            if self._steps >= STEP_LIMIT:
                raise step_limit_error(self._kind, self._steps)
            fused_backward_step(output, seed, retention, self._nodes, self._writes)
            self._steps += 1

    def zero_grad(self) -> None:
        """Reset every parameter's gradient."""
        for leaf in self._leaves:
            leaf.zero_grad()

    def state_dict(self) -> dict[str, np.ndarray[Any, Any]]:
        """Copies of the state: ``<parameter name>.<state name>`` for each state array, and
        ``step``, a 0-d ``int64`` array."""
        with self._lock:
            return {
                key: np.array(array)
                for key, array in viewed(self._names, self._states, self._steps)
            }

    def load_state_dict(self, state: Mapping[str, np.ndarray[Any, Any]]) -> None:
        """Replace the state with copies of ``state``'s arrays, all checked first (the keys of
        :meth:`state_dict`, moments finite, sums of squares and ``step`` at least zero).

        Raises:
            FormatError: ``optimizer.state-type`` (no mapping), then ``optimizer.state``: the
                first failing check, naming its key.
        """
        self._load(state, copy=True)

    def _load(self, state: object, copy: bool) -> None:
        """Load checked copies of ``state``'s arrays (without a copy: arrays just read)."""
        with self._lock:
            checked = checked_state(self._kind, state_layout(self), state, copy=copy)
            for key, _, array in keyed(self._names, self._states):
                np.copyto(array, checked[key])
            self._steps = int(checked[STEP_KEY])

    # What a subclass defines ------------------------------------------------------------------

    def initial_state(self, values: FloatArray) -> dict[str, FloatArray]:
        """A new parameter's state arrays: zeros for each of :attr:`state_names`."""
        return {name: np.zeros(values.shape, dtype=values.dtype) for name in self.state_names}

    def updated(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """The new values and states from a dense gradient, with NumPy (may be non-finite)."""
        raise NotImplementedError

    def updated_rows(
        self, values: FloatArray, states: States, gradient: FloatArray, step: int
    ) -> NewArrays:
        """:meth:`updated` for the rows of a row-sparse gradient (the same rule by default)."""
        return self.updated(values, states, gradient, step)

    def row_constants(self, step: int) -> tuple[float, ...]:
        """The constants :func:`~llm_from_scratch.optim.kernels.update_rows` reads."""
        raise NotImplementedError

    # Planning and committing ------------------------------------------------------------------

    def raise_non_finite(
        self, position: int, candidates: NewArrays, rows: IndexArray | None = None
    ) -> None:
        """Raise ``optimizer.non-finite-step`` at the lowest flat index (in the parameter) of a
        non-finite value among the planned arrays (of the whole parameter, or of its ``rows``)."""
        found = []
        for state, array in candidates:
            bad = first_non_finite(array)
            if bad is not None:
                index, width = bad[0], array.shape[-1]
                if rows is not None:
                    index = int(rows[index // width]) * width + index % width
                found.append((index, state, bad[1]))
        if found:
            index, state, value = min(found, key=lambda item: item[0])  # the first at the lowest
            parameter = self._names[position]
            raise NonFiniteError(
                "optimizer.non-finite-step",
                optimizer=self._kind,
                state=state,
                parameter=parameter,
                index=index,
                value=value,
            )

    def _writes(self, given: Sequence[StepGradient | None] | None = None) -> Sequence[Write]:
        """One write per parameter from its given gradient (its stored one where None), each
        new value and state checked before any is written."""
        step, undoable = self._steps + 1, False
        plans: list[Write | Planned] = []
        for position, node in enumerate(self._nodes):
            gradient = None if given is None else given[position]
            if gradient is None:
                gradient = node.gradient
            assert gradient is not None  # a parameter always holds a gradient
            if isinstance(gradient, np.ndarray):
                plans.append(self._numpy_write(position, None, gradient, step))
                continue
            summed = (
                gradient.summed_rows()
                if isinstance(gradient, RowSparseGradient) and gradient.pending is None
                else None
            )
            if summed is not None and not runs_compiled(summed[1].size):
                plans.append(self._numpy_write(position, *summed, step))
            else:
                plan = self._row_plan(position, gradient, step)
                undoable = undoable or isinstance(plan, Planned)
                plans.append(plan)
        return all_or_nothing(plans) if undoable else cast(list[Write], plans)

    def _numpy_write(
        self, position: int, rows: IndexArray | None, gradient: FloatArray, step: int
    ) -> Write:
        """The new values and states of a parameter (of its ``rows``), computed and checked."""
        values, states = self._nodes[position].array, self._states[position]
        if rows is None:
            new = self.updated(values, states, gradient, step)
        else:
            old = {name: array[rows] for name, array in states.items()}
            new = self.updated_rows(values[rows], old, gradient, step)
        for _, array in new:
            if not np.isfinite(array).all():
                self.raise_non_finite(position, new, rows)
        where: Any = Ellipsis if rows is None else rows

        def write(array: FloatArray) -> None:
            for name, computed in new:
                (array if name == "value" else states[name])[where] = computed

        return write

    def _row_plan(self, position: int, gradient: RowGradient, step: int) -> Write | Planned:
        """:func:`~llm_from_scratch.optim.kernels.row_plan` of one parameter."""
        numpy_rows = partial(self._numpy_write, position, step=step)
        values, states = self._nodes[position].array, [*self._states[position].values()]
        constants = self.row_constants(step)
        log = self._undo_logs[position]
        return row_plan(gradient, values, states, self.row_rule, constants, numpy_rows, log)


def in_dtype(dtype: np.dtype[Any], *values: float) -> tuple[Any, ...]:
    """``values`` in a table's dtype (beyond its range, infinities: the step is then refused)."""
    with np.errstate(over="ignore"):
        return tuple(dtype.type(value) for value in values)


def step_limit_error(kind: str, steps: int) -> Exception:
    """``optimizer.state``: the step count cannot grow beyond an int64."""
    requirement = "be below 2**63 - 1 for another step to be counted (a state dict holds"
    return state_error(kind, STEP_KEY, requirement + " it as an int64)", steps)


# For the state files (package-internal) ---------------------------------------------------------


def state_layout(optimizer: Optimizer) -> dict[str, ExpectedArray]:
    """Every key of the optimizer's state dict, in order, with its expected array."""
    return expected_arrays(optimizer._names, optimizer._states)


@contextlib.contextmanager
def held_state(optimizer: Optimizer) -> Iterator[list[tuple[str, np.ndarray[Any, Any]]]]:
    """The state dict as read-only views (no copy), while the optimizer's lock holds it."""
    with optimizer._lock:
        yield viewed(optimizer._names, optimizer._states, optimizer._steps)


def load_owned_state(optimizer: Optimizer, state: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """:meth:`Optimizer.load_state_dict` of arrays just read from a file, without a copy."""
    optimizer._load(state, copy=False)


# The parameter list -----------------------------------------------------------------------------


def named_leaves(
    kind: str, parameters: Iterable[NamedParameter | TensorValue]
) -> tuple[tuple[str, ...], tuple[TensorValue, ...]]:
    """The checked parameter list's names and leaves, each bare leaf named by its position
    (``optimizer.parameters-type``, ``.parameter-type``, ``.duplicate-parameter``,
    ``.no-parameters``)."""
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
                fields = {"position": position, "repeated": repeated, "first": first, "name": name}
                raise OptionError("optimizer.duplicate-parameter", optimizer=kind, **fields)
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
    if isinstance(entry, FrozenTable):
        return f"a FrozenTable: the table {entry.name!r} {FROZEN_DETAIL}"
    if isinstance(entry, TensorValue) and entry.kind == "constant":
        return f"a TensorValue of kind constant (a frozen table's leaf is one: {FREEZE_FALSE})"
    if isinstance(entry, TensorValue):
        return f"a TensorValue of kind {entry.kind}"
    return type(entry).__name__
