"""Caller inputs that misbehave, and the strategies that generate them.

- values whose answer changes on every read (an Integral, a Real, a ``str`` subclass), each
  counting how often it was read;
- ndarray subclasses whose methods show other values than the memory they hold, and masked
  arrays;
- sequences whose ``len()`` disagrees with what they yield, endless iterables and lists that
  contain themselves.

A test states what the library must see: the memory an array holds, the first answer of a
changing value, the plain ``str`` a subclass holds. None of these helpers calls the library.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
from hypothesis import strategies as st


class ChangingInteger:
    """An Integral whose ``__index__`` and ``__int__`` answer the next value of ``answers``
    (cycling), and that counts its reads."""

    def __init__(self, answers: Sequence[int]) -> None:
        self.answers = tuple(answers)
        self.reads = 0
        self._next = itertools.cycle(self.answers)

    @property
    def first(self) -> int:
        return self.answers[0]

    def __index__(self) -> int:
        self.reads += 1
        return next(self._next)

    __int__ = __index__

    def __repr__(self) -> str:
        return f"ChangingInteger({list(self.answers)})"


numbers.Integral.register(ChangingInteger)


class ChangingReal:
    """A Real whose ``__float__`` answers the next value of ``answers`` (cycling), and that
    counts its reads."""

    def __init__(self, answers: Sequence[float]) -> None:
        self.answers = tuple(answers)
        self.reads = 0
        self._next = itertools.cycle(self.answers)

    @property
    def first(self) -> float:
        return self.answers[0]

    def __float__(self) -> float:
        self.reads += 1
        return float(next(self._next))

    def __repr__(self) -> str:
        return f"ChangingReal({list(self.answers)})"


numbers.Real.register(ChangingReal)


class FailingInteger:
    """An Integral whose ``__index__`` raises ``TypeError`` (it cannot be converted)."""

    def __index__(self) -> int:
        raise TypeError("this integer cannot be read")

    def __repr__(self) -> str:
        return "FailingInteger()"


numbers.Integral.register(FailingInteger)


class LyingStr(str):
    """A ``str`` subclass whose overridden methods show another text than the one it holds."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        return b"token_embedding.weight"

    def __str__(self) -> str:
        return "token_embedding.weight"

    def __len__(self) -> int:
        return 22

    def __iter__(self) -> Iterator[str]:
        return iter("token_embedding.weight")

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class ShowsOtherValues(np.ndarray):  # type: ignore[type-arg]
    """An ndarray subclass whose element access, reductions and conversions all answer
    something else than its memory: a library that reads it through these methods sees
    values that are not there."""

    def __getitem__(self, key: Any) -> Any:
        return np.zeros_like(np.ndarray.__getitem__(self, key))

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return 0

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return 0

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        return np.zeros(self.shape, dtype=args[0] if args else kwargs.get("dtype"))

    def tolist(self) -> Any:
        return np.zeros(self.shape, dtype=np.int64).tolist()

    def reshape(self, *args: Any, **kwargs: Any) -> Any:
        return np.zeros(np.ndarray.reshape(np.asarray(self), *args).shape, dtype=self.dtype)

    def ravel(self, *args: Any, **kwargs: Any) -> Any:
        return np.zeros(self.size, dtype=self.dtype)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        return np.zeros(self.shape, dtype=self.dtype)

    def view(self, *args: Any, **kwargs: Any) -> Any:
        return np.zeros(self.shape, dtype=self.dtype)

    def __iter__(self) -> Iterator[Any]:
        return iter(np.zeros(self.shape, dtype=self.dtype))

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return np.zeros(self.shape, dtype=dtype or self.dtype)


class LiesAboutItsLayout(np.ndarray):  # type: ignore[type-arg]
    """An ndarray subclass whose Python-level ``dtype``, ``shape``, ``ndim`` and ``size`` all
    answer something else than the array it is."""

    @property  # type: ignore[misc]
    def dtype(self) -> Any:
        return np.dtype(object)

    @property  # type: ignore[misc]
    def shape(self) -> Any:
        return (0,)

    @property  # type: ignore[misc]
    def ndim(self) -> Any:
        return 1

    @property  # type: ignore[misc]
    def size(self) -> Any:
        return 0


class CountedSequence(Sequence[object]):
    """A sequence whose ``len()`` answers ``length`` but that holds ``items``; counts reads."""

    def __init__(self, items: Sequence[object], length: int) -> None:
        self._items = list(items)
        self._length = length
        self.length_reads = 0

    def __len__(self) -> int:
        self.length_reads += 1
        return self._length

    @overload
    def __getitem__(self, index: int) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[object]: ...
    def __getitem__(self, index: int | slice) -> object:
        return self._items[index]

    def __iter__(self) -> Iterator[object]:
        return iter(self._items)


def self_containing_list(*before: object) -> list[object]:
    """``[*before, <the list itself>]``."""
    nest: list[object] = list(before)
    nest.append(nest)
    return nest


# Strategies ------------------------------------------------------------------------------


def array_layouts(base: np.ndarray[Any, Any]) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """Arrays holding exactly the values of the 1-D ``base`` in row-major order, in other
    layouts: a copy, every other element of a doubled buffer, a reversed view, read-only."""

    def build(layout: str, read_only: bool) -> np.ndarray[Any, Any]:
        if layout == "strided":
            doubled = np.empty(2 * base.size, dtype=base.dtype)
            doubled[::2] = base
            array = doubled[::2]
        elif layout == "reversed":
            array = np.array(base[::-1])[::-1]
        else:
            array = np.array(base)
        if read_only:
            array.flags.writeable = False
        return array

    return st.builds(build, st.sampled_from(["copy", "strided", "reversed"]), st.booleans())


def masks(size: int) -> st.SearchStrategy[Any]:
    """A mask for ``size`` values: none at all, all false, or any pattern."""
    return st.one_of(
        st.just(np.ma.nomask),
        st.just(np.zeros(size, dtype=bool)),
        st.lists(st.booleans(), min_size=size, max_size=size).map(np.array),
    )


def endless_shapes() -> st.SearchStrategy[Any]:
    """Shape iterables that never end, each built fresh (an iterator is read only once)."""
    return st.sampled_from(
        [
            lambda: itertools.repeat(1),
            lambda: itertools.repeat(0),
            lambda: itertools.count(1),
            lambda: itertools.cycle([1, 2]),
            lambda: (1 for _ in itertools.count()),
        ]
    ).map(lambda make: make())
