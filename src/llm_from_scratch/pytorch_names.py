"""PyTorch's names, where this package names the same thing differently: each answers with ours.

Each is declared once, beside what it points to: :class:`PyTorchName` on a class for an attribute
(``layer.weight``, ``optimizer.lr``), :func:`pytorch_keywords` on a function for its keywords
(``SGD(..., lr=0.1)``). Reading, setting or passing one raises ``PyTorchNameError``
(``pytorch.name``, an ``AttributeError`` and a ``TypeError``) naming ours; :data:`DECLARED` lists
them all (the README's table is checked against it).

Example:
    >>> class Optimizer:
    ...     lr = PyTorchName("learning_rate")
    ...
    ...     @pytorch_keywords(lr="learning_rate")
    ...     def __init__(self, learning_rate: float) -> None:
    ...         self.learning_rate = learning_rate
    >>> Optimizer(lr=0.1)
    Traceback (most recent call last):
    ...
    llm_from_scratch.errors.PyTorchNameError: Optimizer has no argument 'lr' (PyTorch's name); \
here: learning_rate
    >>> hasattr(Optimizer(0.1), "lr")
    False
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, NoReturn, Self, TypeVar, cast, overload

from llm_from_scratch.errors import PyTorchNameError

_F = TypeVar("_F", bound=Callable[..., Any])


class Pointer(NamedTuple):
    """One declared PyTorch name: where it is refused and what it points to."""

    owner: str
    kind: Literal["attribute", "argument"]
    pytorch_name: str
    ours: str

    def refused(self, owner: str) -> PyTorchNameError:
        """The error that refuses this name, asked of ``owner``."""
        return PyTorchNameError(
            "pytorch.name",
            owner=owner,
            kind=self.kind,
            pytorch_name=self.pytorch_name,
            ours=self.ours,
        )


DECLARED: list[Pointer] = []
"""Every PyTorch name declared so far, in the order its module defined it."""


class PyTorchName:
    """A class attribute under a PyTorch name: read or written on an instance, it raises the
    error naming ``ours``; read on the class, it is this object (``help()`` shows it)."""

    def __init__(self, ours: str) -> None:
        self.ours = ours
        self.pointer = Pointer("", "attribute", "", ours)

    def __set_name__(self, owner: type, name: str) -> None:
        self.pointer = Pointer(owner.__name__, "attribute", name, self.ours)
        self.__doc__ = f"PyTorch's name; here: {self.ours}"
        DECLARED.append(self.pointer)

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> NoReturn: ...

    def __get__(self, instance: object, owner: type | None = None) -> Self:
        if instance is None:
            return self
        raise self.pointer.refused(type(instance).__name__)

    def __set__(self, instance: object, value: object) -> NoReturn:
        raise self.pointer.refused(type(instance).__name__)


def pytorch_keywords(**ours: str) -> Callable[[_F], _F]:
    """Refuse each keyword named in ``ours`` (PyTorch's name to ours) before the decorated
    function binds its arguments; ``owner`` is the class for ``__init__``, else
    ``Class.method`` or ``module.function``. The function keeps its name, docstring, signature."""

    def decorate(function: _F) -> _F:
        owner = function.__qualname__.removesuffix(".__init__")
        if "." not in function.__qualname__:
            owner = f"{function.__module__.rsplit('.', 1)[-1]}.{owner}"
        pointers = {name: Pointer(owner, "argument", name, to) for name, to in ours.items()}
        DECLARED.extend(pointers.values())

        @functools.wraps(function)
        def refusing(*args: Any, **kwargs: Any) -> Any:
            if kwargs and not pointers.keys().isdisjoint(kwargs):
                raise pointers[next(name for name in kwargs if name in pointers)].refused(owner)
            return function(*args, **kwargs)

        return cast(_F, refusing)

    return decorate
