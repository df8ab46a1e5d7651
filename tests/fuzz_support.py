"""Helpers of the property tests: expected outcomes, plain reference models and state snapshots.

The reference models restate the contract (docs/spec/ch18-token-embeddings.md and
docs/errors.md) as plain Python: they decide which documented error a call must raise, with
which attributes, or which values it must return. They never call the code under test.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.tensor import (
    INDEX_LIMIT,
    MAX_AXES,
    NegativeExtentError,
    NonIntegerExtentError,
    ShapeOverflowError,
    ShapeTypeError,
    TooManyAxesError,
)

INTEGER_DTYPES = (
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
)
HUGE_EXTENTS = (2**31, 2**32, 2**61, 2**62, 2**63 - 1, 2**63, 2**64)


# Expected outcomes -------------------------------------------------------------------------


@dataclass(frozen=True)
class Raises:
    """A documented error: its exact class, its attributes and, if it wraps one, its cause."""

    error: type[BaseException]
    attributes: dict[str, object] = field(default_factory=dict)
    cause: Raises | None = None


@dataclass(frozen=True)
class Returns:
    """A successful call and what it must return."""

    value: object = None


Outcome = Raises | Returns


def same_value(actual: object, expected: object) -> bool:
    """Equal values of one type; NaN equals NaN; arrays compare element-wise."""
    if actual is expected:
        return True
    if isinstance(expected, np.ndarray) or isinstance(actual, np.ndarray):
        return bool(
            isinstance(actual, np.ndarray)
            and isinstance(expected, np.ndarray)
            and actual.shape == expected.shape
            and np.array_equal(actual, expected, equal_nan=actual.dtype.kind == "f")
        )
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, float) and expected != expected:
        return actual != actual
    try:
        return bool(actual == expected)
    except (TypeError, ValueError):
        return False


def check_error(error: BaseException, expected: Raises) -> None:
    """The error is exactly the expected class with the expected attributes and cause."""
    assert type(error) is expected.error, f"expected {expected.error.__name__}, got {error!r}"
    for name, value in expected.attributes.items():
        assert same_value(getattr(error, name), value), (
            f"{type(error).__name__}.{name} is {getattr(error, name)!r}, expected {value!r}"
        )
    if expected.cause is not None:
        assert error.__cause__ is not None, f"{error!r} has no __cause__"
        check_error(error.__cause__, expected.cause)


def outcome_of(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Run ``call``; return its result or the exception it raised (never a bare BaseException)."""
    try:
        return call(), None
    except Exception as error:  # every documented error derives from Exception
        return None, error


def check_outcome(call: Callable[[], Any], expected: Outcome) -> Any:
    """Run ``call`` and check it raised the expected error or returned without error."""
    result, error = outcome_of(call)
    with suppress(InvalidArgument):  # outside a property test there are no statistics
        # shown by --hypothesis-show-statistics: how often each outcome was exercised
        event(f"outcome: {type(error).__name__ if error is not None else 'result'}")
    if isinstance(expected, Raises):
        assert error is not None, f"expected {expected.error.__name__}, got a result {result!r}"
        check_error(error, expected)
        return None
    if error is not None:
        raise AssertionError(f"expected a result, got {error!r}") from error
    return result


# Reference models ----------------------------------------------------------------------------


def reference_layout(shape: object) -> tuple[tuple[int, ...], int] | Raises:
    """Strides and element count of a row-major shape, or the documented layout error."""
    if isinstance(shape, str | bytes) or not isinstance(shape, Iterable):
        return Raises(ShapeTypeError, {"shape": shape})
    extents: list[int] = []
    for axis, extent in enumerate(shape):
        if axis == MAX_AXES:
            return Raises(TooManyAxesError, {"limit": MAX_AXES})
        if isinstance(extent, bool | np.bool_) or not isinstance(extent, numbers.Integral):
            return Raises(NonIntegerExtentError, {"axis": axis, "extent": extent})
        if int(extent) < 0:
            return Raises(NegativeExtentError, {"axis": axis, "extent": int(extent)})
        extents.append(int(extent))
    strides = []
    running = 1
    for extent in reversed(extents):
        strides.append(running)
        running *= extent
        if running > INDEX_LIMIT:
            return Raises(ShapeOverflowError, {"shape": tuple(extents)})
    return tuple(reversed(strides)), running


@dataclass(frozen=True)
class IdScan:
    """What the contract's flat scan finds: a container problem, a count, a bad ID, or IDs."""

    container_problem: bool = False
    count: int = 0
    bad_kind: str | None = None  # "type", "bounds", or "dtype" (an empty non-integer array)
    bad_position: int = 0
    bad_value: object = None
    ids: tuple[int, ...] = ()


def reference_scan(ids: object, rows: int) -> IdScan:
    """Normalize flat IDs like the contract: a 1-D array or a sequence, scanned in flat order."""
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1:
            return IdScan(container_problem=True)
        if ids.dtype.kind == "O":
            items: list[object] = list(ids.tolist())
        else:
            if ids.dtype.kind not in "iu":
                if not ids.size:
                    return IdScan(bad_kind="dtype", bad_value=str(ids.dtype))
                return IdScan(
                    count=ids.size, bad_kind="type", bad_position=0, bad_value=ids[0].item()
                )
            items = [int(value) for value in ids.tolist()]
    elif isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        return IdScan(container_problem=True)
    else:
        items = list(ids)
    for position, value in enumerate(items):
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
            return IdScan(count=len(items), bad_kind="type", bad_position=position, bad_value=value)
        if not 0 <= int(value) < rows:
            return IdScan(
                count=len(items), bad_kind="bounds", bad_position=position, bad_value=int(value)
            )
    return IdScan(count=len(items), ids=tuple(int(value) for value in items))


class RaggedError(Exception):
    """Nested lists that do not form a regular array."""


def reference_nested(ids: object) -> tuple[list[object], tuple[int, ...]]:
    """Flatten nested lists/tuples (or one scalar) in row-major order; RaggedError if irregular."""
    if isinstance(ids, np.ndarray):
        return reference_nested(ids.tolist())

    def shape_of(item: object) -> tuple[int, ...]:
        if not isinstance(item, list | tuple):
            return ()
        if not item:
            return (0,)
        return (len(item), *shape_of(item[0]))

    def flatten(item: object, shape: tuple[int, ...]) -> list[object]:
        if not shape:
            if isinstance(item, list | tuple):
                raise RaggedError
            return [item]
        if not isinstance(item, list | tuple) or len(item) != shape[0]:
            raise RaggedError
        flat: list[object] = []
        for inner in item:
            flat.extend(flatten(inner, shape[1:]))
        return flat

    shape = shape_of(ids)
    return flatten(ids, shape), shape


def plain_lookup_array(table: np.ndarray[Any, Any], ids: Sequence[int]) -> np.ndarray[Any, Any]:
    """Rows ``table[ids[p]]`` stacked by a Python loop."""
    width = table.shape[1]
    out = np.empty((len(ids), width), dtype=table.dtype)
    for position, token_id in enumerate(ids):
        for feature in range(width):
            out[position, feature] = table[token_id, feature]
    return out


class ReferenceSplitMix64:
    """The published SplitMix64, restated as plain integer arithmetic."""

    def __init__(self, state: int) -> None:
        self.state = state

    def next_unit(self) -> float:
        self.state = (self.state + 0x9E3779B97F4A7C15) % 2**64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
        z ^= z >> 31
        return (z >> 11) * 2.0**-53


# State snapshots -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LeafState:
    """Everything a failing call must leave as it was on a parameter leaf."""

    values: bytes
    dense_gradient: bytes | None
    sparse_rows: tuple[int, ...] | None
    sparse_values: bytes | None
    revision: int


def leaf_state(leaf: TensorValue) -> LeafState:
    gradient = leaf.gradient_snapshot()
    sparse = leaf.sparse_gradient
    return LeafState(
        values=leaf.numpy().tobytes(),
        dense_gradient=None if gradient is None else gradient.numpy().tobytes(),
        sparse_rows=None if sparse is None else tuple(sparse.rows.tolist()),
        sparse_values=None if sparse is None else sparse.values.tobytes(),
        revision=leaf.value_revision,
    )


# Strategies ----------------------------------------------------------------------------------


def numpy_integers(dtype: type[np.integer[Any]], low: int, high: int) -> st.SearchStrategy[Any]:
    """Scalars of ``dtype`` in ``[low, high]`` clipped to the dtype's range."""
    info = np.iinfo(dtype)
    return st.integers(max(low, int(info.min)), min(high, int(info.max))).map(dtype)


def id_items(rows: int) -> st.SearchStrategy[object]:
    """One flat ID: mostly valid Python ints, and every kind of bad or exotic value."""
    valid = st.integers(0, rows - 1)
    return st.one_of(
        valid,
        valid,
        valid,
        st.integers(-3, rows + 3),
        st.sampled_from([-(2**63) - 1, 2**63, 2**64, 2**70]),
        st.sampled_from(INTEGER_DTYPES).flatmap(lambda d: numpy_integers(d, -2, rows + 2)),
        st.booleans(),
        st.just(np.bool_(True)),
        st.floats(allow_nan=True, allow_infinity=True),
        st.just(np.float64(1.0)),
        st.none(),
        st.text(max_size=2),
        st.lists(valid, max_size=2),
    )


def id_arrays(rows: int, count: int) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """A 1-D NumPy array of ``count`` IDs of any integer dtype (or bool / float / str),
    sometimes non-contiguous or read-only."""

    @st.composite
    def build(draw: st.DrawFn) -> np.ndarray[Any, Any]:
        kind = draw(st.sampled_from(["int", "int", "int", "bool", "float", "str", "object"]))
        if kind == "int":
            dtype = draw(st.sampled_from(INTEGER_DTYPES))
            info = np.iinfo(dtype)
            high = draw(st.sampled_from([rows - 1, rows - 1, rows + 2, int(info.max)]))
            low = draw(st.sampled_from([0, 0, -2])) if info.min < 0 else 0
            values = draw(
                st.lists(st.integers(low, max(low, high)), min_size=count, max_size=count)
            )
            array = np.array(values, dtype=dtype)
        elif kind == "bool":
            array = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)))
            array = array.astype(bool)
        elif kind == "float":
            floats = st.one_of(st.integers(0, rows - 1).map(float), st.just(float("nan")))
            array = np.array(draw(st.lists(floats, min_size=count, max_size=count)), dtype=float)
        elif kind == "str":
            array = np.array([str(i % rows) for i in range(count)], dtype=str)
            if count == 0:
                array = np.array([], dtype=str)
        else:
            items = draw(st.lists(id_items(rows), min_size=count, max_size=count))
            array = np.empty(count, dtype=object)
            for position, item in enumerate(items):
                array[position] = item
        if draw(st.booleans()):  # non-contiguous: every other element of a doubled buffer
            doubled = np.empty(2 * count, dtype=array.dtype)
            doubled[::2] = array
            array = doubled[::2]
        if draw(st.booleans()):
            array.flags.writeable = False
        return array

    return build()


def shapes() -> st.SearchStrategy[object]:
    """Token shapes: mostly small valid tuples, and every kind of bad extent or container."""
    small = st.integers(0, 3)
    extent = st.one_of(
        small,
        small,
        small,
        st.sampled_from(INTEGER_DTYPES).flatmap(lambda d: numpy_integers(d, 0, 3)),
        st.integers(-3, -1),
        st.sampled_from(HUGE_EXTENTS),
        st.booleans(),
        st.floats(0, 3),
        st.none(),
        st.just("2"),
    )
    valid = st.lists(small, max_size=3).map(tuple)
    return st.one_of(
        valid,
        valid,
        valid,
        st.lists(extent, max_size=3).map(tuple),
        st.lists(extent, max_size=3),
        st.sampled_from([7, None, "23", b"\x02", 2.5]),
    )


def numpy_cannot_hold(extents: Sequence[int], itemsize: int) -> bool:
    """True when NumPy rejects the shape: ``itemsize * product of non-zero extents`` overflows."""
    nbytes = itemsize
    for extent in extents:
        nbytes *= extent or 1
    return nbytes > INDEX_LIMIT


def element_count(shape: object) -> int | None:
    """The element count of a valid shape, or None for an invalid one."""
    layout = reference_layout(shape)
    return None if isinstance(layout, Raises) else layout[1]


# Fault injection -----------------------------------------------------------------------------


class NumpyWithFailing(ModuleType):
    """A stand-in for the ``np`` a module imported, where the named functions raise MemoryError.

    Everything else is NumPy's own, so only the allocation under test fails.
    """

    def __init__(self, *failing: str) -> None:
        super().__init__("numpy")
        self._failing = set(failing)

    def __getattr__(self, name: str) -> Any:
        if name in self._failing:

            def fail(*args: object, **kwargs: object) -> Any:
                raise MemoryError(f"injected: numpy.{name} cannot allocate")

            return fail
        return getattr(np, name)


@contextmanager
def failing_numpy(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, *names: str
) -> Iterator[None]:
    """Make ``module.np.<name>`` raise MemoryError inside the block."""
    with monkeypatch.context() as patch:
        patch.setattr(module, "np", NumpyWithFailing(*names))
        yield


@contextmanager
def within_seconds(limit: float) -> Iterator[None]:
    """Fail if the block takes ``limit`` seconds or longer."""
    start = time.perf_counter()
    yield
    elapsed = time.perf_counter() - start
    assert elapsed < limit, f"took {elapsed:.3f} s, the limit is {limit} s"
