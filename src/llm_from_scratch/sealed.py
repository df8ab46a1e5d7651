"""Sealed objects: frozen dataclasses that only their own module's trusted constructor builds.

A public class validates its input in its class methods, then builds the instance through its
module's trusted constructor, which passes the module's private key; calling the class in any
other way raises ``TypeError`` with the class's hint. Being frozen dataclasses, sealed objects
refuse every attribute assignment with ``dataclasses.FrozenInstanceError`` (an
``AttributeError``).

Example:
    >>> from dataclasses import dataclass
    >>> _KEY = object()
    >>> @dataclass(frozen=True, eq=False)
    ... class Pair(Sealed, key=_KEY, hint="build a Pair with make_pair"):
    ...     __slots__ = ("left", "right")
    ...     left: int
    ...     right: int
    >>> Pair(1, 2, key=_KEY)
    Pair(left=1, right=2)
    >>> Pair(1, 2)
    Traceback (most recent call last):
    ...
    TypeError: build a Pair with make_pair
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any, ClassVar, Self


@dataclass(frozen=True, eq=False, repr=False)
class Sealed:
    """Base class of sealed objects; subclass with the module's private ``key`` and a ``hint``.

    Each subclass is itself a ``@dataclass(frozen=True)`` that declares ``__slots__`` for its
    fields (not ``slots=True``, which would rebuild the class without its ``key`` and ``hint``).
    """

    __slots__ = ()
    _trusted_key: ClassVar[object]
    _hint: ClassVar[str]

    key: InitVar[object] = field(default=None, kw_only=True)

    def __init_subclass__(cls, *, key: object, hint: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._trusted_key = key
        cls._hint = hint

    def __new__(cls, *args: Any, key: object = None, **kwargs: Any) -> Self:
        # Before the generated __init__ binds any argument, so that every untrusted call,
        # ``Embedding()`` included, gets the hint.
        if key is not cls._trusted_key:
            raise TypeError(cls._hint)
        return super().__new__(cls)
