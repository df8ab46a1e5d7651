"""``TensorValue``: the public handle of a value on the tape."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, TypeAlias, TypeVar

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from llm_from_scratch.autograd.dispatch import runs_compiled
from llm_from_scratch.autograd.gather import counts_non_finite_upstream, gather_rows_forward
from llm_from_scratch.autograd.gradient import RowSparseGradient, first_non_finite
from llm_from_scratch.autograd.ids import plan_of_ids
from llm_from_scratch.autograd.matmul import matmul_forward, transpose_forward
from llm_from_scratch.autograd.matvec import matvec_forward
from llm_from_scratch.autograd.ops import (
    add_forward,
    divided_forward,
    log_sigmoid_forward,
    minus_number_forward,
    mul_forward,
    number_minus_forward,
    reshape_forward,
    scale_forward,
    shift_forward,
    sub_forward,
    sum_forward,
)
from llm_from_scratch.autograd.tape import (
    GraphRetention,
    Node,
    backward,
    output_allocation_error,
    raise_if_non_finite,
    reset_gradient,
)
from llm_from_scratch.autograd.threads import Write, consistent_read, update_parameters
from llm_from_scratch.errors import (
    AllocationError,
    NonFiniteError,
    ShapeError,
    TableError,
    TapeError,
)
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import (
    FloatArray,
    Shape,
    Tensor,
    is_masked_array,
    plain_view,
    read_only_view,
    tensor_without_copy,
)

_T = TypeVar("_T")

Operand: TypeAlias = "TensorValue | Tensor | npt.NDArray[Any] | float | np.number[Any]"


@dataclass(frozen=True, init=False, eq=False, repr=False)
class TensorValue:
    """A tensor on the tape: a parameter leaf, a constant leaf, or an operation result.

    Build leaves with :meth:`parameter` and :meth:`constant`; operations (:meth:`add` and
    ``+``, :meth:`sub` and ``-``, :meth:`mul` and ``*`` with values, arrays or real numbers;
    ``/`` by a number; :meth:`sum`, :meth:`mean`, :meth:`reshape`, :meth:`gather_rows`,
    :meth:`matvec`, :meth:`log_sigmoid`) build results that record what their VJP needs. A
    one-element value reads as a number (:meth:`item`, ``float()``, ``int()``); NumPy reads
    its numbers (``np.asarray``) and runs only the operations the tape has (see
    :meth:`__array_ufunc__`). PyTorch's names (``grad``, ``data``, ...) answer with ours.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> table = TensorValue.parameter(Tensor((4, 2), [10, 11, 20, 21, 30, 31, 40, 41]))
        >>> rows = table.gather_rows([2, 1, 2], (1, 3))
        >>> rows.shape
        (1, 3, 2)
        >>> rows.sum().backward()
        >>> table.gradient_snapshot().numpy().tolist()
        [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 0.0]]
    """

    __slots__ = ("_node",)
    _node: Node

    grad = PyTorchName("gradient (a Tensor; sparse_gradient for the rows a lookup touched)")
    data = PyTorchName("numpy() for the numbers, or value for a Tensor")
    requires_grad = PyTorchName("kind: 'parameter' stores a gradient, 'operation' passes one on")
    grad_fn = PyTorchName("kind: 'operation' for a recorded result")
    detach = PyTorchName("numpy() for the numbers, or value_snapshot() for a Tensor copy")
    size = PyTorchName("shape")
    dim = PyTorchName("len(value.shape)")
    tolist = PyTorchName("numpy().tolist()")
    view = PyTorchName("reshape(shape)")
    pow = PyTorchName("value * value (the tape has no power)")

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("build a TensorValue with TensorValue.parameter or .constant")

    @classmethod
    def parameter(cls, tensor: Tensor) -> TensorValue:
        """A trainable leaf holding a copy of ``tensor``'s values; its gradient starts at zero.

        Raises:
            TapeError: ``operand.leaf-type``, ``tensor`` is not a Tensor.
            NonFiniteError: ``parameter.non-finite``, the first NaN or infinity in flat order.
            AllocationError: ``output.allocation``, the copy or the zero gradient.
        """
        array = _leaf_array(tensor)
        found = first_non_finite(array)
        if found is not None:
            raise NonFiniteError("parameter.non-finite", value=found[1], position=found[0])
        try:
            node = Node(array, "parameter", None)
        except MemoryError as error:  # a non-table parameter's dense zero gradient
            raise output_allocation_error("parameter gradient", array.size) from error
        return value_of(node)

    @classmethod
    def constant(cls, tensor: Tensor) -> TensorValue:
        """A leaf that receives no gradient."""
        return value_of(Node(_leaf_array(tensor), "constant", None))

    # Reading ---------------------------------------------------------------------------------

    @property
    def kind(self) -> Literal["parameter", "constant", "operation"]:
        """``"parameter"``, ``"constant"`` or ``"operation"``."""
        return self._node.kind

    @property
    def shape(self) -> Shape:
        """The value's extents."""
        return tuple(int(extent) for extent in self._node.array.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """``float64`` or ``float32``."""
        return self._node.array.dtype

    @property
    def value(self) -> Tensor:
        """The forward values (read-only; an optimizer step on a parameter shows through)."""
        return tensor_without_copy(self._node.array)

    def value_snapshot(self) -> Tensor:
        """An independent copy of the forward values, all of one value revision."""
        return tensor_without_copy(copied_values(self))

    def numpy(self) -> FloatArray:
        """The forward values as a read-only array (no copy; see :attr:`value`)."""
        return read_only_view(self._node.array)

    @property
    def gradient(self) -> Tensor | None:
        """The accumulated dense gradient of a parameter (None for any other value)."""
        stored = self._node.gradient
        return None if stored is None else tensor_without_copy(_dense("gradient", stored))

    def gradient_snapshot(self) -> Tensor | None:
        """An independent copy of :attr:`gradient`."""
        stored = self._node.gradient
        if stored is None:
            return None
        dense = _dense("gradient snapshot", stored)
        independent = dense if dense is not stored else _copied(dense, "gradient snapshot")
        return tensor_without_copy(independent)

    @property
    def sparse_gradient(self) -> RowSparseGradient | None:
        """The stored gradient if it is row-sparse (a table fed only by row gathers), else None."""
        stored = self._node.gradient
        return stored if isinstance(stored, RowSparseGradient) else None

    @property
    def value_revision(self) -> int:
        """How many times the values changed in place (by an optimizer step)."""
        return self._node.revision

    def is_same_node(self, other: TensorValue) -> bool:
        """True when ``other`` is this very node (identity, not equal values)."""
        return self._node is other._node

    # Operations -------------------------------------------------------------------------------

    def add(self, other: Operand) -> TensorValue:
        """Element-wise sum, ``self + other`` (also ``other + self``).

        Args:
            other: a TensorValue, a Tensor or a real NumPy array (a constant copy; integers
                become float64) of this value's shape and dtype (no broadcasting), or a real
                number (not a bool) in this value's dtype, which receives no gradient.

        Raises:
            TapeError: ``operand.type``, ``other`` is none of these.
            ShapeError: ``operand.shape``, ``operand.dtype``.

        Example:
            >>> w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
            >>> (w + 0.5).numpy().tolist(), (1 + w).numpy().tolist()
            ([1.5, 2.5], [2.0, 3.0])
        """
        return self._binary("add", other, shift_forward, add_forward)

    def mul(self, other: Operand) -> TensorValue:
        """Element-wise product, ``self * other`` (also ``other * self``), as :meth:`add`.

        Example:
            >>> w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
            >>> loss = (w * w * 0.5).sum()
            >>> loss.backward()
            >>> loss.item(), w.gradient.numpy().tolist()
            (2.5, [1.0, 2.0])
        """
        return self._binary("mul", other, scale_forward, mul_forward)

    def sub(self, other: Operand) -> TensorValue:
        """Element-wise difference, ``self - other`` (also ``other - self``), as :meth:`add`."""
        return self._binary("sub", other, minus_number_forward, sub_forward)

    def _binary(
        self,
        operation: str,
        other: object,
        by_number: Callable[[Node, np.floating[Any]], Node],
        by_value: Callable[[Node, Node], Node],
    ) -> TensorValue:
        number = None if isinstance(other, TensorValue) else number_of(operation, other, self.dtype)
        if number is not None:
            return value_of(by_number(self._node, number))
        return value_of(by_value(self._node, _operand_node(operation, other)))

    __add__ = __radd__ = add
    __mul__ = __rmul__ = mul
    __sub__ = sub

    def __rsub__(self, other: Operand) -> TensorValue:
        number = number_of("sub", other, self.dtype)
        if number is not None:
            return value_of(number_minus_forward(self._node, number))
        return value_of(sub_forward(_operand_node("sub", other), self._node))

    def __neg__(self) -> TensorValue:
        return self.mul(-1)

    def __truediv__(self, number: float | np.number[Any]) -> TensorValue:
        """``self / number`` by a real number (no gradient); else ``operand.divisor-type``."""
        divisor = None if isinstance(number, TensorValue) else number_of("div", number, self.dtype)
        if divisor is None:
            raise _operand_error("div", type(number).__name__)
        return value_of(divided_forward(self._node, divisor))

    def sum(self) -> TensorValue:
        """The scalar sum of every element."""
        return value_of(sum_forward(self._node))

    def mean(self) -> TensorValue:
        """The scalar mean, ``sum() / count`` as PyTorch's ``mean()`` (NaN for no element).

        Example:
            >>> w = TensorValue.parameter(Tensor((2, 2), [1.0, 2.0, 3.0, 6.0]))
            >>> loss = w.mean()
            >>> loss.backward()
            >>> loss.item(), w.gradient.numpy().tolist()
            (3.0, [[0.25, 0.25], [0.25, 0.25]])
        """
        return self.sum() / int(self._node.array.size)

    def reshape(self, shape: Shape) -> TensorValue:
        """The same values under another shape with the same element count."""
        return value_of(reshape_forward(self._node, shape))

    def matvec(self, vectors: TensorValue | Tensor | npt.NDArray[Any]) -> TensorValue:
        """Row-wise dot products: ``y[..., m] = self[..., m, :] . vectors[..., :]``.

        Shape:
            ``self``: ``[..., M, d]``; ``vectors``: ``[..., d]`` (the same leading axes and
            dtype); output ``[..., M]``.

        Raises:
            TapeError: ``operand.matvec-type``, ``vectors`` is no operand as in :meth:`add`.
            ShapeError: ``operand.matvec-shape``, ``operand.dtype``.

        Example:
            >>> rows = TensorValue.parameter(Tensor((1, 2, 3), [1, 2, 3, 0, 1, 0]))
            >>> rows.matvec(Tensor((1, 3), [1, 1, 2])).numpy().tolist()
            [[9.0, 1.0]]
        """
        return value_of(matvec_forward(self._node, _operand_node("matvec", vectors)))

    def matmul(self, other: TensorValue | Tensor | npt.NDArray[Any]) -> TensorValue:
        """The matrix product ``self @ other`` (PyTorch's ``matmul`` of two matrices).

        Shape:
            ``self``: ``[n, k]``; ``other``: ``[k, m]`` (the same dtype); output ``[n, m]``.

        Raises:
            TapeError: ``operand.matmul-type``, ``other`` is no operand as in :meth:`matvec`.
            ShapeError: ``operand.matmul-shape``, ``operand.dtype``.

        Example:
            >>> rows = TensorValue.parameter(Tensor((1, 2), [1, 2]))
            >>> rows.matmul(Tensor((2, 2), [1, 0, 3, 1])).numpy().tolist()
            [[7.0, 2.0]]
        """
        return value_of(matmul_forward(self._node, _operand_node("matmul", other)))

    def t(self) -> TensorValue:
        """The transpose of a matrix (PyTorch's ``t``): ``[n, m]`` becomes ``[m, n]``.

        Raises:
            ShapeError: ``operand.transpose-shape``, ``self`` is not a matrix.

        Example:
            >>> TensorValue.parameter(Tensor((1, 2), [1, 2])).t().numpy().tolist()
            [[1.0], [2.0]]
        """
        return value_of(transpose_forward(self._node))

    def log_sigmoid(self) -> TensorValue:
        """``log(sigmoid(x))`` element-wise, as ``min(x, 0) - log1p(exp(-|x|))``: no overflow."""
        return value_of(log_sigmoid_forward(self._node))

    # Numbers ----------------------------------------------------------------------------------

    def item(self) -> float:
        """The number of a one-element value (any shape) as a Python float, as PyTorch's
        ``item()``; ``float(value)`` is the same, ``int(value)`` truncates toward zero.

        Raises:
            ShapeError: ``value.not-one-element``, more or fewer elements than one (``action``
                is ``item()``, ``float()``, ``int()``, ``bool()`` or ``format()``).

        Example:
            >>> loss = TensorValue.parameter(Tensor((1, 1), [2.75]))
            >>> loss.item(), float(loss), int(loss), f"{loss:.1f}"
            (2.75, 2.75, 2, '2.8')
        """
        return self._one_number("item()")

    def __float__(self) -> float:
        return self._one_number("float()")

    def __int__(self) -> int:
        return int(self._one_number("int()"))

    def __bool__(self) -> bool:
        """``if loss:`` reads a one-element value, as PyTorch does; any other value refuses."""
        return bool(self._one_number("bool()"))

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"`` formats a one-element value; an empty spec is ``str(value)``."""
        return str(self) if not spec else format(self._one_number("format()"), spec)

    def _one_number(self, action: str) -> float:
        array = self._node.array
        if array.size != 1:
            raise ShapeError("value.not-one-element", action=action, shape=self.shape)
        return float(array.reshape(-1)[0])

    def gather_rows(self, indices: object, index_shape: Shape) -> TensorValue:
        """Select table rows: ``output[p, :] = table[indices[p], :]``.

        Args:
            indices: flat IDs in row-major order (a sequence of ints or a 1-D integer array),
                each read once (:func:`~llm_from_scratch.autograd.ids.plan_of_ids`).
            index_shape: the shape the IDs form.

        Shape:
            table (``self``): ``[V, d]``; ``indices``: ``[prod(index_shape)]``;
            output: ``index_shape + (d,)``.

        Raises:
            TableError: ``gather.table-rank``, the table is not rank two (checked first).
            ShapeError, IdError, AllocationError: as the layer's ``forward`` reads IDs, worded
                ``gather.*`` (``shape.invalid``, ``output.allocation``); then the tape's.
        """
        shape = self._node.array.shape
        if len(shape) != 2:
            raise TableError("gather.table-rank", rank=len(shape))
        table_shape = (int(shape[0]), int(shape[1]))
        plan = plan_of_ids(
            indices, table_shape, self.dtype.itemsize, shape=index_shape, checker="gather"
        )
        return value_of(gather_rows_forward(self._node, plan))

    # Reverse mode -----------------------------------------------------------------------------

    def backward_with_seed(
        self, seed: Tensor | npt.NDArray[Any], retention: GraphRetention = GraphRetention.RETAIN
    ) -> None:
        """Run reverse mode from this value and add each parameter's gradient to its store.

        Args:
            seed: the gradient of the loss with respect to this value, of its shape (another
                dtype is converted to this value's).
            retention: keep the recorded operations (``RETAIN``) or free them (``RELEASE``).

        Raises:
            ShapeError: ``seed.type``, ``seed.shape``; NonFiniteError: ``seed.non-finite``.
            TapeError: ``tape.retention-type`` (after the seed); ``tape.not-recorded`` (a
                constant); ``tape.released``; ``tape.stale-value``.
            NonFiniteError: ``gradient.non-finite``; no stored gradient changed.
        """
        checked = converted_seed(self, seed)
        late = runs_compiled(checked.size) and counts_non_finite_upstream(self._node)
        if not late:
            raise_if_non_finite(None, checked)
        try:
            if not isinstance(retention, GraphRetention):
                raise TapeError("tape.retention-type", retention=retention)
            backward(self._node, checked, retention)
        except Exception:
            if late:  # the seed's error comes first
                raise_if_non_finite(None, checked)
            raise

    def backward(self) -> None:
        """``backward_with_seed(1.0)`` with ``RETAIN``, for a scalar output."""
        self.backward_with_seed(unit_seed(self), GraphRetention.RETAIN)

    def zero_grad(self) -> None:
        """Reset a parameter's gradient to zeros (atomically with respect to backward passes)."""
        reset_gradient(self._node)

    def __repr__(self) -> str:
        array = self._node.array
        number = f", value={float(array.reshape(-1)[0])!r}" if array.size == 1 else ""
        return f"TensorValue(kind={self.kind}, shape={self.shape}, dtype={self.dtype}{number})"

    # NumPy ------------------------------------------------------------------------------------

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> FloatArray:
        """``np.asarray(value)``: :meth:`numpy` (or a copy, another dtype), PyTorch's
        ``.detach().numpy()``.

        Example:
            >>> w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
            >>> np.asarray(w).tolist(), np.array(w, dtype=np.float32).dtype
            ([1.0, 2.0], dtype('float32'))
        """
        return np.array(self.numpy(), dtype=dtype, copy=copy)

    def __array_ufunc__(
        self, ufunc: np.ufunc, method: str, *inputs: object, **kwargs: object
    ) -> TensorValue:
        """NumPy's ``add``, ``subtract``, ``multiply``, ``divide`` (by a number) and
        ``negative`` run on the tape as ``+``, ``-``, ``*``, ``/`` do (``w * value`` keeps the
        gradient); any other ufunc, method or keyword is ``numpy.function``.

        Example:
            >>> w = TensorValue.parameter(Tensor((2,), [1.0, 2.0]))
            >>> (np.array([3.0, 4.0]) * w).kind
            'operation'
            >>> np.exp(w)
            Traceback (most recent call last):
            ...
            llm_from_scratch.errors.TapeError: numpy.exp does not run on the tape and would \
drop the gradient; call it on value.numpy() for the numbers
        """
        methods = _TAPE_UFUNCS.get(ufunc.__name__, ())
        if method == "__call__" and not kwargs and len(inputs) == ufunc.nin == len(methods):
            first, *rest = inputs
            if isinstance(first, TensorValue):  # the value is the first operand
                return getattr(first, methods[0])(*rest)  # type: ignore[no-any-return]
            if methods[1] and isinstance(rest[0], TensorValue):
                return getattr(rest[0], methods[1])(first)  # type: ignore[no-any-return]
        called = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        keywords = " with " + ", ".join(f"{name}=" for name in kwargs) if kwargs else ""
        use = _use_instead(ufunc.__name__ if method == "__call__" else called)
        raise TapeError("numpy.function", function=f"numpy.{called}{keywords}", use=use)

    def __array_function__(
        self, func: Callable[..., object], types: object, args: object, kwargs: object
    ) -> NoReturn:
        """Refuse every NumPy function (``np.dot``, ``np.sum``, ...) with ``numpy.function``."""
        function, use = f"{func.__module__}.{func.__name__}", _use_instead(func.__name__)
        raise TapeError("numpy.function", function=function, use=use)

    # Pickle and copy ----------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle a leaf by its node (see :mod:`~llm_from_scratch.autograd.leaf_state`)."""
        from llm_from_scratch.autograd import leaf_state  # registers how a node pickles

        leaf_state.refuse_operation(self._node, "pickle")
        return restore_value, (self._node,)

    def __copy__(self) -> TensorValue:
        """A new handle on the same node (``is_same_node`` is true)."""
        return value_of(self._node)

    def __deepcopy__(self, memo: dict[int, Any]) -> TensorValue:
        """A new leaf with copies of the values and stored gradient (as PyTorch's ``deepcopy``
        keeps ``.grad``); handles on one node copy to one new node; an operation result is
        ``tape.unpicklable``."""
        node = self._node
        copied = memo.get(id(node))
        if copied is None:
            from llm_from_scratch.autograd.leaf_state import deep_copied_node

            copied = deep_copied_node(node)
            memo[id(node)] = copied
            memo.setdefault(id(memo), []).append(node)  # keeps the key alive, as copy does
        return value_of(copied)


# Package-internal entry points -----------------------------------------------------------------


def value_of(node: Node) -> TensorValue:
    """The handle on a node the package built (the trusted constructor)."""
    value = object.__new__(TensorValue)
    object.__setattr__(value, "_node", node)
    return value


def node_of(value: TensorValue) -> Node:
    """The node a value is a handle on (for code that runs operations or reverse mode)."""
    return value._node


def copied_values(value: TensorValue) -> FloatArray:
    """A new, writeable copy of the value's numbers, all of one value revision."""
    node = value._node
    copy, _ = consistent_read((node,), lambda: _copied(node.array, "value snapshot"))
    return copy


def restore_value(node: object) -> TensorValue:
    """Rebuild a pickled ``TensorValue`` on a rebuilt leaf node, else ``tape.leaf-state``."""
    if not isinstance(node, Node) or node.kind == "operation":
        detail = f"must be a rebuilt leaf node, got {type(node).__name__}"
        raise TapeError("tape.leaf-state", part="node", detail=detail)
    return value_of(node)


def parameter_from_owned_array(array: FloatArray) -> TensorValue:
    """A parameter leaf that takes over ``array`` (no copy; the caller keeps no writeable view)."""
    return value_of(Node(array, "parameter", None))


def constant_from_owned_array(array: FloatArray) -> TensorValue:
    """A constant leaf that takes over ``array`` (no copy; the caller keeps no writeable view)."""
    return value_of(Node(array, "constant", None))


def update_leaves_in_place(
    leaves: Sequence[TensorValue],
    planned: Callable[[], Sequence[Write | None]],
    read: Callable[[], _T] | None = None,
) -> _T | None:
    """:func:`~llm_from_scratch.autograd.threads.update_parameters` on the leaves' nodes."""
    return update_parameters([leaf._node for leaf in leaves], planned, read)


def unit_seed(output: TensorValue) -> FloatArray:
    """The seed ``1.0`` of :meth:`TensorValue.backward`, else ``value.not-scalar-output``."""
    if output._node.array.ndim != 0:
        raise ShapeError("value.not-scalar-output", shape=output.shape)
    return np.ones((), dtype=output.dtype)


def converted_seed(output: TensorValue, seed: object) -> FloatArray:
    """A backward seed as plain data in ``output``'s dtype (no copy when it has it), its type
    and shape checked (``seed.type``, then ``seed.shape``), not yet its finiteness."""
    node = output._node
    if type(seed) is np.ndarray and seed.dtype.kind in "biuf":
        array = seed  # a plain array: no subclass method can run, no mask can hide a value
    elif isinstance(seed, Tensor):
        array = seed.numpy()
    elif isinstance(seed, np.generic) and seed.dtype.kind in "biuf":
        array = np.asarray(seed)
    elif isinstance(seed, np.ndarray) and not is_masked_array(seed):
        array = plain_view(seed)
        if array.dtype.kind not in "biuf":
            raise ShapeError("seed.type", seed_type=type(seed).__name__)
    else:
        raise ShapeError("seed.type", seed_type=type(seed).__name__)
    if array.shape != node.array.shape:
        shape = tuple(int(n) for n in array.shape)
        raise ShapeError("seed.shape", actual=shape, expected=output.shape)
    if array.dtype == node.array.dtype:  # no copy: a pass only reads its seed; read-only, so
        view = array.view()  # that a gradient keeping it copies it (the caller may change it)
        view.flags.writeable = False
        return view
    try:
        with np.errstate(over="ignore"):
            return np.asarray(array, dtype=node.array.dtype)
    except MemoryError as error:  # the output exists, so only a full memory fails here
        raise output_allocation_error("backward", array.size) from error


raise_if_non_finite_seed: Final = partial(raise_if_non_finite, None)
"""``seed.non-finite`` at the first NaN or infinity of a seed."""


def number_of(operation: str, other: object, dtype: np.dtype[Any]) -> np.floating[Any] | None:
    """``other`` in ``dtype`` when it is a real number (read once by ``float()``), else None;
    a bool or a number beyond float64 is ``operand.type``."""
    if isinstance(other, bool | np.bool_):
        raise _operand_error(operation, type(other).__name__)
    if not isinstance(other, numbers.Real):
        return None
    try:
        number = float(other)
    except (TypeError, ValueError, ArithmeticError) as error:
        raise _operand_error(operation, f"{type(other).__name__} beyond float64") from error
    with np.errstate(over="ignore"):  # beyond float32 it is inf, as NumPy and PyTorch make it
        return dtype.type(number)  # type: ignore[no-any-return]


def _operand_node(operation: str, other: object) -> Node:
    if isinstance(other, TensorValue):
        return other._node
    if isinstance(other, Tensor):
        return Node(_leaf_array(other), "constant", None)
    if isinstance(other, np.ndarray):
        try:
            copied = Tensor.from_numpy(other)  # float32 and float64 kept, integers float64
        except (ShapeError, AllocationError) as error:
            raise _operand_error(operation, f"ndarray of dtype {other.dtype}") from error
        return Node(copied.numpy(), "constant", None)  # the only handle on the copy
    raise _operand_error(operation, type(other).__name__)


def _operand_error(operation: str, operand_type: str) -> TapeError:
    if operation == "div":
        return TapeError("operand.divisor-type", operand_type=operand_type)
    if operation == "matvec":
        return TapeError("operand.matvec-type", operand_type=operand_type)
    if operation == "matmul":
        return TapeError("operand.matmul-type", operand_type=operand_type)
    return TapeError("operand.type", operation=operation, operand_type=operand_type)


def _leaf_array(tensor: Tensor) -> FloatArray:
    if not isinstance(tensor, Tensor):
        raise TapeError("operand.leaf-type", operand_type=type(tensor).__name__)
    return _copied(tensor.numpy(), "leaf copy")


def _copied(array: FloatArray, what: str) -> FloatArray:
    try:
        return np.array(array, copy=True)
    except MemoryError as error:
        raise output_allocation_error(what, array.size) from error


def _dense(what: str, gradient: RowSparseGradient | FloatArray) -> FloatArray:
    if not isinstance(gradient, RowSparseGradient):
        return gradient
    try:
        return gradient.to_dense()
    except MemoryError as error:
        raise output_allocation_error(what, math.prod(gradient.shape)) from error


_TAPE_UFUNCS: Final = {  # the method with the value as first operand, then as second
    "add": ("__add__", "__radd__"),
    "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"),
    "divide": ("__truediv__", ""),
    "negative": ("__neg__",),
}

_ON_THE_TAPE: Final = {
    "add": "value + other",
    "subtract": "value - other",
    "multiply": "value * other",
    "divide": "value / number",
    "negative": "-value",
    "mean": "value.mean()",
    "sum": "value.sum()",
    "reshape": "value.reshape(shape)",
    "shape": "value.shape",
    "ndim": "len(value.shape)",
    "copy": "value.value_snapshot()",
}  # what a NumPy function's caller can use instead


def _use_instead(name: str) -> str:
    numbers = "call it on value.numpy() for the numbers"
    tape = _ON_THE_TAPE.get(name)
    return numbers if tape is None else f"use {tape}, or {numbers}"
