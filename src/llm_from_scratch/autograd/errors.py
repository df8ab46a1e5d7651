"""The exception family of :mod:`llm_from_scratch.autograd`: every error the tape can raise."""

from __future__ import annotations

from llm_from_scratch.tensor.storage import Shape


def format_shape(shape: Shape) -> str:
    """Print a shape as its extents joined by ``x`` (``4x2``; a scalar prints as ``scalar``)."""
    return "x".join(str(extent) for extent in shape) if shape else "scalar"


class TensorAutodiffError(Exception):
    """Base class of every error raised by the tape and its operations."""


class SeedShapeMismatchError(TensorAutodiffError, ValueError):
    """A backward seed whose shape is not the output's shape."""

    def __init__(self, expected: Shape, actual: Shape) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"backward seed shape {list(actual)} does not match output shape {list(expected)}"
        )


class SeedTypeError(TensorAutodiffError, TypeError):
    """A backward seed that is neither a Tensor nor a real-valued NumPy array."""

    def __init__(self, seed: object) -> None:
        self.seed_type = type(seed).__name__
        super().__init__(
            f"backward seed must be a Tensor or a real NumPy array, got {self.seed_type}"
        )


class NonFiniteSeedError(TensorAutodiffError, ValueError):
    """A backward seed holding NaN or an infinity."""

    def __init__(self, index: int, value: float) -> None:
        self.index = index
        self.value = value
        super().__init__(f"backward seed value {value} at flat index {index} is not finite")


class RetentionTypeError(TensorAutodiffError, TypeError):
    """A ``retention`` argument that is not a ``GraphRetention`` member."""

    def __init__(self, retention: object) -> None:
        self.retention = retention
        super().__init__(
            f"retention must be GraphRetention.RETAIN or GraphRetention.RELEASE, got {retention!r}"
        )


class NonFiniteGradientError(TensorAutodiffError, ArithmeticError):
    """A VJP or an accumulated gradient produced NaN or an infinity; nothing was stored."""

    def __init__(self, operation: str, index: int, value: float) -> None:
        self.operation = operation
        self.index = index
        self.value = value
        super().__init__(
            f"the {operation} gradient has non-finite value {value} at flat index {index}; "
            "no stored gradient changed"
        )


class NotScalarOutputError(TensorAutodiffError, ValueError):
    """``backward()`` without a seed on an output that is not a scalar."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        super().__init__(
            f"backward() without a seed needs a scalar output, got shape {list(shape)}; "
            "use backward_with_seed"
        )


class GraphReleasedError(TensorAutodiffError, RuntimeError):
    """A backward pass that reaches an operation whose saved facts were released."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(f"the {operation} operation tape has been released")


class ReleasedOperandError(TensorAutodiffError, RuntimeError):
    """A new operation built on an operand that reaches a released tape."""

    def __init__(self, operation: str, operand: str) -> None:
        self.operation = operation
        self.operand = operand
        super().__init__(
            f"cannot build {operation}: operand {operand} reaches a released operation tape"
        )


class StaleValueError(TensorAutodiffError, RuntimeError):
    """A parameter whose values changed after an operation recorded them."""

    def __init__(self, operation: str, operand: str, recorded: int, current: int) -> None:
        self.operation = operation
        self.operand = operand
        self.recorded_revision = recorded
        self.current_revision = current
        super().__init__(
            f"the {operation} operation recorded operand {operand} at value revision "
            f"{recorded}, but its values are now at revision {current}; run the forward again"
        )


class NotAParameterError(TensorAutodiffError, TypeError):
    """A gradient operation (``zero_grad``, an optimizer step) on a value that is no parameter."""

    def __init__(self, action: str, kind: str) -> None:
        self.action = action
        self.kind = kind
        super().__init__(f"{action} needs a parameter, but this value is a {kind}")


class OperandShapeMismatchError(TensorAutodiffError, ValueError):
    """Element-wise operands of different shapes (no broadcasting on the tape)."""

    def __init__(self, operation: str, left: Shape, right: Shape) -> None:
        self.operation = operation
        self.left = left
        self.right = right
        super().__init__(
            f"{operation} needs operands of one shape, got {list(left)} and {list(right)}"
        )


class OperandDtypeMismatchError(TensorAutodiffError, TypeError):
    """Operands of different float dtypes (nothing is upcast silently)."""

    def __init__(self, operation: str, left: str, right: str) -> None:
        self.operation = operation
        self.left = left
        self.right = right
        super().__init__(f"{operation} needs operands of one dtype, got {left} and {right}")


class OperandTypeError(TensorAutodiffError, TypeError):
    """An operand that is neither a TensorValue nor a Tensor."""

    def __init__(self, operation: str, operand: object) -> None:
        self.operation = operation
        self.operand_type = type(operand).__name__
        super().__init__(
            f"{operation} needs a TensorValue or Tensor operand, got {self.operand_type}"
        )


class ReshapeCountMismatchError(TensorAutodiffError, ValueError):
    """A reshape to a shape with another element count."""

    def __init__(self, source: Shape, target: Shape, expected: int, actual: int) -> None:
        self.source = source
        self.target = target
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"cannot reshape {list(source)} ({expected} values) to {list(target)} ({actual} values)"
        )


class InvalidShapeError(TensorAutodiffError, ValueError):
    """A shape argument whose checked layout failed; ``__cause__`` is the tensor error."""

    def __init__(self, what: str, cause: Exception) -> None:
        self.what = what
        super().__init__(f"invalid {what}: {cause}")


class GatherTableRankError(TensorAutodiffError, ValueError):
    """A row gather on a table that is not rank two."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        super().__init__(f"row gather needs a rank-two table, got rank {rank}")


class GatherIndexCountError(TensorAutodiffError, ValueError):
    """A row gather whose index count differs from the index shape's element count."""

    def __init__(self, expected: int, actual: int) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"gather index shape needs {expected} IDs, but received {actual}")


class GatherIndexOutOfBoundsError(TensorAutodiffError, IndexError):
    """A row gather index that is not a row of the table."""

    def __init__(self, index: int, position: int, rows: int) -> None:
        self.index = index
        self.position = position
        self.rows = rows
        super().__init__(
            f"gather ID {index} at flat position {position} is out of bounds for {rows} rows"
        )


class GatherIndexTypeError(TensorAutodiffError, TypeError):
    """A row gather index that is not an integer (bools and floats are not)."""

    def __init__(self, position: int, value: object) -> None:
        self.position = position
        self.value = value
        super().__init__(
            f"gather ID at flat position {position} must be an integer, got "
            f"{type(value).__name__} {value!r}"
        )


class IndexContainerError(TensorAutodiffError, TypeError):
    """Indices that are not a flat sequence or a one-dimensional integer array."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"indices must be a flat sequence of integers: {detail}")


class OutputAllocationError(TensorAutodiffError, MemoryError):
    """An operation's output (or a gradient) could not be allocated; nothing changed."""

    def __init__(self, operation: str, elements: int) -> None:
        self.operation = operation
        self.elements = elements
        super().__init__(f"could not allocate {elements} values for the {operation} output")


class NotRecordedError(TensorAutodiffError, RuntimeError):
    """A backward pass from a constant: nothing on the tape leads to a parameter."""

    def __init__(self) -> None:
        super().__init__(
            "backward needs a parameter or a recorded operation result, but this value is a "
            "constant (built from constants only, or under no_grad())"
        )
