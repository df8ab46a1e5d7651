"""Contiguous row-major float storage (course chapter 8): a shape is a tuple of non-negative
ints (``()`` a scalar); :func:`checked_row_major_layout` alone turns one into strides and a count.
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

from llm_from_scratch.errors import AllocationError, NonFiniteError, ShapeError

if TYPE_CHECKING:
    import numpy.typing as npt

Shape: TypeAlias = tuple[int, ...]
FloatArray: TypeAlias = "np.ndarray[Any, np.dtype[np.floating[Any]]]"
IndexArray: TypeAlias = "np.ndarray[Any, np.dtype[np.intp]]"

INDEX_LIMIT: Final = 2**63 - 1
"""The largest element count or stride a signed 64-bit index can address."""
MAX_AXES: Final = 64 if NumpyVersion(np.__version__) >= "2.0.0" else 32
"""The most axes a shape may have: NumPy's own limit (64 since NumPy 2.0, 32 before)."""
SUPPORTED_DTYPES: Final = (np.dtype(np.float64), np.dtype(np.float32))
CONVERSION_ERRORS: Final = (TypeError, ValueError, ArithmeticError)  # a failed int() or float()

_CHUNK: Final = 1 << 16  # caller values converted per block (bounds temporary memory)
_END: Final = object()


def is_masked_array(value: object) -> bool:
    """True for a ``numpy.ma.MaskedArray`` (never imports ``numpy.ma``: none exists before)."""
    masked = sys.modules.get("numpy.ma")
    return masked is not None and isinstance(value, masked.MaskedArray)


def plain_view(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The memory of ``array`` (any subclass) as a base-class view: no overridden method runs."""
    return np.ndarray.view(array, np.ndarray)


def checked_shape(shape: object) -> Shape:
    """``shape`` as a tuple of Python ints, each extent read once (at most ``MAX_AXES + 1``); else
    ``shape.type``, ``.too-many-axes``, ``.extent-type`` (a bool too) or ``.negative-extent``."""
    if (
        type(shape) is tuple
        and len(shape) <= MAX_AXES
        and all(type(extent) is int and extent >= 0 for extent in shape)
    ):
        return shape  # Python ints cannot change: nothing to convert
    if isinstance(shape, str | bytes) or not isinstance(shape, Iterable):
        raise ShapeError("shape.type", shape=shape)
    source: Iterable[object] = shape
    if isinstance(shape, np.ndarray):
        if is_masked_array(shape) or plain_view(shape).ndim != 1:
            raise ShapeError("shape.type", shape=shape)
        source = plain_view(shape)
    try:
        extents_read = iter(source)
    except TypeError as error:
        raise ShapeError("shape.type", shape=shape) from error
    extents: list[int] = []
    for axis, extent in enumerate(islice(extents_read, MAX_AXES + 1)):
        if axis == MAX_AXES:
            raise ShapeError("shape.too-many-axes", limit=MAX_AXES)
        extents.append(_checked_extent(axis, extent))
    return tuple(extents)


def _checked_extent(axis: int, extent: object) -> int:
    if isinstance(extent, bool | np.bool_) or not isinstance(extent, numbers.Integral):
        raise ShapeError("shape.extent-type", axis=axis, extent=extent)
    try:
        value = operator.index(extent)
    except CONVERSION_ERRORS as error:
        raise ShapeError("shape.extent-type", axis=axis, extent=extent) from error
    if value < 0:
        raise ShapeError("shape.negative-extent", extent=value, axis=axis)
    return value


def checked_row_major_layout(shape: object) -> tuple[Shape, int]:
    """Turn a shape into row-major strides (in elements) and an element count; never allocates.

    Raises:
        ShapeError: as :func:`checked_shape`; ``shape.overflow``, a suffix product or the
            count beyond ``2**63 - 1``.

    Example:
        >>> checked_row_major_layout((2, 3, 4))
        ((12, 4, 1), 24)
        >>> checked_row_major_layout(())
        ((), 1)
    """
    extents = checked_shape(shape)
    strides, running = [0] * len(extents), 1
    for axis in range(len(extents) - 1, -1, -1):
        strides[axis] = running
        running *= extents[axis]
        if running > INDEX_LIMIT:
            raise ShapeError("shape.overflow", shape=extents)
    return tuple(strides), running


def checked_shape_and_count(shape: object) -> tuple[Shape, int]:
    """``shape`` as :func:`checked_shape` returns it, and its element count.

    Example:
        >>> checked_shape_and_count([2, 3])
        ((2, 3), 6)
    """
    extents = checked_shape(shape)
    return extents, checked_row_major_layout(extents)[1]


def numpy_can_describe(extents: Shape, itemsize: int) -> bool:
    """Whether ``itemsize`` times the non-zero extents fits a signed 64-bit byte count (else
    NumPy refuses the shape, even with no elements).

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
    """``dtype`` if it is float64 or float32, else ``tensor.value-type``."""
    try:
        resolved = np.dtype(dtype)
    except TypeError as error:
        raise _value_type(f"unsupported dtype {dtype!r}") from error
    if resolved not in SUPPORTED_DTYPES:
        raise _value_type(f"dtype must be float64 or float32, got {resolved}")
    return resolved


def _value_type(detail: str) -> ShapeError:
    return ShapeError("tensor.value-type", detail=detail)


_ArrayT = TypeVar("_ArrayT", bound="np.ndarray[Any, Any]")


def read_only_view(array: _ArrayT) -> _ArrayT:
    """A read-only array of ``array``'s values over a read-only buffer (its writeability cannot be
    restored): a view of a C-contiguous array (later writes show through), else a copy.

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
        values: a flat iterable of real numbers, or a NumPy array with that many elements (in
            row-major order; not a masked array), each read once and copied (an iterator at
            most one value past the count, a ``len()`` compared before any value is read).
        dtype: ``numpy.float64`` or ``numpy.float32``; when None, a float32 or float64 array
            keeps its dtype and anything else becomes float64.

    Raises:
        ShapeError: in this order, the shape's layout; ``tensor.value-type`` for a dtype or
            values that are no container of reals; ``tensor.data-length``; ``shape.overflow``
            for a zero-element shape NumPy cannot describe; then, in flat order, a value that
            is no real number (``tensor.value-type``).
        AllocationError: ``tensor.allocation``, before any value is read.
        NonFiniteError: ``tensor.overflow``, a value that overflows ``dtype`` (in flat order,
            with the value-type check).

    Example:
        >>> t = Tensor((2, 2), [1, 2, 3, 4])
        >>> t.shape, t.dtype, t.numpy().tolist()
        ((2, 2), dtype('float64'), [[1.0, 2.0], [3.0, 4.0]])
        >>> Tensor((2,), np.array([0.5, 1.5], dtype=np.float32)).dtype
        dtype('float32')
        >>> try:
        ...     Tensor((2, 2), [1, 2, 3])
        ... except ShapeError as error:
        ...     print(error.rule, error)
        tensor.data-length shape needs 4 values, but data has 3
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
        resolved = requested
        if resolved is None:
            kept = kept_float_dtype(source.dtype) if isinstance(source, np.ndarray) else None
            resolved = np.dtype(np.float64) if kept is None else kept
        known = source.size if isinstance(source, np.ndarray) else source.count
        if known is not None and known != count:
            raise ShapeError("tensor.data-length", expected=count, actual=known)
        try:
            array = np.empty(extents, dtype=resolved)
        except (MemoryError, ValueError) as error:
            raise _allocation_error(extents, count) from error
        if isinstance(source, np.ndarray):
            _fill_from_array(array, source)
        else:
            _fill_from_items(array.reshape(-1), source.items)
        array.flags.writeable = False
        object.__setattr__(self, "_array", array)  # frozen: set as a dataclass sets it

    @classmethod
    def from_numpy(cls, array: npt.NDArray[Any]) -> Tensor:
        """A tensor holding a copy of ``array`` (unlike ``torch.from_numpy``: a tensor never
        changes), with its shape and dtype.

        Args:
            array: a NumPy array, not a masked one. Float32 and float64 keep their dtype (in
                native byte order); any integer dtype becomes float64 (rounded to nearest
                beyond ``2**53``). NaN and infinities are kept.

        Raises:
            ShapeError: ``tensor.value-type``: not a NumPy array, a masked one, or another
                dtype (bool, float16, longdouble, complex, object, ...).
            AllocationError: ``tensor.allocation``, the copy cannot be allocated.

        Example:
            >>> t = Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
            >>> t.shape, t.dtype, t.tolist()
            ((2, 3), dtype('float32'), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
            >>> Tensor.from_numpy(np.array([1, 2], dtype=np.int8)).dtype
            dtype('float64')
            >>> try:
            ...     Tensor.from_numpy(np.array([True]))
            ... except ShapeError as error:
            ...     print(error.detail)
            from_numpy takes a float32, float64 or integer array, got bool
        """
        rule = "from_numpy takes a float32, float64 or integer array"
        return _copied(array, "from_numpy", rule, integers=True)

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
        """The values as a read-only array (no copy; see :func:`read_only_view`)."""
        return read_only_view(self._array)

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> FloatArray:
        """``np.asarray(tensor)``: the values as :meth:`numpy` gives them (or a copy, another
        dtype); a tensor is a constant, so every NumPy function runs.

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

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the values array, rebuilt (and checked) by :func:`restore_tensor`."""
        return restore_tensor, (self._array,)

    def __copy__(self) -> Tensor:
        """The tensor itself: it is immutable."""
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A tensor holding its own copy of the values (it does not follow optimizer steps)."""
        return restore_tensor(self._array)


def restore_tensor(array: object) -> Tensor:
    """Rebuild a pickled :class:`Tensor` from its own copy of ``array``, a float32 or float64
    NumPy array (else ``tensor.value-type``)."""
    return _copied(array, "a pickled Tensor", "a pickled Tensor holds float32 or float64")


def _copied(array: object, what: str, rule: str, integers: bool = False) -> Tensor:
    """A tensor copying a NumPy array given to ``what``: float32 or float64 as it is, integers
    as float64 if allowed, else ``tensor.value-type`` (``rule``)."""
    plain = _numpy_array_source(array, what)
    dtype = kept_float_dtype(plain.dtype)
    if dtype is None and integers and plain.dtype.kind in "iu":
        dtype = np.dtype(np.float64)
    if dtype is None:
        raise _value_type(f"{rule}, got {plain.dtype}")
    return Tensor(plain.shape, plain, dtype=dtype)


def kept_float_dtype(dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    """float32 or float64 in native byte order for either of them in any byte order, else None.

    Example:
        >>> kept_float_dtype(np.dtype(">f4")), kept_float_dtype(np.dtype(np.int64))
        (dtype('float32'), None)
    """
    if dtype.kind != "f":
        return None
    native = dtype.newbyteorder("=")
    return native if native in SUPPORTED_DTYPES else None


def _numpy_array_source(array: object, what: str) -> np.ndarray[Any, Any]:
    """The plain data of a NumPy array given to ``what``, else ``tensor.value-type``."""
    if not isinstance(array, np.ndarray):
        detail = f"{what} needs a NumPy array, got {type(array).__name__}"
        raise _value_type(detail)
    if is_masked_array(array):
        raise _value_type("a masked array has missing values")
    return plain_view(array)


def tensor_without_copy(array: FloatArray) -> Tensor:
    """The trusted constructor: a Tensor viewing ``array`` read-only, neither checked nor copied
    (a later write by the package shows through)."""
    tensor = object.__new__(Tensor)
    object.__setattr__(tensor, "_array", read_only_view(array))
    return tensor


def _allocation_error(extents: Shape, count: int) -> ShapeError | AllocationError:
    """``shape.overflow`` for a zero-element shape NumPy cannot describe, else no memory."""
    if count == 0:
        return ShapeError("shape.overflow", shape=extents)
    return AllocationError("tensor.allocation", elements=count)


@dataclass(frozen=True, slots=True)
class _Items:
    """Values to read one by one, and the length a sized input reported."""

    items: Iterator[object]
    count: int | None


def _value_source(values: object) -> np.ndarray[Any, Any] | _Items:
    """The caller's values as a plain real array or an iterator (``len()`` read once here)."""
    if isinstance(values, str | bytes):
        raise _value_type(f"got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        plain = _numpy_array_source(values, "Tensor")
        if plain.dtype.kind not in "biuf":
            raise _value_type(f"array dtype {plain.dtype} is not real")
        return plain
    if not isinstance(values, Iterable):
        detail = f"got {type(values).__name__}, not a sequence"
        raise _value_type(detail)
    try:
        count = len(values) if isinstance(values, Sized) else None
        items = iter(values)
    except CONVERSION_ERRORS as error:
        detail = f"cannot read {type(values).__name__}: {error}"
        raise _value_type(detail) from error
    return _Items(items, count)


def _fill_from_array(out: FloatArray, plain: np.ndarray[Any, Any]) -> None:
    """Copy ``plain`` (read once) into ``out``; a finite value that overflows is an error."""
    target = out.reshape(plain.shape)  # ``out`` is contiguous: a view of any equal-size shape
    if plain.dtype.kind != "f" or plain.dtype.itemsize <= out.dtype.itemsize:
        np.copyto(target, plain, casting="unsafe")  # exact or rounded, never infinite
        return
    source = np.array(plain, copy=True)  # narrowing: one owned read, to compare with
    _store(source.reshape(-1), out.reshape(-1), 0, None)


def _fill_from_items(flat: FloatArray, items: Iterator[object]) -> None:
    """Convert each value once, in flat order and in blocks, into ``flat``; another count is
    ``tensor.data-length`` (``actual`` ``expected + 1`` for more)."""
    expected = flat.size
    for start in range(0, expected, _CHUNK):
        wanted = min(_CHUNK, expected - start)
        block = list(islice(items, wanted))
        _convert_block(block, flat[start : start + len(block)], start)
        if len(block) < wanted:
            raise ShapeError("tensor.data-length", expected=expected, actual=start + len(block))
    if next(items, _END) is not _END:
        raise ShapeError("tensor.data-length", expected=expected, actual=expected + 1)


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
    failure: ShapeError | NonFiniteError | None = None
    for value in block:
        result = _converted_value(value, offset + len(converted), out.dtype)
        if not isinstance(result, float):
            failure = result
            break
        converted.append(result)
    _store(np.array(converted, dtype=np.float64), out[: len(converted)], offset, block)
    if failure is not None:
        raise failure


def _converted_value(
    value: object, position: int, dtype: np.dtype[Any]
) -> float | ShapeError | NonFiniteError:
    """``float(value)`` for a real number, else the error that names it."""
    overflows = False
    if isinstance(value, numbers.Real):
        try:
            converted = float(value)
        except OverflowError:
            overflows = True
        except CONVERSION_ERRORS:
            pass
        else:
            if not (math.isinf(converted) and isinstance(value, np.floating)):
                return converted
            overflows = bool(np.isfinite(value))  # a finite longdouble beyond float64
            if not overflows:
                return converted
    if overflows:
        return NonFiniteError("tensor.overflow", value=value, position=position, dtype=str(dtype))
    detail = f"value at flat position {position} is {type(value).__name__} {value!r}"
    return _value_type(detail)


def _store(
    wide: npt.NDArray[np.floating[Any]],
    out: FloatArray,
    offset: int,
    originals: list[object] | None,
) -> None:
    """Cast ``wide`` into ``out``; a finite value turned infinite is ``tensor.overflow`` (naming
    the caller's own value when ``originals`` is given)."""
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
        raise NonFiniteError(
            "tensor.overflow", value=value, position=offset + index, dtype=str(out.dtype)
        )
