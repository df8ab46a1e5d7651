"""How tests check a call: its outcome against a reference model, the state it must leave as it
was, injected allocation failures, time limits and crafted pickles."""

from __future__ import annotations

import pickle
import string
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import event
from hypothesis.errors import InvalidArgument

from llm_from_scratch.autograd import TensorValue

from reference import Outcome, Raises, Returns


class MessageFormatter(string.Formatter):
    """The template language of the error rules, written again for the tests: ``str.format``
    with ``!t`` for a type name, and a tuple printed as a list unless converted."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "t":
            return type(value).__name__
        if conversion is None and isinstance(value, tuple):
            return list(value)
        return super().convert_field(value, conversion)


# Outcomes ------------------------------------------------------------------------------------


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


@contextmanager
def raises_rule(
    family: type[BaseException], rule: str, *, match: str | None = None, **fields: object
) -> Iterator[Any]:
    """A ``with`` block that must raise exactly ``family`` with ``rule`` and these fields
    (compared by :func:`same_value`), its message matching ``match`` if given; it gives
    pytest's ``ExceptionInfo``."""
    with pytest.raises(family, match=match) as caught:
        yield caught
    error = caught.value
    assert type(error) is family, f"expected {family.__name__}, got {error!r}"
    assert getattr(error, "rule", None) == rule, f"expected rule {rule}, got {error!r}"
    for name, value in fields.items():
        assert same_value(getattr(error, name), value), (
            f"{rule}: {name} is {getattr(error, name)!r}, expected {value!r}"
        )


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


def check_lookup(call: Callable[[], Any], table: np.ndarray[Any, Any], expected: Outcome) -> None:
    """A row lookup from ``table`` raised the expected error, or returned a recorded operation
    whose values are bit for bit the expected array."""
    result = check_outcome(call, expected)
    if isinstance(expected, Returns):
        assert isinstance(result, TensorValue) and result.kind == "operation"
        assert result.dtype == table.dtype
        assert result.shape == expected.value.shape  # type: ignore[attr-defined]
        assert result.numpy().tobytes() == expected.value.tobytes()  # type: ignore[attr-defined]


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


# Fault injection and time limits -------------------------------------------------------------


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


def system_creates(folder: str, name: str) -> bool:
    """Whether plain ``open(f"{folder}/{name}", "xb")`` creates the file (``folder`` new and
    empty): the system's own answer, the oracle of the path property tests."""
    try:
        with open(f"{folder}/{name}", "xb"):
            return True
    except (OSError, ValueError):  # ValueError: a NUL; UnicodeEncodeError: a lone surrogate
        return False


# Crafted pickles -----------------------------------------------------------------------------


class PicklePayload:
    """An object that pickles as the call ``function(*args)``: what a crafted pickle can ask a
    rebuild function to do with any arguments."""

    def __init__(self, function: Callable[..., Any], *args: object) -> None:
        self.function = function
        self.args = args

    def __reduce__(self) -> tuple[Any, ...]:
        return self.function, self.args


def unpickled(payload: object, protocol: int = pickle.HIGHEST_PROTOCOL) -> Any:
    """``pickle.loads(pickle.dumps(payload, protocol))``."""
    return pickle.loads(pickle.dumps(payload, protocol))


def shown_vector(lexemes: tuple[str, ...]) -> str:
    """A vector of the trace's float lexemes as a figure shows it, worked out independently:
    each value as the shortest decimal that is exact (``4.000000000000`` is ``4``)."""
    from fractions import Fraction

    texts = []
    for lexeme in lexemes:
        value = Fraction(lexeme)
        texts.append(str(value.numerator) if value.denominator == 1 else str(float(value)))
    return f"[{', '.join(texts)}]"
