"""The exception family of :mod:`llm_from_scratch.optim`: every error an optimizer, or a
function of its state files, can raise.

Each error about an optimizer names it (``SGD``, ``Adagrad``, ``Adam``, ``AdamW``) in
``optimizer``, and an error about a state file names the file (``path``). Every one is raised
before anything changed: no parameter value, optimizer state, step count or file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from llm_from_scratch.errors import StructuredError


class OptimizerError(StructuredError):
    """Base class of every error raised by :mod:`llm_from_scratch.optim`.

    Also importable from ``optim.validation`` and ``optim.sgd``. Its ``detail`` property is the
    message (the hyperparameter errors word it without the optimizer).
    """

    @property
    def detail(self) -> str:
        """The message as free text (see the hyperparameter errors for their wording)."""
        return str(self)


class _WordedRule:
    """The ``detail`` of a hyperparameter error: the rule without the optimizer's name, the
    argument in words (``learning rate must be finite and positive, got 0``)."""

    name: str
    requirement: str
    value: object

    @property
    def detail(self) -> str:
        """The rule without the optimizer's name, the argument in words."""
        return f"{self.name.replace('_', ' ')} must be {self.requirement}, got {self.value!r}"


class HyperparameterTypeError(_WordedRule, OptimizerError, TypeError):
    """A hyperparameter of the wrong type: not a real number (``bool`` included), or ``betas`` that
    are not a pair, or a flag that is not a ``bool``.

    A learning rate, ``eps``, ``weight_decay``, ``initial_accumulator`` or beta that is not a real
    number (a ``bool``, a ``str``, ``None``, a ``Decimal``, a NumPy array; NumPy scalars and
    ``Fraction`` are real numbers), ``betas`` that are not a pair, or a ``decoupled`` that is not a
    ``bool``. ``requirement`` is what the argument must be: the range of a real hyperparameter
    (``finite and positive`` for a learning rate), ``a pair of real numbers`` or ``a bool``.
    ``detail`` (a property, not a field) words it without the optimizer: ``learning rate must be
    finite and positive, got True``.
    """

    template = "{optimizer} {name} must be {requirement}, got {value!t} {value!r}"
    optimizer: str
    name: str
    requirement: str
    value: object


class HyperparameterValueError(_WordedRule, OptimizerError, ValueError):
    """A real hyperparameter outside its range (NaN and infinities included), or one that
    ``float()`` cannot convert (``10**400``).

    Read once with ``float()``: a learning rate that is not finite and positive; an ``eps``,
    ``weight_decay`` or ``initial_accumulator`` that is not finite and at least zero; a beta outside
    ``[0, 1)`` (``name`` is ``betas[0]`` or ``betas[1]``). Every optimizer checks its learning rate
    with ``checked_learning_rate`` in ``optim.validation``. ``detail`` as for
    :class:`HyperparameterTypeError`.
    """

    template = "{optimizer} {name} must be {requirement}, got {value!r}"
    optimizer: str
    name: str
    requirement: str
    value: object


class ParameterListError(OptimizerError, TypeError, ValueError):
    """``parameters`` that are not an iterable of parameters, or hold none.

    ``rule`` ``type``: not an iterable, or a single ``NamedParameter``, ``TensorValue`` or
    string. ``empty``: an iterable of no parameter (PyTorch's ``ValueError``), such as the
    ``parameters()`` of a frozen layer: ``detail`` then says which table is frozen and that
    ``freeze=False`` makes it trainable.
    """

    template_key = "rule"
    template: ClassVar[Mapping[str, str]] = {
        "type": "{optimizer} needs an iterable of parameters, got {value_type}",
        "empty": "{optimizer} needs at least one parameter, got an empty {value_type}{detail}",
    }
    optimizer: str
    value_type: str
    rule: Literal["type", "empty"] = "type"
    detail: str = ""


class ParameterEntryError(OptimizerError, TypeError):
    """An entry of ``parameters`` that is neither a ``NamedParameter`` nor a parameter leaf.

    ``got`` is ``a TensorValue of kind constant`` (or ``operation``) for a ``TensorValue``, else the
    entry's type name; for a ``FrozenTable`` or a constant it also says how to make a frozen
    table trainable (``freeze=False``).
    """

    template = (
        "{optimizer} parameter {position} must be a NamedParameter or a parameter leaf, got {got}"
    )
    optimizer: str
    position: int
    got: str


class DuplicateParameterError(OptimizerError, ValueError):
    """The same leaf twice, or two parameters under one state name.

    ``repeated`` is ``leaf`` for the same leaf, ``name`` for two parameters with one state-dict
    name; ``name`` is that name (a bare leaf is named by its position).
    """

    template = (
        "{optimizer} parameter {position} repeats the {repeated} of parameter {first} ({name})"
    )
    optimizer: str
    position: int
    repeated: str
    first: int
    name: str


class OutputTypeError(OptimizerError, TypeError):
    """``backward_step`` on something that is not a ``TensorValue``."""

    template = "{optimizer} backward_step needs a TensorValue output, got {value_type}"
    optimizer: str
    value_type: str


class NonFiniteStepError(OptimizerError, ArithmeticError):
    """A step that would make a parameter value or an optimizer state NaN or infinite.

    ``state`` is ``value`` for the parameter itself, else the state name (``exp_avg``,
    ``exp_avg_sq``, ``sum``); ``index`` is the first such flat index of the first such parameter.
    Every parameter is checked before any is written, so no value, state, gradient or step count
    changed.
    """

    template = (
        "the {optimizer} step would make {state} of {parameter} non-finite at flat index "
        "{index} ({value}); nothing changed"
    )
    optimizer: str
    parameter: str
    state: str
    index: int
    value: float


class StateMappingError(OptimizerError, TypeError):
    """``load_state_dict`` with something that is not a mapping."""

    template = "{optimizer} state must be a mapping of names to arrays, got {value_type}"
    optimizer: str
    value_type: str


class StateError(OptimizerError, ValueError):
    """A state (a mapping for ``load_state_dict``, or a state file's tensors) that does not fit
    the optimizer: a key it keeps but the state lacks, or one it does not know; a value that is
    not a NumPy array (a masked one included); an array of another shape or dtype; or a value
    the optimizer could never have produced (NaN or infinity, a negative sum of squares or
    ``step``). ``requirement`` is the rule broken, ``actual`` what the state holds instead.
    Also ``step()`` or ``backward_step()`` when the step count is already ``2**63 - 1``, the
    largest ``step`` a state dict holds (an ``int64``): the step is refused before anything
    changes (``key`` is ``step``), so ``state_dict()`` and ``save_state`` always fit it."""

    template = "{optimizer} state {key!r} must {requirement}, got {actual}"
    optimizer: str
    key: object
    requirement: str
    actual: object


class NotAnOptimizerError(OptimizerError, TypeError):
    """``save_state`` or ``load_state`` given something that is not an optimizer."""

    template = "{function} needs an optimizer (SGD, Adagrad, Adam or AdamW), got {value_type}"
    function: str
    value_type: str


class StateFileError(OptimizerError, ValueError):
    """A state file saved from another optimizer: its ``__metadata__`` entry ``key`` (the kind,
    ``optimizer``, or a hyperparameter) is missing (``actual`` is None) or differs from what
    ``save_state`` writes for this optimizer (``expected``: the kind, or Python's shortest
    ``repr`` of the float, so one unit in the last place differs)."""

    template = (
        "{optimizer} cannot load the state in {path}: its __metadata__ {key!r} must be "
        "{expected!r}, got {actual!r}"
    )
    optimizer: str
    path: str
    key: str
    expected: str
    actual: str | None


# Older names, kept so that `except OldName:` still works (docs/errors.md lists them).
StateKeyError = StateArrayError = StateShapeError = StateDtypeError = StateError
StateValueError = StateError
StateFileMetadataError = StateKindError = StateHyperparameterError = StateFileError
