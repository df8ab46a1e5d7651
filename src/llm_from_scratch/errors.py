"""The shared base of the package's exception families: an error declared by its fields.

An error class declares the facts it carries as annotated fields and its message as a
``template`` over them. The base builds the rest: a constructor taking the fields positionally
in declaration order or by keyword (its ``inspect.signature``, which type checkers see too),
one attribute per field, the message formatted once into ``args``, and pickling by the fields
(so ``cause`` fields and ``raise ... from`` work as for any exception). Unpickling calls the
constructor with the fields, so a pickle meets the checks of construction; what else the error
carries (its ``__notes__``) is restored beside them, and a pickle whose state would replace a
field is refused (``TypeError``), so the message always is the template filled with the fields.

Argument order, the same in every family: the context (an operation, a parameter name, which
fan), then where the fault is (an axis, a flat position, a byte index), then the offending value
or ID, then the bound it broke (rows, a vocabulary size); ``expected`` comes before ``actual``.
The same fact has the same attribute name in every family: ``position`` for a flat position,
``id`` for an offending ID, ``value`` for an offending non-integer, ``cause`` for a wrapped
error, ``detail`` for free text.

One class may word its message in several ways: its ``template`` is then a mapping from the
value of the field named by ``template_key`` to a template, so one failure keeps one class however
many boundaries report it (an out-of-bounds ID says ``token ID`` when an embedding layer checked it
and ``gather ID`` when ``TensorValue.gather_rows`` did).

Template placeholders name fields only; this is checked when the class is defined. Besides
``!r``, ``!s`` and ``!a``, the conversion ``!t`` prints the type name of the value, and a tuple
printed without a conversion prints as a list (a shape reads ``[4, 2]``). A class without a
template is a base class: it may declare fields its subclasses share, and constructing it
raises ``TypeError``.

Example:
    >>> class TableRowError(StructuredError, IndexError):
    ...     '''A row outside the table.'''
    ...
    ...     template = "row {row} at flat position {position} is not below {rows} ({row!t})"
    ...     position: int
    ...     row: int
    ...     rows: int
    >>> error = TableRowError(1, row=7, rows=4)
    >>> print(error)
    row 7 at flat position 1 is not below 4 (int)
    >>> error.position, error.row, error.rows, error.args
    (1, 7, 4, ('row 7 at flat position 1 is not below 4 (int)',))
"""

from __future__ import annotations

import inspect
import string
from collections.abc import Mapping
from typing import Any, ClassVar, Final, dataclass_transform

_CONVERSIONS: Final = frozenset({None, "r", "s", "a", "t"})
_FIELD: Final = inspect.Parameter.POSITIONAL_OR_KEYWORD


class _MessageFormatter(string.Formatter):
    """``str.format`` plus ``!t`` (the type name) and tuples printed as lists."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "t":
            return type(value).__name__
        if conversion is None and isinstance(value, tuple):
            return list(value)
        return super().convert_field(value, conversion)


_FORMATTER: Final = _MessageFormatter()


@dataclass_transform(eq_default=False)
class StructuredError(Exception):
    """Base class of an error whose message is built from its fields.

    Subclasses set ``template`` and annotate their fields (a field may have a default); see
    the module docstring. Every exception class of the package derives from it except
    ``LabelError`` and ``TraceFormatError``; a subclass without a template is a base class, and
    constructing one raises ``TypeError``.

    Raises:
        TypeError: at class definition, a template that names anything but a field or uses
            an unknown conversion; at construction, arguments that do not bind to the fields
            (as for any call), or a class without a template.
        ValueError: at class definition, a field declared twice, or a field without a default
            after one with a default.
    """

    template: ClassVar[str | Mapping[str, str] | None] = None
    """The message, a ``str.format`` template over the fields (or such templates by the value of
    the field :attr:`template_key`); ``None`` for a base class."""

    template_key: ClassVar[str | None] = None
    """With a mapping :attr:`template`: the field whose value chooses the template."""

    field_names: ClassVar[tuple[str, ...]] = ()
    """The fields, in constructor order (the base class's first)."""

    __signature__: ClassVar[inspect.Signature] = inspect.Signature()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: dict[str, inspect.Parameter] = {}
        for klass in reversed(cls.__mro__):  # the fields of every base first, in MRO order
            if not issubclass(klass, StructuredError):
                continue
            for name, annotation in vars(klass).get("__annotations__", {}).items():
                if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                    continue
                if name in fields:
                    raise ValueError(f"{cls.__name__} declares the field {name!r} twice")
                default = vars(klass).get(name, inspect.Parameter.empty)
                fields[name] = inspect.Parameter(name, _FIELD, default=default)
        cls.__signature__ = inspect.Signature(list(fields.values()))
        cls.field_names = tuple(cls.__signature__.parameters)
        # Positional patterns in field order (`case TokenIdTypeError(position, value)`); mypy
        # knows this from dataclass_transform but refuses a plain assignment.
        setattr(cls, "__match_args__", cls.field_names)  # noqa: B010
        _check_template(cls)

    def __init__(self, *args: object, **kwargs: object) -> None:
        if self.template is None:
            raise TypeError(f"{type(self).__name__} is a base class; raise one of its subclasses")
        bound = self.__signature__.bind(*args, **kwargs)
        bound.apply_defaults()
        vars(self).update(bound.arguments)
        template = self.template
        if not isinstance(template, str):
            template = template[bound.arguments[self.template_key or ""]]
        super().__init__(_FORMATTER.vformat(template, (), bound.arguments))

    def __reduce__(self) -> tuple[Any, ...]:
        fields = tuple(getattr(self, name) for name in self.field_names)
        extra = {name: value for name, value in vars(self).items() if name not in self.field_names}
        return (type(self), fields, extra) if extra else (type(self), fields)

    def __setstate__(self, state: object) -> None:
        """Restore what a pickle carries beside the fields (``__notes__``, attributes a caller
        set); the constructor has already set the fields from the pickle's arguments.

        Raises:
            TypeError: ``state`` is not a dict of names, or gives a field another value than
                the constructor did (a crafted pickle: the message would not match the fields).
        """
        if not isinstance(state, dict) or not all(type(name) is str for name in state):
            raise TypeError(f"a pickled {type(self).__name__} has a state that is no dict of names")
        for name, value in state.items():
            if name in self.field_names and not _same(value, getattr(self, name)):
                raise TypeError(
                    f"a pickled {type(self).__name__} may not replace its field {name!r}"
                )
        vars(self).update(state)


def _same(value: object, field: object) -> bool:
    """``value`` is the field's own value (the same object, or an equal one of the same type)."""
    if value is field:
        return True
    try:
        return type(value) is type(field) and bool(value == field)
    except Exception:  # an unorderable or ambiguous comparison (an array): not the same
        return False


def _check_template(cls: type[StructuredError]) -> None:
    templates = cls.template
    if isinstance(templates, Mapping):
        if cls.template_key not in cls.field_names:
            raise TypeError(f"{cls.__name__}.template_key must name a field of {cls.field_names}")
        templates = "".join(templates.values())
    for _, name, spec, conversion in _FORMATTER.parse(templates or ""):
        if name is not None and name not in cls.field_names:
            raise TypeError(f"{cls.__name__}.template names {name!r}, not one of {cls.field_names}")
        if conversion not in _CONVERSIONS or "{" in (spec or ""):
            raise TypeError(f"{cls.__name__}.template: only !r, !s, !a, !t and plain specs")
