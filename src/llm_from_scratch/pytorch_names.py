"""PyTorch's names, where this package names the same thing differently: each answers with ours.

A PyTorch habit meets the package as an attribute (``layer.weight``, ``value.grad``,
``optimizer.lr``) or a keyword argument (``SGD(..., lr=0.1)``, ``Embedding(num_embeddings=...)``).
Each such name is declared once, beside what it points to: :class:`PyTorchName` on a class for an
attribute, :func:`pytorch_keywords` on a function for its keywords. Reading, setting or passing
one raises :class:`PyTorchNameError`, one line that names ours. :data:`DECLARED` lists them all
(the README's table of names is checked against it).

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
    llm_from_scratch.pytorch_names.PyTorchNameError: Optimizer has no argument 'lr' (PyTorch's \
name); here: learning_rate
    >>> hasattr(Optimizer(0.1), "lr")
    False
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, NoReturn, Self, TypeVar, cast, overload

from llm_from_scratch.errors import StructuredError

_F = TypeVar("_F", bound=Callable[..., Any])


class PyTorchNameError(StructuredError, AttributeError, TypeError):
    """A name PyTorch gives something this package names differently; ``ours`` is what to use.

    An attribute read or set (``layer.weight``, ``value.grad``, ``optimizer.lr``): also an
    ``AttributeError``, so ``hasattr`` is False and ``getattr(x, name, default)`` gives the
    default. A keyword argument (``SGD(parameters, lr=0.1)``, ``Embedding(num_embeddings=10,
    embedding_dim=4)``): also a ``TypeError``, as any unknown keyword is; refused before the
    function reads any argument. ``owner`` is the class (or ``Class.method``) asked.
    """

    template = "{owner} has no {kind} {pytorch_name!r} (PyTorch's name); here: {ours}"
    owner: str
    kind: Literal["attribute", "argument"]
    pytorch_name: str
    ours: str


class Pointer(NamedTuple):
    """One declared PyTorch name: where it is refused and what it points to."""

    owner: str
    kind: Literal["attribute", "argument"]
    pytorch_name: str
    ours: str


DECLARED: list[Pointer] = []
"""Every PyTorch name declared so far, in the order its module defined it."""


class PyTorchName:
    """A class attribute under a PyTorch name, which answers a read or a write on an instance
    with :class:`PyTorchNameError` naming ``ours`` (read on the class, it is this object, so
    ``help()`` shows the pointer)."""

    def __init__(self, ours: str) -> None:
        self.ours = ours
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.__doc__ = f"PyTorch's name; here: {self.ours}"
        DECLARED.append(Pointer(owner.__name__, "attribute", name, self.ours))

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> NoReturn: ...

    def __get__(self, instance: object, owner: type | None = None) -> Self:
        if instance is None:
            return self
        raise PyTorchNameError(type(instance).__name__, "attribute", self.name, self.ours)

    def __set__(self, instance: object, value: object) -> NoReturn:
        raise PyTorchNameError(type(instance).__name__, "attribute", self.name, self.ours)


def pytorch_keywords(**ours: str) -> Callable[[_F], _F]:
    """Refuse each keyword argument named in ``ours`` (PyTorch's name to ours) with a
    :class:`PyTorchNameError`, before the decorated function binds its arguments.

    The function keeps its name, docstring and signature (``inspect.signature`` follows
    ``__wrapped__``); ``owner`` is its class for ``__init__``, else ``Class.method``, or
    ``module.function`` for a function of a module.
    """

    def decorate(function: _F) -> _F:
        owner = function.__qualname__.removesuffix(".__init__")
        if "." not in function.__qualname__:
            owner = f"{function.__module__.rsplit('.', 1)[-1]}.{owner}"
        for name, pointer in ours.items():
            DECLARED.append(Pointer(owner, "argument", name, pointer))

        @functools.wraps(function)
        def refusing(*args: Any, **kwargs: Any) -> Any:
            if kwargs and not ours.keys().isdisjoint(kwargs):
                name = next(name for name in kwargs if name in ours)
                raise PyTorchNameError(owner, "argument", name, ours[name])
            return function(*args, **kwargs)

        return cast(_F, refusing)

    return decorate
