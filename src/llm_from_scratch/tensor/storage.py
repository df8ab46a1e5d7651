"""Contiguous row-major float storage (course chapter 8).

A shape is a tuple of non-negative ints; ``()`` is a scalar with one element and any zero extent
gives zero elements. :func:`checked_row_major_layout` is the one place that turns a shape into
strides and an element count.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, cast

import numpy as np

from llm_from_scratch.errors import StructuredError

if TYPE_CHECKING:  # numpy.typing costs import time; annotations alone need it
    import numpy.typing as npt

Shape: TypeAlias = tuple[int, ...]
FloatArray: TypeAlias = "np.ndarray[Any, np.dtype[np.floating[Any]]]"
IndexArray: TypeAlias = "np.ndarray[Any, np.dtype[np.intp]]"

INDEX_LIMIT: Final = 2**63 - 1
"""The largest element count or stride a signed 64-bit index can address."""

SUPPORTED_DTYPES: Final = (np.dtype(np.float64), np.dtype(np.float32))


class TensorError(StructuredError):
    """Base class of every error raised by :mod:`llm_from_scratch.tensor`."""


class ShapeOverflowError(TensorError, ValueError):
    """A shape whose suffix products or element count do not fit a signed 64-bit index."""

    template = "shape does not fit a row-major usize layout"
    shape: Shape


class NegativeExtentError(TensorError, ValueError):
    """A shape with a negative extent."""

    template = "shape extent {extent} at axis {axis} is negative"
    axis: int
    extent: int


class NonIntegerExtentError(TensorError, TypeError):
    """A shape extent that is not an integer (``bool`` is not an integer here)."""

    template = "shape extent at axis {axis} must be an integer, got {extent!t} {extent!r}"
    axis: int
    extent: object


class ShapeTypeError(TensorError, TypeError):
    """A shape that is not a sequence of extents."""

    template = "a shape must be a sequence of integers, got {shape!t}"
    shape: object


class DataLengthMismatchError(TensorError, ValueError):
    """Flat values whose count differs from the shape's element count."""

    template = "shape needs {expected} values, but data has {actual}"
    expected: int
    actual: int


class TensorValueTypeError(TensorError, TypeError):
    """Flat values that are not real numbers, or a dtype other than float32/float64."""

    template = "tensor values must be real numbers: {detail}"
    detail: str


class TensorAllocationError(TensorError, MemoryError):
    """The storage for a valid shape could not be allocated."""

    template = "could not allocate {elements} tensor values"
    elements: int


def checked_shape(shape: object) -> Shape:
    """Return ``shape`` as a tuple of Python ints, rejecting non-integer or negative extents.

    Raises:
        ShapeTypeError: ``shape`` is not a sequence.
        NonIntegerExtentError: an extent is not an integer (``bool`` counts as non-integer).
        NegativeExtentError: an extent is negative.
    """
    if isinstance(shape, str | bytes) or not isinstance(shape, Iterable):
        raise ShapeTypeError(shape)
    extents: list[int] = []
    for axis, extent in enumerate(shape):
        if isinstance(extent, bool | np.bool_) or not isinstance(extent, numbers.Integral):
            raise NonIntegerExtentError(axis, extent)
        value = operator.index(extent)
        if value < 0:
            raise NegativeExtentError(axis, value)
        extents.append(value)
    return tuple(extents)


def checked_row_major_layout(shape: object) -> tuple[Shape, int]:
    """Turn a shape into row-major strides (in elements) and an element count.

    This never allocates. The element count of ``()`` is one; any zero extent gives zero.

    Args:
        shape: a sequence of non-negative integer extents.

    Returns:
        ``(strides, element_count)``.

    Raises:
        ShapeTypeError, NonIntegerExtentError, NegativeExtentError: as :func:`checked_shape`.
        ShapeOverflowError: a suffix product or the count exceeds ``2**63 - 1``.

    Example:
        >>> checked_row_major_layout((2, 3, 4))
        ((12, 4, 1), 24)
        >>> checked_row_major_layout(())
        ((), 1)
    """
    extents = checked_shape(shape)
    strides = [0] * len(extents)
    running = 1
    for axis in range(len(extents) - 1, -1, -1):
        strides[axis] = running
        running *= extents[axis]
        if running > INDEX_LIMIT:
            raise ShapeOverflowError(extents)
    return tuple(strides), running


def checked_dtype(dtype: npt.DTypeLike) -> np.dtype[Any]:
    """Return ``dtype`` as a NumPy dtype if it is float64 or float32.

    Raises:
        TensorValueTypeError: any other dtype.
    """
    try:
        resolved = np.dtype(dtype)
    except TypeError as error:
        raise TensorValueTypeError(f"unsupported dtype {dtype!r}") from error
    if resolved not in SUPPORTED_DTYPES:
        raise TensorValueTypeError(f"dtype must be float64 or float32, got {resolved}")
    return resolved


_ArrayT = TypeVar("_ArrayT", bound="np.ndarray[Any, Any]")


def read_only_view(array: _ArrayT) -> _ArrayT:
    """A new read-only array of ``array``'s values whose writeability cannot be restored.

    Every array the package hands out comes from here. A view with ``flags.writeable = False``
    is not enough: NumPy lets anyone switch writes back on for it when its ``base`` owns its
    memory or is writeable. This view reads the values through a read-only buffer instead, so
    ``flags.writeable = True`` raises ``ValueError`` on the view and on every array in its
    ``base`` chain. A C-contiguous ``array`` is viewed without a copy in constant time, and the
    package's own later writes to it (an optimizer step on a parameter) show through; any other
    layout is copied first. Each call returns a new array object, so setting ``shape`` or
    ``dtype`` on one changes nothing else.

    Example:
        >>> owner = np.arange(4.0)
        >>> view = read_only_view(owner)
        >>> try:
        ...     view.flags.writeable = True
        ... except ValueError as error:
        ...     print(error)
        cannot set WRITEABLE flag to True of this array
        >>> owner[0] = 9.0
        >>> view.tolist()
        [9.0, 1.0, 2.0, 3.0]
    """
    if not array.flags.c_contiguous:
        array = cast(_ArrayT, np.array(array, order="C", copy=True))
    buffer = array.data.toreadonly()
    return cast(_ArrayT, np.frombuffer(buffer, dtype=array.dtype).reshape(array.shape))


@dataclass(frozen=True, init=False, eq=False, repr=False)
class Tensor:
    """An immutable float tensor: a shape and its values in row-major order.

    Args:
        shape: the extents, e.g. ``(4, 2)``; ``()`` is a scalar.
        values: a flat sequence of real numbers, or a NumPy array with that many elements
            (read in row-major order). The values are always copied.
        dtype: ``numpy.float64`` (the default) or ``numpy.float32``.

    Shape:
        ``values``: ``[prod(shape)]``; :meth:`numpy`: ``shape``.

    Raises:
        TensorError: a subclass for an invalid shape (checked first), a value count that
            differs from the element count, values that are not real numbers, or a storage
            that cannot be allocated.

    Example:
        >>> t = Tensor((2, 2), [1, 2, 3, 4])
        >>> t.shape, t.numpy().tolist()
        ((2, 2), [[1.0, 2.0], [3.0, 4.0]])
        >>> try:
        ...     Tensor((2, 2), [1, 2, 3])
        ... except DataLengthMismatchError as error:
        ...     print(error)
        shape needs 4 values, but data has 3
    """

    __slots__ = ("_array",)
    _array: FloatArray

    def __init__(
        self,
        shape: Sequence[int],
        values: Sequence[float] | npt.ArrayLike,
        dtype: npt.DTypeLike = np.float64,
    ) -> None:
        extents = checked_shape(shape)
        _, count = checked_row_major_layout(extents)
        resolved = checked_dtype(dtype)
        flat = _flat_values(values, resolved)
        if flat.size != count:
            raise DataLengthMismatchError(count, int(flat.size))
        try:
            array = np.array(flat.reshape(extents), dtype=resolved, copy=True)
        except (MemoryError, ValueError) as error:
            raise _allocation_error(extents, count) from error
        array.flags.writeable = False
        _hold(self, array)

    @classmethod
    def zeros(cls, shape: Sequence[int], dtype: npt.DTypeLike = np.float64) -> Tensor:
        """A tensor of zeros (the shape and dtype are checked like the constructor's)."""
        extents = checked_shape(shape)
        _, count = checked_row_major_layout(extents)
        resolved = checked_dtype(dtype)
        try:
            array = np.zeros(extents, dtype=resolved)
        except (MemoryError, ValueError) as error:  # NumPy: ValueError when bytes overflow
            raise _allocation_error(extents, count) from error
        array.flags.writeable = False
        return tensor_without_copy(array)

    @property
    def shape(self) -> Shape:
        """The extents, a tuple of ints."""
        return tuple(int(extent) for extent in self._array.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """``float64`` or ``float32``."""
        return self._array.dtype

    @property
    def element_count(self) -> int:
        """The number of values (one for a scalar)."""
        return int(self._array.size)

    def numpy(self) -> FloatArray:
        """The values as a read-only NumPy array of shape :attr:`shape` (no copy); its
        writeability cannot be restored (see :func:`read_only_view`)."""
        return read_only_view(self._array)

    def tolist(self) -> Any:
        """The values as nested Python lists (a float for a scalar)."""
        return self._array.tolist()

    def flat_values(self) -> list[float]:
        """The values as one flat Python list in row-major order."""
        return [float(value) for value in self._array.reshape(-1)]

    def equals(self, other: Tensor) -> bool:
        """True when ``other`` has the same shape, dtype and bit-for-bit equal values."""
        return (
            self.shape == other.shape
            and self.dtype == other.dtype
            and bool(np.array_equal(self._array, other._array))
        )

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, values={self.flat_values()})"


def tensor_without_copy(array: FloatArray) -> Tensor:
    """The trusted constructor: a Tensor viewing ``array`` read-only, neither checked nor copied.

    Package-internal. ``array`` is a float64 or float32 array that nobody writes except the
    package itself (an optimizer step on a parameter's values shows through such a view).
    """
    tensor = object.__new__(Tensor)
    _hold(tensor, read_only_view(array))
    return tensor


def _hold(tensor: Tensor, array: FloatArray) -> None:
    # The one write into a frozen Tensor, by its two constructors.
    object.__setattr__(tensor, "_array", array)


def _allocation_error(extents: Shape, count: int) -> TensorError:
    """The error for a NumPy array that cannot be made for a valid layout.

    NumPy also needs ``itemsize * product of the non-zero extents`` to fit a signed 64-bit
    byte count, so a zero-element shape such as ``(2**62, 0)`` has no NumPy array: that is a
    :class:`ShapeOverflowError`. Any other failure is a :class:`TensorAllocationError`.
    """
    return ShapeOverflowError(extents) if count == 0 else TensorAllocationError(count)


def _flat_values(values: object, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    if isinstance(values, str | bytes):
        raise TensorValueTypeError(f"got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "biuf":
            raise TensorValueTypeError(f"array dtype {values.dtype} is not real")
        return values.reshape(-1)
    if not isinstance(values, Iterable):
        raise TensorValueTypeError(f"got {type(values).__name__}, not a sequence")
    flat = list(values)
    for position, value in enumerate(flat):
        if not isinstance(value, numbers.Real):
            raise TensorValueTypeError(
                f"value at flat position {position} is {type(value).__name__} {value!r}"
            )
    try:
        return np.asarray(flat, dtype=dtype)
    except (OverflowError, MemoryError) as error:
        raise TensorValueTypeError(str(error)) from error
