"""Contiguous row-major float storage (course chapter 8).

A shape is a tuple of non-negative ints; ``()`` is a scalar with one element and any zero extent
gives zero elements. :func:`checked_row_major_layout` is the one place that turns a shape into
strides and an element count.
"""

from __future__ import annotations

import math
import numbers
import operator
import sys
from collections.abc import Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, cast

import numpy as np
from numpy.lib import NumpyVersion

from llm_from_scratch.errors import StructuredError

if TYPE_CHECKING:  # numpy.typing costs import time; annotations alone need it
    import numpy.typing as npt

Shape: TypeAlias = tuple[int, ...]
FloatArray: TypeAlias = "np.ndarray[Any, np.dtype[np.floating[Any]]]"
IndexArray: TypeAlias = "np.ndarray[Any, np.dtype[np.intp]]"

INDEX_LIMIT: Final = 2**63 - 1
"""The largest element count or stride a signed 64-bit index can address."""

MAX_AXES: Final = 64 if NumpyVersion(np.__version__) >= "2.0.0" else 32
"""The most axes a shape may have: NumPy's own limit (64 since NumPy 2.0, 32 before)."""

SUPPORTED_DTYPES: Final = (np.dtype(np.float64), np.dtype(np.float32))

_CHUNK: Final = 1 << 16  # caller values converted per block (bounds temporary memory)


class TensorError(StructuredError):
    """Base class of every error raised by :mod:`llm_from_scratch.tensor`."""


class ShapeOverflowError(TensorError, ValueError):
    """A shape whose suffix products or element count do not fit a signed 64-bit index.

    A suffix product or the element count exceeds ``2**63 - 1`` (for example ``[2**32, 2**32]``).
    ``Tensor`` and ``Tensor.zeros`` also raise it for a zero-element shape NumPy cannot describe,
    because ``itemsize`` times the product of its non-zero extents overflows (``[2**62, 0]``).
    """

    template = "shape does not fit a row-major usize layout"
    shape: Shape


class NegativeExtentError(TensorError, ValueError):
    """A shape with a negative extent: the first, in axis order, below zero."""

    template = "shape extent {extent} at axis {axis} is negative"
    axis: int
    extent: int


class NonIntegerExtentError(TensorError, TypeError):
    """A shape extent that is not an integer (``bool`` is not an integer here).

    The first extent, in axis order, that is a ``bool``, a ``float``, ``None``, a ``str`` or
    anything else that is no integer; any NumPy integer is one. Each extent is read once
    (``operator.index``), and that one value is checked and used.
    """

    template = "shape extent at axis {axis} must be an integer, got {extent!t} {extent!r}"
    axis: int
    extent: object


class ShapeTypeError(TensorError, TypeError):
    """A shape that is not a sequence of extents.

    An ``int``, ``None``, a ``str`` or ``bytes``, a 0-d, N-d or masked array: anything that is not
    an iterable of extents.
    """

    template = "a shape must be a sequence of integers, got {shape!t}"
    shape: object


class TooManyAxesError(TensorError, ValueError):
    """A shape with more axes than a NumPy array can have (:data:`MAX_AXES`).

    More than ``MAX_AXES`` extents (64; 32 with NumPy 1.x), an endless iterable included: at most
    ``MAX_AXES + 1`` extents are read, so ``itertools.repeat(1)`` as a shape fails at once.
    """

    template = "a shape may have at most {limit} axes, got more"
    limit: int


class DataLengthMismatchError(TensorError, ValueError):
    """Flat values whose count differs from the shape's element count.

    ``Tensor(shape, values)``: a sized input's ``len()`` (an array's size) is compared before any
    value is read, so ``Tensor((2,), range(2**62))`` fails at once; an iterator is read at most one
    value past the count (``actual`` is then ``expected + 1``).
    """

    template = "shape needs {expected} values, but data has {actual}"
    expected: int
    actual: int


class TensorValueTypeError(TensorError, TypeError):
    """Flat values that are not real numbers, or a dtype other than float32/float64.

    ``Tensor(shape, values, dtype)``: a dtype other than float64 or float32; values that are a
    ``str``, ``bytes``, a masked array or not iterable; a value that is not a real number (``None``,
    ``"1"``, ``1j``, a nested list); an array of a non-real dtype (structured included).
    ``Tensor.from_numpy(x)``: ``x`` is not a NumPy array (a list, a NumPy scalar), is a masked
    array, or has a dtype that is neither float32, float64 nor an integer (bool, which is not an
    integer here, float16, longdouble, complex, object, string, datetime, structured). Unpickling a
    ``Tensor`` (a crafted pickle) whose values are not a float32 or float64 array.
    """

    template = "tensor values must be real numbers: {detail}"
    detail: str


class TensorValueOverflowError(TensorError, OverflowError):
    """A finite value that becomes infinite when converted to the tensor's dtype.

    The first such value in flat order: ``Tensor((1,), [1e300], dtype=np.float32)``, a float64 array
    converted to float32, an ``int`` beyond float64 (``10**400``); also per-sample weights that
    overflow the table's dtype. ``value`` is the caller's value.
    """

    template = "tensor value {value!r} at flat position {position} overflows {dtype}"
    position: int
    value: object
    dtype: str


class TensorAllocationError(TensorError, MemoryError):
    """The storage for a valid shape could not be allocated.

    ``Tensor.zeros([2**31, 2**31])``, and the copy made by ``Tensor.from_numpy``, by unpickling a
    ``Tensor`` or by deep-copying one.
    """

    template = "could not allocate {elements} tensor values"
    elements: int


CONVERSION_ERRORS: Final = (TypeError, ValueError, ArithmeticError)
"""What Python raises when a caller's value cannot be converted (``operator.index``,
``float``): such a value is rejected with the boundary's typed error, the original as cause."""


def is_masked_array(value: object) -> bool:
    """True for a ``numpy.ma.MaskedArray``, whose mask marks values that are missing.

    No masked array can exist before ``numpy.ma`` is imported, so this never imports it.
    """
    masked = sys.modules.get("numpy.ma")
    return masked is not None and isinstance(value, masked.MaskedArray)


def plain_view(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The data of ``array`` (any ndarray subclass) as a base-class ndarray view.

    No method of the subclass runs, so what is validated and used is the memory the array
    holds, not what its overridden methods would show. Check :func:`is_masked_array` first:
    a masked array's data includes the values its mask calls missing.
    """
    return np.ndarray.view(array, np.ndarray)


def checked_shape(shape: object) -> Shape:
    """Return ``shape`` as a tuple of Python ints, rejecting non-integer or negative extents.

    Each extent is read once (``operator.index``), and at most ``MAX_AXES + 1`` extents are
    read from any iterable, so an endless one fails at once. A NumPy array is read through
    :func:`plain_view` and must be one-dimensional.

    Raises:
        ShapeTypeError: ``shape`` is not a sequence (a ``str``, ``bytes``, a 0-d, N-d or masked
            array, a non-iterable).
        TooManyAxesError: more than :data:`MAX_AXES` extents.
        NonIntegerExtentError: an extent is not an integer (``bool`` counts as non-integer).
        NegativeExtentError: an extent is negative.
    """
    if (
        type(shape) is tuple
        and len(shape) <= MAX_AXES
        and all(type(extent) is int and extent >= 0 for extent in shape)
    ):
        return shape  # Python ints cannot change: nothing to convert
    extents: list[int] = []
    for axis, extent in enumerate(islice(_extents_read(shape), MAX_AXES + 1)):
        if axis == MAX_AXES:
            raise TooManyAxesError(MAX_AXES)
        extents.append(_checked_extent(axis, extent))
    return tuple(extents)


def _extents_read(shape: object) -> Iterator[object]:
    """An iterator over the extents of ``shape``; an array is read through its plain view."""
    if isinstance(shape, str | bytes) or not isinstance(shape, Iterable):
        raise ShapeTypeError(shape)
    source: Iterable[object] = shape
    if isinstance(shape, np.ndarray):
        if is_masked_array(shape) or plain_view(shape).ndim != 1:
            raise ShapeTypeError(shape)
        source = plain_view(shape)
    try:
        return iter(source)
    except TypeError as error:
        raise ShapeTypeError(shape) from error


def _checked_extent(axis: int, extent: object) -> int:
    """One extent, read once, as a non-negative Python int."""
    if isinstance(extent, bool | np.bool_) or not isinstance(extent, numbers.Integral):
        raise NonIntegerExtentError(axis, extent)
    try:
        value = operator.index(extent)
    except CONVERSION_ERRORS as error:
        raise NonIntegerExtentError(axis, extent) from error
    if value < 0:
        raise NegativeExtentError(axis, value)
    return value


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


def checked_shape_and_count(shape: object) -> tuple[Shape, int]:
    """``shape`` as :func:`checked_shape` returns it, and its row-major element count.

    Raises:
        ShapeTypeError, TooManyAxesError, NonIntegerExtentError, NegativeExtentError: as
            :func:`checked_shape`.
        ShapeOverflowError: as :func:`checked_row_major_layout`.

    Example:
        >>> checked_shape_and_count([2, 3])
        ((2, 3), 6)
    """
    extents = checked_shape(shape)
    _, count = checked_row_major_layout(extents)
    return extents, count


def numpy_can_describe(extents: Shape, itemsize: int) -> bool:
    """True unless NumPy refuses to describe the shape at all, even with no elements.

    NumPy needs ``itemsize`` times the product of the non-zero extents to fit a signed 64-bit
    byte count, so ``(2**62, 0)`` has no NumPy array although it holds nothing. (A shape with
    elements whose byte count overflows is simply too large to allocate.)

    Example:
        >>> numpy_can_describe((2**62, 0), 8), numpy_can_describe((2**59, 0), 8)
        (False, True)
    """
    nbytes = itemsize
    for extent in extents:
        nbytes *= extent or 1
        if nbytes > INDEX_LIMIT:
            return False
    return True


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
        values: a flat iterable of real numbers, or a NumPy array with that many elements
            (read in row-major order). Each value is read once and copied; a sized input's
            ``len()`` is compared with the element count before any value is read, and an
            iterator is read at most one value past it. An ndarray subclass is read through
            its plain data (:func:`plain_view`); a masked array is refused.
        dtype: ``numpy.float64`` or ``numpy.float32``; when omitted (``None``), a float32 or
            float64 NumPy array keeps its dtype (NumPy's rule) and any other values become
            float64. (Before, every tensor built without ``dtype`` was float64.)

    Shape:
        ``values``: ``[prod(shape)]``; :meth:`numpy`: ``shape``.

    Raises:
        TensorError: a subclass, in this order: an invalid shape; a dtype other than float64
            or float32, or values that are no container of reals; a value count that differs
            from the element count; a storage that cannot be allocated; then, in flat order,
            the first value that is not a real number (:class:`TensorValueTypeError`) or
            whose conversion to ``dtype`` overflows (:class:`TensorValueOverflowError`).

    Example:
        >>> t = Tensor((2, 2), [1, 2, 3, 4])
        >>> t.shape, t.dtype, t.numpy().tolist()
        ((2, 2), dtype('float64'), [[1.0, 2.0], [3.0, 4.0]])
        >>> Tensor((2,), np.array([0.5, 1.5], dtype=np.float32)).dtype
        dtype('float32')
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
        dtype: npt.DTypeLike | None = None,
    ) -> None:
        extents, count = checked_shape_and_count(shape)
        requested = None if dtype is None else checked_dtype(dtype)
        source = _value_source(values)
        resolved = _inferred_dtype(source) if requested is None else requested
        known = source.size if isinstance(source, np.ndarray) else source.count
        if known is not None and known != count:
            raise DataLengthMismatchError(count, known)
        try:
            array = np.empty(extents, dtype=resolved)
        except (MemoryError, ValueError) as error:
            raise _allocation_error(extents, count) from error
        if isinstance(source, np.ndarray):
            _fill_from_array(array, source)
        else:
            _fill_from_items(array.reshape(-1), source.items)
        array.flags.writeable = False
        _hold(self, array)

    @classmethod
    def from_numpy(cls, array: npt.NDArray[Any]) -> Tensor:
        """A tensor holding a copy of ``array``, with its shape and dtype.

        Unlike ``torch.from_numpy`` the values are copied (a tensor never changes), so later
        writes to ``array`` do not show.

        Args:
            array: a NumPy array (any ndarray subclass, read through its plain data:
                :func:`plain_view`; not a masked array). A float32 or float64 array keeps its
                dtype (in native byte order); an array of any integer dtype becomes float64
                (exactly up to ``2**53``, rounded to nearest beyond). NaN and infinities are
                kept: only a parameter refuses them.

        Shape:
            ``array``: ``[*]``; the tensor: the same.

        Raises:
            TensorValueTypeError: ``array`` is not a NumPy array (a NumPy scalar, a list), is
                a masked array, or has any other dtype: bool (not an integer here), float16,
                longdouble, complex, object, string, structured.
            TensorAllocationError: the copy cannot be allocated.

        Example:
            >>> t = Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
            >>> t.shape, t.dtype, t.tolist()
            ((2, 3), dtype('float32'), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
            >>> Tensor.from_numpy(np.array([1, 2], dtype=np.int8)).dtype
            dtype('float64')
            >>> try:
            ...     Tensor.from_numpy(np.array([True]))
            ... except TensorValueTypeError as error:
            ...     print(error.detail)
            from_numpy takes a float32, float64 or integer array, got bool
        """
        plain = _numpy_array_source(array, "from_numpy")
        dtype = kept_float_dtype(plain.dtype)
        if dtype is None and plain.dtype.kind in "iu":
            dtype = np.dtype(np.float64)
        if dtype is None:
            raise TensorValueTypeError(
                f"from_numpy takes a float32, float64 or integer array, got {plain.dtype}"
            )
        return cls(plain.shape, plain, dtype=dtype)

    @classmethod
    def zeros(cls, shape: Sequence[int], dtype: npt.DTypeLike = np.float64) -> Tensor:
        """A tensor of zeros (the shape and dtype are checked like the constructor's)."""
        extents, count = checked_shape_and_count(shape)
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

    def __array__(
        self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
    ) -> FloatArray:
        """``np.asarray(tensor)``: the values, as :meth:`numpy` gives them (read-only and
        without a copy, unless a copy or another dtype is asked for). A tensor is a constant,
        so every NumPy function computes on these values.

        Example:
            >>> np.dot(Tensor((2,), [1, 2]), Tensor((2,), [3, 4]))
            np.float64(11.0)
        """
        return np.array(self.numpy(), dtype=dtype, copy=copy)

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

    # Pickle and copy -------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the values array, rebuilt by :func:`restore_tensor` (which checks it)."""
        return restore_tensor, (self._array,)

    def __copy__(self) -> Tensor:
        """The tensor itself: it is immutable (as ``copy.copy`` of a tuple)."""
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A tensor holding its own copy of the values (a deep copy of a parameter's live
        ``value`` does not follow later optimizer steps)."""
        return restore_tensor(self._array)


def restore_tensor(array: object) -> Tensor:
    """Rebuild a pickled :class:`Tensor`: the unpickler's entry point (see ``__reduce__``).

    A pickle can be crafted, so ``array`` is checked as any caller's input: it must be a
    float32 or float64 NumPy array (either byte order; an ndarray subclass is read through its
    plain data, a masked array is refused). The tensor holds its own copy of the values, in
    native byte order, so nothing the unpickler handed over (an out-of-band buffer of pickle
    protocol 5 included) can change it.

    Raises:
        TensorValueTypeError: ``array`` is not such an array.
        TensorAllocationError: the copy cannot be allocated.
    """
    plain = _numpy_array_source(array, "a pickled Tensor")
    dtype = kept_float_dtype(plain.dtype)
    if dtype is None:
        raise TensorValueTypeError(f"a pickled Tensor holds float32 or float64, got {plain.dtype}")
    return Tensor(plain.shape, plain, dtype=dtype)


def kept_float_dtype(dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    """float32 or float64 in native byte order when ``dtype`` is one of them in either byte
    order; None for any other dtype (float16 and longdouble included).

    Example:
        >>> kept_float_dtype(np.dtype(">f4")), kept_float_dtype(np.dtype(np.int64))
        (dtype('float32'), None)
    """
    if dtype.kind != "f":
        return None
    native = dtype.newbyteorder("=")
    return native if native in SUPPORTED_DTYPES else None


def _numpy_array_source(array: object, what: str) -> np.ndarray[Any, Any]:
    """The plain data of a NumPy array given to ``what``; anything else, or a masked array, is
    a TensorValueTypeError."""
    if not isinstance(array, np.ndarray):
        raise TensorValueTypeError(f"{what} needs a NumPy array, got {type(array).__name__}")
    if is_masked_array(array):
        raise TensorValueTypeError("a masked array has missing values")
    return plain_view(array)


def _inferred_dtype(source: np.ndarray[Any, Any] | _Items) -> np.dtype[Any]:
    """The dtype of a tensor built without ``dtype``: a float32 or float64 array's own, else
    float64."""
    kept = kept_float_dtype(source.dtype) if isinstance(source, np.ndarray) else None
    return np.dtype(np.float64) if kept is None else kept


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


@dataclass(frozen=True, slots=True)
class _Items:
    """Values to read one by one: the iterator, and the length a sized input reported."""

    items: Iterator[object]
    count: int | None


def _value_source(values: object) -> np.ndarray[Any, Any] | _Items:
    """The caller's values as a plain real array or an iterator, without reading a value.

    A sized input's ``len()`` is read here, once, so the count is checked before any value
    is copied.
    """
    if isinstance(values, str | bytes):
        raise TensorValueTypeError(f"got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        if is_masked_array(values):
            raise TensorValueTypeError("a masked array has missing values")
        plain = plain_view(values)
        if plain.dtype.kind not in "biuf":
            raise TensorValueTypeError(f"array dtype {plain.dtype} is not real")
        return plain
    if not isinstance(values, Iterable):
        raise TensorValueTypeError(f"got {type(values).__name__}, not a sequence")
    try:
        count = len(values) if isinstance(values, Sized) else None
        items = iter(values)
    except CONVERSION_ERRORS as error:
        raise TensorValueTypeError(f"cannot read {type(values).__name__}: {error}") from error
    return _Items(items, count)


def _fill_from_array(out: FloatArray, plain: np.ndarray[Any, Any]) -> None:
    """Copy ``plain`` (read once) into ``out`` in row-major order; a finite value that
    overflows the dtype is an error."""
    target = out.reshape(plain.shape)  # ``out`` is contiguous: a view of any equal-size shape
    if plain.dtype.kind != "f" or plain.dtype.itemsize <= out.dtype.itemsize:
        np.copyto(target, plain, casting="unsafe")  # exact or rounded, never infinite
        return
    source = np.array(plain, copy=True)  # narrowing: one owned read, to compare with
    _store(source.reshape(-1), out.reshape(-1), 0, None)


def _fill_from_items(flat: FloatArray, items: Iterator[object]) -> None:
    """Convert each value once, in flat order and in blocks, into ``flat``.

    Raises:
        TensorValueTypeError, TensorValueOverflowError: the first bad value in flat order.
        DataLengthMismatchError: the iterable ends early, or has more values than ``flat``
            (then ``actual`` is ``expected + 1``: reading stops one value past the count).
    """
    expected = flat.size
    for start in range(0, expected, _CHUNK):
        wanted = min(_CHUNK, expected - start)
        block = list(islice(items, wanted))
        _convert_block(block, flat[start : start + len(block)], start)
        if len(block) < wanted:
            raise DataLengthMismatchError(expected, start + len(block))
    if next(items, _END) is not _END:
        raise DataLengthMismatchError(expected, expected + 1)


_END: Final = object()


def _convert_block(block: list[object], out: FloatArray, offset: int) -> None:
    """Convert ``block`` into ``out`` (as long), each value read once, in flat order."""
    if set(map(type, block)) <= {float, int}:  # immutable built-ins: NumPy may read them itself
        try:
            wide = np.array(block, dtype=np.float64)
        except OverflowError:
            pass  # an int beyond float64: the value-by-value pass below names its position
        else:
            _store(wide, out, offset, block)
            return
    converted: list[float] = []
    failure: TensorError | None = None
    for value in block:
        result = _converted_value(value, offset + len(converted), out.dtype)
        if isinstance(result, TensorError):
            failure = result
            break
        converted.append(result)
    _store(np.array(converted, dtype=np.float64), out[: len(converted)], offset, block)
    if failure is not None:
        raise failure


def _converted_value(value: object, position: int, dtype: np.dtype[Any]) -> float | TensorError:
    """``float(value)`` for a real number, else the error that names it."""
    if not isinstance(value, numbers.Real):
        return TensorValueTypeError(
            f"value at flat position {position} is {type(value).__name__} {value!r}"
        )
    try:
        converted = float(value)
    except OverflowError:
        return TensorValueOverflowError(position, value, str(dtype))
    except CONVERSION_ERRORS:
        return TensorValueTypeError(
            f"value at flat position {position} is {type(value).__name__} {value!r}"
        )
    if math.isinf(converted) and isinstance(value, np.floating) and np.isfinite(value):
        return TensorValueOverflowError(position, value, str(dtype))  # a finite longdouble
    return converted


def _store(
    wide: npt.NDArray[np.floating[Any]],
    out: FloatArray,
    offset: int,
    originals: list[object] | None,
) -> None:
    """Cast ``wide`` into ``out``; a finite value that becomes infinite is an overflow, reported
    with the caller's own value (``originals``) or the wide one."""
    if out.dtype.itemsize >= wide.dtype.itemsize:
        np.copyto(out, wide, casting="unsafe")  # widening or the same: exact
        return
    with np.errstate(over="ignore"):
        np.copyto(out, wide, casting="unsafe")
    if bool(np.isfinite(out).all()):
        return
    overflowed = np.flatnonzero(np.isfinite(wide) & ~np.isfinite(out))
    if overflowed.size:
        index = int(overflowed[0])
        value = originals[index] if originals is not None else wide[index].item()
        raise TensorValueOverflowError(offset + index, value, str(out.dtype))
