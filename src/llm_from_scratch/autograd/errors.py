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
    """A backward seed that is neither a Tensor nor a real-valued NumPy array.

    A list, ``None``, a ``str``, a masked array, or an array of complex, object or structured dtype.
    """

    template = "backward seed must be a Tensor or a real NumPy array, got {seed_type}"
    seed_type: str


class NonFiniteSeedError(TensorAutodiffError, ValueError):
    """A backward seed holding NaN or an infinity.

    The first one in flat order, after conversion to the output's dtype (a float64 ``1e300`` seed of
    a float32 output is ``inf``).
    """

    template = "backward seed value {value} at flat index {index} is not finite"
    index: int
    value: float


class NonFiniteParameterError(TensorAutodiffError, ValueError):
    """A parameter leaf built from values with a NaN or an infinity: every later step would blame
    itself for it.

    ``TensorValue.parameter`` (and so ``NamedParameter.from_tensor``, after the name), with the
    first such value in flat order; ``from_pretrained`` with such a table, frozen or not; a
    ``FrozenTable`` whose constant holds one, built or unpickled (a crafted pickle: a frozen table
    holds what a parameter can hold); unpickling a parameter leaf whose values hold one (a crafted
    pickle). Every parameter leaf is finite:
    Xavier tables are, an optimizer step that would leave a NaN or infinity changes nothing, and an
    unpickled leaf is checked, so ``NamedParameter.from_value`` needs no check of its own.
    """

    template = "parameter value {value} at flat position {position} is not finite"
    position: int
    value: float


class RetentionTypeError(TensorAutodiffError, TypeError):
    """A ``retention`` argument that is not a ``GraphRetention`` member (the string
    ``"release"``, for example)."""

    template = (
        "retention must be GraphRetention.RETAIN or GraphRetention.RELEASE, got {retention!r}"
    )
    retention: object


class NonFiniteGradientError(TensorAutodiffError, ArithmeticError):
    """A VJP or an accumulated gradient produced NaN or an infinity; nothing was stored.

    A VJP, a sum of pass gradients, or a pass gradient added to the stored one (``operation`` is
    ``accumulated parameter``) has a NaN or an infinity, for example repeated IDs whose upstream
    rows overflow; ``index`` is the first such dense flat index. Also unpickling a parameter leaf
    whose stored gradient holds one (``operation`` is ``restored``; a crafted pickle), checked after
    its layout.
    """

    template = (
        "the {operation} gradient has non-finite value {value} at flat index {index}; "
        "no stored gradient changed"
    )
    operation: str
    index: int
    value: float


NumberAction: TypeAlias = Literal["backward()", "item()", "float()", "int()", "bool()", "format()"]


class NotScalarOutputError(TensorAutodiffError, ValueError):
    """``backward()`` without a seed on an output that is not a scalar; or a value of more or
    less than one element read as one number.

    ``action`` says which: ``backward()``, or ``item()``, ``float()``, ``int()``, ``bool()`` (``if
    value:``) or ``format()`` with a format spec (``f"{loss:.4f}"``) on a value whose shape holds
    another number of elements than one (PyTorch reads a one-element tensor of any shape, and so
    does the tape).
    """

    template_key = "action"
    template: ClassVar[Mapping[str, str]] = {
        "backward()": (
            "backward() without a seed needs a scalar output, got shape {shape}; "
            "use backward_with_seed"
        ),
        **{
            action: "{action} needs a value of one element, got shape {shape}; "
            "use numpy() for its values"
            for action in ("item()", "float()", "int()", "bool()", "format()")
        },
    }
    shape: Shape
    action: NumberAction = "backward()"


class GraphReleasedError(TensorAutodiffError, RuntimeError):
    """A backward pass that reaches an operation whose saved facts were released.

    An earlier pass with ``GraphRetention.RELEASE`` freed the operation; of several ``RELEASE``
    passes over one graph on several threads, each either finishes or raises this.
    """

    template = "the {operation} operation tape has been released"
    operation: str


class ReleasedOperandError(TensorAutodiffError, RuntimeError):
    """A new operation built on an operand that reaches a released tape (one a ``RELEASE`` pass
    freed)."""

    template = "cannot build {operation}: operand {operand} reaches a released operation tape"
    operation: str
    operand: str


class StaleValueError(TensorAutodiffError, RuntimeError):
    """A parameter whose values changed after an operation recorded them.

    The values changed in place (an optimizer step, ``load_parameters(..., into=)``, a lookup or bag
    with ``max_norm`` that renormalized a row) after an operation recorded the parameter, and a
    backward pass reaches that operation; also when a step on another thread changes such a
    parameter while the pass computes (the pass then stores nothing). Run the forward again.
    """

    template = (
        "the {operation} operation recorded operand {operand} at value revision "
        "{recorded_revision}, but its values are now at revision {current_revision}; "
        "run the forward again"
    )
    operation: str
    operand: str
    recorded_revision: int
    current_revision: int


FROZEN_HINT = (
    "a frozen table's leaf and its lookups are constants: "
    "build the layer with freeze=False to train it"
)
"""What a constant met where a parameter was meant most often is, and what makes it one."""


class NotAParameterError(TensorAutodiffError, TypeError):
    """A gradient operation on a value that is no parameter: ``zero_grad()`` on a constant (a
    frozen table's leaf, for example: the message says that ``freeze=False`` makes it a
    parameter) or on an operation result."""

    template_key = "kind"
    template: ClassVar[Mapping[str, str]] = {
        "constant": f"{{action}} needs a parameter, but this value is a constant ({FROZEN_HINT})",
        "operation": "{action} needs a parameter, but this value is an operation result",
    }
    action: str
    kind: str


class OperandShapeMismatchError(TensorAutodiffError, ValueError):
    """Operands whose shapes do not pair up (no broadcasting on the tape).

    ``add``, ``sub`` or ``mul`` of operands of different shapes; ``matvec`` of matrices ``left`` and
    vectors ``right`` unless the matrices have at least two axes ``[..., M, d]`` and the vectors
    the shape ``[..., d]`` (the same leading axes, the same width).
    """

    template_key = "operation"
    template: ClassVar[Mapping[str, str]] = {
        "add": "add needs operands of one shape, got {left} and {right}",
        "sub": "sub needs operands of one shape, got {left} and {right}",
        "mul": "mul needs operands of one shape, got {left} and {right}",
        "matvec": (
            "matvec needs matrices [..., M, d] and vectors [..., d] with the same leading axes "
            "and width, got {left} and {right}"
        ),
    }
    operation: str
    left: Shape
    right: Shape


class OperandDtypeMismatchError(TensorAutodiffError, TypeError):
    """Operands of different float dtypes (nothing is upcast silently): ``add``, ``mul`` or
    ``matvec`` of float64 and float32."""

    template = "{operation} needs operands of one dtype, got {left} and {right}"
    operation: str
    left: str
    right: str


class OperandTypeError(TensorAutodiffError, TypeError):
    """An operand that is none of those an operation takes.

    ``add``, ``sub`` or ``mul`` (``+``, ``-``, ``*``) with something that is neither a
    ``TensorValue``, a ``Tensor``, a real NumPy array (float32, float64 or integers; not a masked
    one) nor a real number (a ``bool`` is no number here; an ``int`` beyond float64 is refused
    too); ``div`` (``/``) with anything but a real number;
    ``matvec`` with anything but the first three; ``TensorValue.parameter`` or ``constant``
    with something other than a ``Tensor`` (``operation`` is ``a leaf``).
    """

    template_key = "operation"
    template: ClassVar[Mapping[str, str]] = {
        "add": "add needs a TensorValue, Tensor, NumPy array or real number, got {operand_type}",
        "sub": "sub needs a TensorValue, Tensor, NumPy array or real number, got {operand_type}",
        "mul": "mul needs a TensorValue, Tensor, NumPy array or real number, got {operand_type}",
        "div": "div needs a real number (the tape divides by no value), got {operand_type}",
        "matvec": "matvec needs a TensorValue, Tensor or NumPy array, got {operand_type}",
        "a leaf": "a leaf needs a Tensor, got {operand_type}",
    }
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
    """A shape argument whose checked layout failed; ``cause`` is the tensor error.

    ``what`` names the argument: ``reshape target shape`` (``TooManyAxesError`` for ``reshape((1,) *
    70)``; also a zero-element target NumPy cannot describe, ``empty.reshape((2**62, 0))``, caused
    by a ``ShapeOverflowError``) or ``gather index shape``. From ``gather_rows``, before any index
    is read, also an output shape ``index_shape + [d]`` that does not fit: too many axes, a layout
    overflow, or no elements and NumPy cannot describe it (``what`` is ``row gather output shape``
    and ``shape`` that output shape). The embedding layers report the same failures of a token shape
    as :class:`TokenShapeError`.
    """

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
    """A lookup table that is not rank two.

    ``from_parameter`` or ``from_pretrained`` of either layer, ``functional.embedding`` or
    ``embedding_bag`` with such a table (``checker`` is ``embedding``); ``TensorValue.gather_rows``
    on a value that is not rank two (``gather``).
    """

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": "embedding table must have rank two, got rank {rank}",
        "gather": "row gather needs a rank-two table, got rank {rank}",
    }
    rank: int
    checker: Checker = "embedding"


class TokenShapeError(EmbeddingError, InvalidShapeError):
    """A token shape whose checked layout failed, or whose output shape does not fit.

    ``what`` is ``token-ID shape`` and ``shape`` (also :attr:`token_shape`) the token shape. Its
    layout fails (``cause`` is the ``TensorError``: ``ShapeTypeError``, ``TooManyAxesError``,
    ``NonIntegerExtentError``, ``NegativeExtentError``, ``ShapeOverflowError``); or, after the count
    and before any ID is read, the output shape ``token_shape + [d]`` does not fit: more than
    ``MAX_AXES`` axes, a layout overflow (``forward(np.broadcast_to(np.int8(0), (2**62,)), (2**31,
    2**31))`` on a width-2 table), or no elements and NumPy cannot describe it (``forward([],
    [2**62, 0])``); ``cause`` is then the ``TooManyAxesError`` or ``ShapeOverflowError`` of the
    output shape. ``TensorValue.gather_rows`` reports the same failures as the
    :class:`InvalidShapeError` this class derives from (``what``: ``gather index shape`` or ``row
    gather output shape``).
    """

    @property
    def token_shape(self) -> object:
        """The shape argument, the same as :attr:`shape` (the layer's name)."""
        return self.shape


class TokenIdContainerError(EmbeddingError, TensorAutodiffError, TypeError):
    """IDs that are not a flat sequence or 1-D array, or not a regular nest of lists.

    ``Embedding.forward``, or ``gather_rows`` (``checker`` is ``gather``), with IDs that are not a
    sequence or a one-dimensional array (``None``, an int, a set, a ``str``, a 2-D array); any
    lookup with a masked array (its mask marks missing IDs); nested lists given to the layer call, a
    functional form or a bag that are ragged (the first irregular place in row-major order).
    """

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": "token IDs must be integers in a regular array: {detail}",
        "gather": "indices must be a flat sequence of integers: {detail}",
    }
    detail: str
    checker: Checker = "embedding"


class TokenIdNestingError(TokenIdContainerError):
    """Nested lists deeper than an array can have axes (``limit``), for example a list that contains
    itself.

    The layer call, a functional form or a bag with lists nested more than ``limit`` (``MAX_AXES``,
    64) levels deep, found after at most ``limit`` levels along the first items.
    """

    limit: int = 0


class TokenCountMismatchError(EmbeddingError, TensorAutodiffError, ValueError):
    """A flat ID count that differs from the shape's element count.

    ``Embedding.forward``, or ``gather_rows`` (``checker`` is ``gather``), with an array's size or a
    sequence's ``len()`` other than the shape's element count, found before any ID is read
    (``[2**31, 2**31]`` with three IDs fails at once); also a sequence that yields another number of
    items than its ``len()`` (``actual`` is the number read, ``expected + 1`` when there were more).
    """

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {
        "embedding": "token-ID shape needs {expected} IDs, but received {actual}",
        "gather": "gather index shape needs {expected} IDs, but received {actual}",
    }
    expected: int
    actual: int
    checker: Checker = "embedding"


class TokenIdTypeError(EmbeddingError, TensorAutodiffError, TypeError):
    """The first ID, in flat order, that is not an integer (bools and floats are not).

    A ``bool``, ``float``, NaN, ``None``, ``str``, an ``Integral`` whose ``__index__`` fails, a list
    inside a flat ``forward`` call; a non-empty array of a non-integer dtype (bool, float, complex,
    string, datetime, structured) reports position 0 and its first value. Each ID is read once
    (``operator.index``), and that one value is checked and used. ``checker`` is ``gather`` when
    ``gather_rows`` read the IDs.
    """

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

    Float, bool, complex, str, datetime or structured, as PyTorch refuses an empty float index
    tensor; ``position`` and ``value`` are None (an empty array has neither). An empty object array
    holds no non-integer and is accepted, like an empty list. ``checker`` as for
    :class:`TokenIdTypeError`.
    """

    template: ClassVar[Mapping[str, str]] = {
        "embedding": "token IDs must be integers, got an empty array of dtype {dtype}",
        "gather": "gather IDs must be integers, got an empty array of dtype {dtype}",
    }
    dtype: str = ""


class TokenIdOutOfBoundsError(EmbeddingError, TensorAutodiffError, IndexError):
    """The first ID, in flat order, outside ``[0, V)`` (negative IDs included).

    IDs beyond 64 bits too. From ``gather_rows`` (``checker`` is ``gather``) the message counts the
    table's rows; :attr:`rows` and :attr:`index` read ``vocabulary_size`` and ``id`` under the
    gather's earlier names.
    """

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
    """An operation's output (or a gradient) could not be allocated; nothing changed.

    An operation's output (``operation`` names it: ``add``, ``reshape``, ``gather_rows``,
    ``embedding_bag``, ...), a backward pass's gradients or its seed converted to the output's dtype
    (``backward``), a leaf copy (``leaf copy``: when a leaf is built, pickled, unpickled or
    deep-copied, or ``from_pretrained`` copies a table, a stride-0 view whose logical size no array
    can hold included), a value snapshot (``value snapshot``),
    a parameter's dense zero gradient (``parameter gradient``), or a dense view of a row-sparse
    gradient (``gradient``, ``gradient snapshot``); nothing is recorded or changed. A lookup's index
    buffers raise the subclass :class:`IndexAllocationError`.
    """

    template = "could not allocate {elements} values for the {operation} output"
    operation: str
    elements: int


class IndexAllocationError(EmbeddingError, OutputAllocationError):
    """A lookup's converted index buffer could not be allocated, before any ID is read.

    The buffer for the IDs (``operation`` is ``embedding index conversion``; for example
    ``forward(range(2**61), [2**30, 2**31])``, or a stride-0 view such as
    ``np.broadcast_to(np.int8(0), (2**31, 2**31))`` on a width-1 table), the room for the flat IDs
    of nested lists or for the elements of an object array given to the layer call, a bag's offsets
    (``offsets conversion``), or the index buffer of ``gather_rows``
    (``gather index conversion``, ``checker`` ``gather``, worded as the
    :class:`OutputAllocationError` it also is).
    """

    template_key = "checker"
    template: ClassVar[Mapping[str, str]] = {  # type: ignore[assignment]
        "embedding": "could not reserve {elements} converted embedding indices",
        "gather": "could not allocate {elements} values for the {operation} output",
    }
    checker: Checker = "embedding"


class NotRecordedError(TensorAutodiffError, RuntimeError):
    """A backward pass from a constant: nothing on the tape leads to a parameter (the lookups
    of a frozen table are constants: the message says that ``freeze=False`` makes it
    trainable)."""

    template = (
        "backward needs a parameter or a recorded operation result, but this value is a "
        "constant: built from constants only (" + FROZEN_HINT + "), or under no_grad()"
    )


class NumpyFunctionError(TensorAutodiffError, TypeError):
    """A NumPy function or ufunc applied to a ``TensorValue`` that the tape does not run.

    NumPy's ``add`` and ``multiply`` called plainly (``np.multiply(value, w)``, and ``w * value``
    or ``np.float32(2) * value`` with a NumPy operand on the left) are the tape's ``add`` and
    ``mul``. Any other ufunc (``np.exp``, ``np.subtract``, ``np.matmul``), a ufunc method
    (``np.add.reduce``), ``add`` or ``multiply`` with a keyword (``out=``, ``dtype=``), and any
    NumPy function (``np.dot``, ``np.sum``, ``np.mean``, ``np.concatenate``, ``np.allclose``)
    would compute on the numbers and return an array without the gradient, so it is refused
    (as PyTorch refuses NumPy on a tensor that requires a gradient). ``use`` says what to call
    instead: the tape's own operation where there is one, else the same function on
    ``value.numpy()`` (or ``np.asarray(value)``), which give the numbers.
    """

    template = "{function} does not run on the tape and would drop the gradient; {use}"
    function: str
    use: str


class UnpicklableOperationError(TensorAutodiffError, TypeError):
    """``pickle`` or ``copy.deepcopy`` of an operation result.

    ``pickle.dumps`` (``action`` is ``pickle``) or ``copy.deepcopy`` (``deep-copy``) of an operation
    result, a released one included, or of anything that holds one: a recorded graph holds its
    parents at the revisions it read and the VJPs that run on them, which no copy could keep.
    ``copy.copy`` of any ``TensorValue`` is allowed: it is a new handle on the same node.
    """

    template = (
        "cannot {action} the result of the {operation} operation: only parameter and constant "
        "leaves pickle and deep-copy; use value_snapshot() for its values"
    )
    action: str
    operation: str


class LeafStateError(TensorAutodiffError, ValueError):
    """A pickled leaf whose state no leaf can have (a crafted or damaged pickle); ``part`` names
    what is wrong in it.

    Checked in this order: the state is not a dict, its ``kind`` is not ``parameter`` or
    ``constant``, its keys are not that kind's; the values are not a float32 or float64 array
    (masked arrays refused); the gradient is not a dict, its ``form`` is not ``dense`` or
    ``row_sparse`` or its keys are not that form's; a dense gradient's shape or dtype differs from
    the values'; a row-sparse gradient on a leaf that is not rank two, its ``rows`` not a 1-D
    integer array, more than ``V`` of them (checked before any is read, so a stride-0 view of any
    logical size fails at once), not sorted and unique or not in ``[0, V)``, its values not of
    shape ``[len(rows),
    d]`` and the values' dtype, its ``summed`` not None or sorted unique positions in ``[0,
    len(rows))``. The first failing check is reported (``part``: ``state``, ``kind``, ``values``,
    ``gradient``, ``form``, ``gradient rows``, ``gradient values``, ``gradient summed``).
    """

    template = "cannot restore a pickled leaf: {part} {detail}"
    part: str
    detail: str
