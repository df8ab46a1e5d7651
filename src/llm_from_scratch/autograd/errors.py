"""The exception family of :mod:`llm_from_scratch.autograd`: every error the tape can raise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal, TypeAlias

from llm_from_scratch.errors import StructuredError
from llm_from_scratch.tensor.storage import Shape


class TensorAutodiffError(StructuredError):
    """Base class of every error raised by the tape and its operations."""


class SeedShapeMismatchError(TensorAutodiffError, ValueError):
    """A backward seed whose shape is not the output's shape."""

    template = "backward seed shape {actual} does not match output shape {expected}"
    expected: Shape
    actual: Shape


class SeedTypeError(TensorAutodiffError, TypeError):
    """A backward seed that is neither a Tensor nor a real-valued NumPy array."""

    template = "backward seed must be a Tensor or a real NumPy array, got {seed_type}"
    seed_type: str


class NonFiniteSeedError(TensorAutodiffError, ValueError):
    """A backward seed holding NaN or an infinity."""

    template = "backward seed value {value} at flat index {index} is not finite"
    index: int
    value: float


class NonFiniteParameterError(TensorAutodiffError, ValueError):
    """A parameter leaf built from values with a NaN or an infinity (the first one in flat
    order): every later step would blame itself for it."""

    template = "parameter value {value} at flat position {position} is not finite"
    position: int
    value: float


class RetentionTypeError(TensorAutodiffError, TypeError):
    """A ``retention`` argument that is not a ``GraphRetention`` member."""

    template = (
        "retention must be GraphRetention.RETAIN or GraphRetention.RELEASE, got {retention!r}"
    )
    retention: object


class NonFiniteGradientError(TensorAutodiffError, ArithmeticError):
    """A VJP or an accumulated gradient produced NaN or an infinity; nothing was stored."""

    template = (
        "the {operation} gradient has non-finite value {value} at flat index {index}; "
        "no stored gradient changed"
    )
    operation: str
    index: int
    value: float


class NotScalarOutputError(TensorAutodiffError, ValueError):
    """``backward()`` without a seed on an output that is not a scalar."""

    template = (
        "backward() without a seed needs a scalar output, got shape {shape}; use backward_with_seed"
    )
    shape: Shape


class GraphReleasedError(TensorAutodiffError, RuntimeError):
    """A backward pass that reaches an operation whose saved facts were released."""

    template = "the {operation} operation tape has been released"
    operation: str


class ReleasedOperandError(TensorAutodiffError, RuntimeError):
    """A new operation built on an operand that reaches a released tape."""

    template = "cannot build {operation}: operand {operand} reaches a released operation tape"
    operation: str
    operand: str


class StaleValueError(TensorAutodiffError, RuntimeError):
    """A parameter whose values changed after an operation recorded them."""

    template = (
        "the {operation} operation recorded operand {operand} at value revision "
        "{recorded_revision}, but its values are now at revision {current_revision}; "
        "run the forward again"
    )
    operation: str
    operand: str
    recorded_revision: int
    current_revision: int


class NotAParameterError(TensorAutodiffError, TypeError):
    """A gradient operation (``zero_grad``, an optimizer step) on a value that is no parameter."""

    template = "{action} needs a parameter, but this value is a {kind}"
    action: str
    kind: str


class OperandShapeMismatchError(TensorAutodiffError, ValueError):
    """Element-wise operands of different shapes (no broadcasting on the tape)."""

    template = "{operation} needs operands of one shape, got {left} and {right}"
    operation: str
    left: Shape
    right: Shape


class OperandDtypeMismatchError(TensorAutodiffError, TypeError):
    """Operands of different float dtypes (nothing is upcast silently)."""

    template = "{operation} needs operands of one dtype, got {left} and {right}"
    operation: str
    left: str
    right: str


class OperandTypeError(TensorAutodiffError, TypeError):
    """An operand that is neither a TensorValue nor a Tensor."""

    template = "{operation} needs a TensorValue or Tensor operand, got {operand_type}"
    operation: str
    operand_type: str


class ReshapeCountMismatchError(TensorAutodiffError, ValueError):
    """A reshape to a shape with another element count."""

    template = "cannot reshape {source} ({expected} values) to {target} ({actual} values)"
    source: Shape
    target: Shape
    expected: int
    actual: int


class InvalidShapeError(TensorAutodiffError, ValueError):
    """A shape argument whose checked layout failed; ``cause`` is the tensor error."""

    template = "invalid {what}: {cause}"
    what: str
    shape: object
    cause: Exception


# Row lookups: the table and the IDs -----------------------------------------------------------

Checker: TypeAlias = Literal["embedding", "gather"]
"""Who checked the IDs, which chooses the wording: ``embedding`` (the embedding layers, their
functional forms and the bags: token wording) or ``gather`` (``TensorValue.gather_rows``)."""


class EmbeddingError(StructuredError):
    """Base class of every error of a row lookup: those the embedding layers raise
    (:mod:`llm_from_scratch.nn`) and the table and ID errors below, which
    ``TensorValue.gather_rows`` raises too (they are also ``TensorAutodiffError``)."""


class TableRankError(EmbeddingError, TensorAutodiffError, ValueError):
    """A lookup table that is not rank two."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": "embedding table must have rank two, got rank {rank}",
        "gather": "row gather needs a rank-two table, got rank {rank}",
    }
    rank: int
    checker: Checker = "embedding"


class TokenShapeError(EmbeddingError, InvalidShapeError):
    """A token shape whose checked layout failed (``cause`` is the tensor error), or whose
    output shape ``shape + [d]`` does not fit, found before any ID is read (``what`` is
    ``token-ID shape``). ``TensorValue.gather_rows`` reports the same failures as the
    :class:`InvalidShapeError` it derives from (``what``: ``gather index shape`` or ``row gather
    output shape``, with the output shape)."""

    @property
    def token_shape(self) -> object:
        """The shape argument, the same as :attr:`shape` (the layer's name)."""
        return self.shape


class TokenIdContainerError(EmbeddingError, TensorAutodiffError, TypeError):
    """IDs that are not a flat sequence or 1-D array (a flat call), not a regular nest of
    lists (the layer call: ragged, or ``limit`` levels deep), or a masked array."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": "token IDs must be integers in a regular array: {detail}",
        "gather": "indices must be a flat sequence of integers: {detail}",
    }
    detail: str
    checker: Checker = "embedding"


class TokenIdNestingError(TokenIdContainerError):
    """Nested lists deeper than an array can have axes (``limit``), for example a list that
    contains itself."""

    limit: int = 0


class TokenCountMismatchError(EmbeddingError, TensorAutodiffError, ValueError):
    """A flat ID count that differs from the shape's element count."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": "token-ID shape needs {expected} IDs, but received {actual}",
        "gather": "gather index shape needs {expected} IDs, but received {actual}",
    }
    expected: int
    actual: int
    checker: Checker = "embedding"


class TokenIdTypeError(EmbeddingError, TensorAutodiffError, TypeError):
    """The first ID, in flat order, that is not an integer (bools and floats are not)."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": (
            "token ID at flat position {position} must be an integer, got {value!t} {value!r}"
        ),
        "gather": (
            "gather ID at flat position {position} must be an integer, got {value!t} {value!r}"
        ),
    }
    position: int | None  # None only for TokenIdDtypeError: an empty array has no position
    value: object
    checker: Checker = "embedding"


class TokenIdDtypeError(TokenIdTypeError):
    """An empty ID array of a non-integer dtype: there is no ID to name, so the dtype is named.

    ``position`` and ``value`` are None (an empty array has neither).
    """

    template: ClassVar[Mapping[str, str]] = {
        "embedding": "token IDs must be integers, got an empty array of dtype {dtype}",
        "gather": "gather IDs must be integers, got an empty array of dtype {dtype}",
    }
    dtype: str = ""


class TokenIdOutOfBoundsError(EmbeddingError, TensorAutodiffError, IndexError):
    """The first ID, in flat order, outside ``[0, V)`` (negative IDs included)."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": (
            "token ID {id} at flat position {position} is out of bounds for "
            "vocabulary size {vocabulary_size}"
        ),
        "gather": "gather ID {id} at flat position {position} is out of bounds for "
        "{vocabulary_size} rows",
    }
    position: int
    id: int
    vocabulary_size: int
    checker: Checker = "embedding"

    @property
    def rows(self) -> int:
        """The table's rows, the same as :attr:`vocabulary_size` (the gather's name)."""
        return self.vocabulary_size

    @property
    def index(self) -> int:
        """The offending ID, the same as :attr:`id` (its earlier name)."""
        return self.id


GatherTableRankError = TableRankError
GatherIndexCountError = TokenCountMismatchError
GatherIndexOutOfBoundsError = TokenIdOutOfBoundsError
GatherIndexTypeError = TokenIdTypeError
GatherIndexDtypeError = TokenIdDtypeError
IndexContainerError = TokenIdContainerError
"""Earlier names of the classes above, kept so that existing ``except`` clauses still work."""


class OutputAllocationError(TensorAutodiffError, MemoryError):
    """An operation's output (or a gradient) could not be allocated; nothing changed."""

    template = "could not allocate {elements} values for the {operation} output"
    operation: str
    elements: int


class IndexAllocationError(EmbeddingError, OutputAllocationError):
    """The converted index buffer (or the room for a nest's flat IDs, or a bag's offsets) could
    not be allocated, before any ID is read."""

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {  # type: ignore[assignment]
        "embedding": "could not reserve {elements} converted embedding indices",
        "gather": "could not allocate {elements} values for the {operation} output",
    }
    checker: Checker = "embedding"


class NotRecordedError(TensorAutodiffError, RuntimeError):
    """A backward pass from a constant: nothing on the tape leads to a parameter."""

    template = (
        "backward needs a parameter or a recorded operation result, but this value is a "
        "constant (built from constants only, or under no_grad())"
    )


class UnpicklableOperationError(TensorAutodiffError, TypeError):
    """``pickle`` or ``copy.deepcopy`` of an operation result: a recorded graph holds its
    parents at the revisions it read and the VJPs that run on them, which no copy could keep
    (``action`` is ``pickle`` or ``deep-copy``)."""

    template = (
        "cannot {action} the result of the {operation} operation: only parameter and constant "
        "leaves pickle and deep-copy; use value_snapshot() for its values"
    )
    action: str
    operation: str


class LeafStateError(TensorAutodiffError, ValueError):
    """A pickled leaf whose state no leaf can have (a crafted or damaged pickle); ``part`` names
    what is wrong in it."""

    template = "cannot restore a pickled leaf: {part} {detail}"
    part: str
    detail: str
