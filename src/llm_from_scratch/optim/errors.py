"""The exception family of :mod:`llm_from_scratch.optim`: every error an optimizer, or a
function of its state files, can raise.

Each error about an optimizer names it (``SGD``, ``Adagrad``, ``Adam``, ``AdamW``) in
``optimizer``, and an error about a state file names the file (``path``). Every one is raised
before anything changed: no parameter value, optimizer state, step count or file.
"""

from __future__ import annotations

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.tensor.storage import Shape


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


class ParameterListError(OptimizerError, TypeError):
    """``parameters`` that are not an iterable of parameters: not an iterable, or a single
    ``NamedParameter``, ``TensorValue`` or string."""

    template = "{optimizer} needs an iterable of parameters, got {value_type}"
    optimizer: str
    value_type: str


class ParameterEntryError(OptimizerError, TypeError):
    """An entry of ``parameters`` that is neither a ``NamedParameter`` nor a parameter leaf.

    ``got`` is ``a TensorValue of kind constant`` (or ``operation``) for a ``TensorValue``, else the
    entry's type name.
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


class StateKeyError(OptimizerError, LookupError):
    """A state key the optimizer needs but the mapping lacks, or one it does not know."""

    template = "{optimizer} state key {key!r} is {problem}"
    optimizer: str
    key: object
    problem: str


class StateArrayError(OptimizerError, TypeError):
    """A state value that is not a NumPy array."""

    template = "{optimizer} state {key!r} must be a NumPy array, got {value_type}"
    optimizer: str
    key: str
    value_type: str


class StateShapeError(OptimizerError, ValueError):
    """A state array of the wrong shape."""

    template = "{optimizer} state {key!r} must have shape {expected}, got {actual}"
    optimizer: str
    key: str
    expected: Shape
    actual: Shape


class StateDtypeError(OptimizerError, TypeError):
    """A state array of the wrong dtype."""

    template = "{optimizer} state {key!r} must have dtype {expected}, got {actual}"
    optimizer: str
    key: str
    expected: str
    actual: str


class StateValueError(OptimizerError, ValueError):
    """A state array holding a value the optimizer could never have produced."""

    template = "{optimizer} state {key!r} must be {requirement}; flat index {index} holds {value}"
    optimizer: str
    key: str
    requirement: str
    index: int
    value: object


class NotAnOptimizerError(OptimizerError, TypeError):
    """``save_state`` or ``load_state`` given something that is not an optimizer."""

    template = "{function} needs an optimizer (SGD, Adagrad, Adam or AdamW), got {value_type}"
    function: str
    value_type: str


class StateFileMetadataError(OptimizerError, ValueError):
    """A state file whose ``__metadata__`` lacks an entry that ``save_state`` writes: the
    optimizer's kind (a file of parameters, or one another tool wrote) or a hyperparameter."""

    template = (
        "{optimizer} state file {path} has no {key!r} in its __metadata__ (save_state writes "
        "the optimizer's kind and hyperparameters there)"
    )
    optimizer: str
    path: str
    key: str


class StateKindError(OptimizerError, ValueError):
    """A state file saved from another kind of optimizer (``saved``)."""

    template = "{optimizer} cannot load the state in {path}, saved from {saved!r}"
    optimizer: str
    path: str
    saved: str


class StateHyperparameterError(OptimizerError, ValueError):
    """A state file saved with another value of a hyperparameter.

    ``expected`` is the optimizer's value and ``actual`` the file's, each as the file writes
    it (Python's shortest ``repr`` of the float, which reads back as the same float).
    """

    template = "{optimizer} {name} is {expected}, but the state in {path} was saved with {actual!r}"
    optimizer: str
    path: str
    name: str
    expected: str
    actual: str
