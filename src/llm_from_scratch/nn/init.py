"""Parameter initialization (course chapter 17): ``SplitMix64``, names, Xavier tables and named
parameters. A caller's generator advances only when the whole construction succeeds.
"""

from __future__ import annotations

import math
import numbers
import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeGuard

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.errors import MismatchError, ShapeError, TableError
from llm_from_scratch.pytorch_names import PyTorchName
from llm_from_scratch.tensor.storage import (
    CONVERSION_ERRORS,
    FloatArray,
    Tensor,
    checked_dtype,
    checked_row_major_layout,
)

_MASK64: Final = (1 << 64) - 1
_CHUNK: Final = 1 << 19  # generator values per vectorized block (bounds temporary memory)


class SplitMix64:
    """The standard SplitMix64 generator: one 64-bit state, advanced by the golden gamma.

    Args:
        state: an integer in ``[0, 2**64)`` but a bool, read once; else ``seed.range`` (also
            for a pickle holding such a state).

    Example:
        >>> rng, twin = SplitMix64.from_seed(18), SplitMix64.from_seed(18)
        >>> rng.next_u64() == twin.next_u64()
        True
        >>> SplitMix64.from_seed(0).next_u64()
        16294208416658607535
    """

    GOLDEN_GAMMA: Final = 0x9E3779B97F4A7C15
    __slots__ = ("_state",)
    _state: int

    def __init__(self, state: int) -> None:
        self._state = read_integer(state, lambda bad: TableError("seed.range", seed=bad))
        if not 0 <= self._state <= _MASK64:
            raise TableError("seed.range", seed=state)

    @classmethod
    def from_seed(cls, seed: int) -> SplitMix64:
        """A generator whose state is ``seed``."""
        return cls(seed)

    @property
    def state(self) -> int:
        """The current 64-bit state."""
        return self._state

    def next_u64(self) -> int:
        """Advance the state by the golden gamma and return its mixed value."""
        self._state = (self._state + self.GOLDEN_GAMMA) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def next_unit_f64(self) -> float:
        """A float in ``[0, 1)`` from the top 53 bits of :meth:`next_u64`."""
        return (self.next_u64() >> 11) * 2.0**-53

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy as ``SplitMix64(state)``, which checks the state it rebuilds."""
        return SplitMix64, (self._state,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SplitMix64) and other._state == self._state

    def __hash__(self) -> int:
        return hash(("SplitMix64", self._state))

    def __repr__(self) -> str:
        return f"SplitMix64(state={self._state:#018x})"

    def peek_unit_f64_block(self, count: int, skip: int = 0) -> npt.NDArray[np.float64]:
        """The ``count`` values :meth:`next_unit_f64` would return after ``skip`` draws (the state
        stays)."""
        steps = np.arange(skip + 1, skip + count + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = np.uint64(self._state) + steps * np.uint64(self.GOLDEN_GAMMA)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def advance(self, draws: int) -> None:
        """Move the state forward as ``draws`` calls of :meth:`next_u64` would."""
        self._state = (self._state + draws * self.GOLDEN_GAMMA) & _MASK64


def validate_parameter_name(name: object) -> str:
    """Return ``name`` (a ``str`` subclass read once as its plain ``str``) if it is non-empty
    dot-separated segments of lowercase ASCII, digits and underscores, else raise at its first bad
    byte (``name.type``, ``name.empty``, ``name.segment``, ``name.byte``; a trailing dot reports
    index = length).

    Example:
        >>> validate_parameter_name("token_embedding.weight")
        'token_embedding.weight'
        >>> try:
        ...     validate_parameter_name("token..weight")
        ... except TableError as error:
        ...     print(error.rule, "|", error)
        name.segment | parameter name has an empty dot-separated segment at byte 6
    """
    if not isinstance(name, str):
        raise TableError("name.type", name_type=type(name).__name__)
    name = str.__str__(name)  # a str subclass is read once, as the plain str it holds
    encoded = name.encode("utf-8", errors="surrogatepass")
    if not encoded:
        raise TableError("name.empty", name=name)
    segment_start = 0
    for index, byte in enumerate(encoded):
        if byte == 0x2E:  # "."
            if index == segment_start:
                raise TableError("name.segment", index=index, name=name)
            segment_start = index + 1
        elif not (0x61 <= byte <= 0x7A or 0x30 <= byte <= 0x39 or byte == 0x5F):
            raise TableError("name.byte", index=index, byte=byte, name=name)
    if segment_start == len(encoded):
        raise TableError("name.segment", index=len(encoded), name=name)
    return name


def read_integer(value: object, refused: Callable[[object], Exception]) -> int:
    """``value`` read once (``operator.index``) if an integer (no bool), else ``refused(value)``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise refused(value)
    try:
        return operator.index(value)
    except CONVERSION_ERRORS as conversion:
        raise refused(value) from conversion


# Xavier tables -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class XavierScale:
    """The Xavier (Glorot) scale of a ``[fan_in, fan_out]`` matrix (pickled through this class).

    Args:
        fan_in, fan_out: positive integers (not bools), each read once: else ``fan.value``, then
            ``fan.zero-in``, ``fan.zero-out``.

    Example:
        >>> scale = xavier_scale(4, 2)
        >>> scale.target_variance, scale.uniform_limit
        (0.3333333333333333, 1.0)
        >>> scale.standard_deviation == scale.target_variance ** 0.5
        True
    """

    fan_in: int
    fan_out: int

    def __post_init__(self) -> None:
        fan_in, fan_out = _checked_fan("fan-in", self.fan_in), _checked_fan("fan-out", self.fan_out)
        if fan_in == 0:
            raise TableError("fan.zero-in")
        if fan_out == 0:
            raise TableError("fan.zero-out")
        object.__setattr__(self, "fan_in", fan_in)  # a NumPy integer becomes an int
        object.__setattr__(self, "fan_out", fan_out)

    def __reduce__(self) -> tuple[Any, ...]:
        return XavierScale, (self.fan_in, self.fan_out)

    @property
    def target_variance(self) -> float:
        """``2 / (fan_in + fan_out)``: activations and gradients keep one scale."""
        return 2.0 / (self.fan_in + self.fan_out)

    @property
    def standard_deviation(self) -> float:
        """``sqrt(target_variance)``, the scale of a Xavier-normal table."""
        return math.sqrt(self.target_variance)

    @property
    def uniform_limit(self) -> float:
        """``sqrt(6 / (fan_in + fan_out))``: a uniform draw on ``[-limit, limit)`` has the target
        variance."""
        return math.sqrt(6.0 / (self.fan_in + self.fan_out))


def _checked_fan(which: str, value: object) -> int:
    fan = read_integer(value, lambda bad: TableError("fan.value", which=which, value=bad))
    if fan < 0:
        raise TableError("fan.value", which=which, value=value)
    return fan


def xavier_scale(fan_in: int, fan_out: int) -> XavierScale:
    """The Xavier scale of a ``[fan_in, fan_out]`` matrix: ``XavierScale(fan_in, fan_out)``."""
    return XavierScale(fan_in, fan_out)


Seed: TypeAlias = "SplitMix64 | np.random.Generator | int"
"""What draws a table: a :class:`SplitMix64` (the course's stream), an int seed (the stream of
``SplitMix64.from_seed(seed)``, the same values) or a NumPy ``Generator``."""


def xavier_uniform_array(
    fan_in: int, fan_out: int, rng: Seed, dtype: npt.DTypeLike = np.float64
) -> FloatArray:
    """A new ``[fan_in, fan_out]`` Xavier-uniform array; advances ``rng`` only on success. Each
    value, in row-major order, is ``limit * (2 * u - 1)`` in float64 (then rounded to ``dtype``),
    ``u`` the next ``next_unit_f64()`` of a SplitMix64 (an int seeds one) or ``random()`` of a
    NumPy ``Generator``. The fans are checked as by :class:`XavierScale`, then ``rng``
    (``init.generator-type``, ``seed.range``), then ``table.build`` (layout, dtype, memory).

    Example:
        >>> same = xavier_uniform_array(2, 3, 18), xavier_uniform_array(2, 3, SplitMix64(18))
        >>> bool((same[0] == same[1]).all())
        True
        >>> xavier_uniform_array(2, 3, np.random.default_rng(0)).shape
        (2, 3)
    """
    scale = XavierScale(fan_in, fan_out)
    fan_in, fan_out = scale.fan_in, scale.fan_out
    if isinstance(rng, numbers.Integral | np.bool_):
        rng = SplitMix64.from_seed(rng)  # type: ignore[arg-type]
    if not (isinstance(rng, SplitMix64) or _is_numpy_generator(rng)):
        raise TableError("init.generator-type", rng_type=type(rng).__name__)
    source = rng
    try:
        resolved = checked_dtype(dtype)
        _, count = checked_row_major_layout((fan_in, fan_out))
    except ShapeError as error:
        raise TableError("table.build", detail=str(error)) from error
    try:
        table = np.empty((fan_in, fan_out), dtype=resolved)
    except (MemoryError, ValueError) as error:  # NumPy: ValueError when the bytes overflow
        raise TableError("table.build", detail=f"could not allocate {count} values") from error
    flat, limit = table.reshape(-1), scale.uniform_limit  # a view: the table owns its memory
    if isinstance(source, SplitMix64):  # draw ahead, then advance: nothing to undo
        _fill(flat, limit, lambda start, size: source.peek_unit_f64_block(size, skip=start))
        source.advance(count)
        return table
    state = source.bit_generator.state
    try:
        _fill(flat, limit, lambda _, size: source.random(size))
    except BaseException:
        source.bit_generator.state = state
        raise
    return table


def _fill(
    flat: FloatArray, limit: float, draws: Callable[[int, int], npt.NDArray[np.float64]]
) -> None:
    """``flat[i] = limit * (2 * u[i] - 1)``, ``u`` drawn in blocks by ``draws(start, size)``."""
    for start in range(0, flat.size, _CHUNK):
        stop = min(start + _CHUNK, flat.size)
        flat[start:stop] = limit * (2.0 * draws(start, stop - start) - 1.0)


# Named parameters --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class NamedParameter:
    """One checked name paired with one parameter leaf (held, not copied); pickles and copies
    rebuild through this class (``copy.deepcopy`` with an independent, equal leaf).

    Args:
        name: a valid parameter name (:func:`validate_parameter_name`), checked first.
        tensor: a parameter leaf, else ``parameter.not-leaf``.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> p = NamedParameter.from_tensor("token_embedding.weight", Tensor((1, 2), [1, 2]))
        >>> p.name, p.tensor.kind, p.tensor.shape
        ('token_embedding.weight', 'parameter', (1, 2))
        >>> p.gradient.numpy().tolist()
        [[0.0, 0.0]]
    """

    __slots__ = ("name", "tensor")
    name: str
    tensor: TensorValue

    grad = PyTorchName("gradient (the parameter's own, as tensor.gradient)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", validate_parameter_name(self.name))
        value = self.tensor
        if not isinstance(value, TensorValue) or value.kind != "parameter":
            raise TableError(
                "parameter.not-leaf", kind=getattr(value, "kind", type(value).__name__)
            )

    @classmethod
    def from_tensor(cls, name: str, tensor: Tensor) -> NamedParameter:
        """A new parameter leaf holding a copy of ``tensor``, named ``name`` (checked first)."""
        return cls(validate_parameter_name(name), TensorValue.parameter(tensor))

    @classmethod
    def from_value(cls, name: str, value: TensorValue) -> NamedParameter:
        """Name an existing parameter leaf (the same node): the constructor."""
        return cls(name, value)

    @classmethod
    def xavier_uniform(
        cls, name: str, fan_in: int, fan_out: int, rng: Seed, dtype: npt.DTypeLike = np.float64
    ) -> NamedParameter:
        """A ``[fan_in, fan_out]`` Xavier-uniform parameter, the name checked first."""
        checked = validate_parameter_name(name)
        table = xavier_uniform_array(fan_in, fan_out, rng, dtype)
        return cls(checked, parameter_from_owned_array(table))

    @property
    def gradient(self) -> Tensor | None:
        """The parameter's accumulated dense gradient, :attr:`tensor`'s."""
        return self.tensor.gradient

    def __repr__(self) -> str:
        return f"NamedParameter(name={self.name!r}, shape={self.tensor.shape})"

    def __reduce__(self) -> tuple[Any, ...]:
        return NamedParameter, (self.name, self.tensor)


# What every error a frozen table causes says: why it is no parameter, and what makes it one.
FREEZE_FALSE: Final = "build the layer with freeze=False to train it or load values into it"
FROZEN_DETAIL: Final = (
    "is frozen, a constant (from_pretrained(..., freeze=True) is PyTorch's default): "
    + FREEZE_FALSE
)


@dataclass(frozen=True, init=False, eq=False, repr=False)
class NamedParameters:
    """An ordered collection of named parameters whose names are unique.

    Args:
        parameters: an iterable of :class:`NamedParameter` (another ``NamedParameters``, whose
            :attr:`frozen` names it keeps), held in order: else ``parameters.type`` (a single
            ``NamedParameter``, ``str`` and ``bytes`` included), then, at the first bad item,
            ``parameters.item-type`` or ``parameters.duplicate-name``.
        frozen: the names of frozen tables left out, so that an optimizer or a checkpoint load
            can say why (:meth:`absence`).

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> a = NamedParameter.from_tensor("a.weight", Tensor((1,), [1.0]))
        >>> b = NamedParameter.from_tensor("b.weight", Tensor((1,), [2.0]))
        >>> parameters = NamedParameters([a, b])
        >>> parameters.names(), parameters["b.weight"] is b, parameters.get("c.weight")
        (('a.weight', 'b.weight'), True, None)
        >>> try:
        ...     NamedParameters([a, b, a])
        ... except TableError as error:
        ...     print(error.rule, error.name, error.first, error.repeated)
        parameters.duplicate-name a.weight 0 2
    """

    __slots__ = ("_frozen", "_index", "_parameters")
    _parameters: tuple[NamedParameter, ...]
    _index: dict[str, int]
    _frozen: tuple[str, ...]

    def __init__(self, parameters: Iterable[NamedParameter], *, frozen: Iterable[str] = ()) -> None:
        kept = parameters.frozen if isinstance(parameters, NamedParameters) else ()
        object.__setattr__(self, "_index", {})
        object.__setattr__(self, "_parameters", _checked_parameters(parameters, self._index))
        object.__setattr__(self, "_frozen", (*kept, *map(validate_parameter_name, frozen)))

    @property
    def frozen(self) -> tuple[str, ...]:
        """The names of the frozen tables left out of the collection."""
        return self._frozen

    def absence(self, name: str) -> str:
        """Why no parameter is named ``name``: none has, or its table is frozen (and the cure)."""
        if name in self._frozen:
            return f"the table {name!r} {FROZEN_DETAIL}"
        return "none has that name"

    def names(self) -> tuple[str, ...]:
        """The names, in order."""
        return tuple(parameter.name for parameter in self._parameters)

    def get(self, name: str) -> NamedParameter | None:
        """The parameter named ``name``, or None."""
        position = self._index.get(name) if isinstance(name, str) else None
        return None if position is None else self._parameters[position]

    def __getitem__(self, name: str) -> NamedParameter:
        """The parameter named ``name``, else ``parameters.unknown-name`` (a ``LookupError``)."""
        found = self.get(name)
        if found is None:
            raise MismatchError("parameters.unknown-name", name=name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._index

    def __iter__(self) -> Iterator[NamedParameter]:
        return iter(self._parameters)

    def __len__(self) -> int:
        return len(self._parameters)

    def __repr__(self) -> str:
        return f"NamedParameters({list(self.names())!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # through the constructor, which checks again
        return partial(NamedParameters, frozen=self._frozen), (self._parameters,)


def _checked_parameters(parameters: object, index: dict[str, int]) -> tuple[NamedParameter, ...]:
    """The checked items of ``parameters``, each name's position put in ``index``."""
    container_type = type(parameters).__name__
    if isinstance(parameters, NamedParameter | str | bytes):
        raise TableError("parameters.type", container_type=container_type)
    try:
        items = iter(parameters)  # type: ignore[call-overload]
    except TypeError:
        raise TableError("parameters.type", container_type=container_type) from None
    checked: list[NamedParameter] = []
    for position, item in enumerate(items):
        if not isinstance(item, NamedParameter):
            item_type = type(item).__name__
            raise TableError("parameters.item-type", item_type=item_type, position=position)
        first = index.setdefault(item.name, position)
        if first != position:
            raise TableError(
                "parameters.duplicate-name", name=item.name, first=first, repeated=position
            )
        checked.append(item)
    return tuple(checked)


def _is_numpy_generator(rng: object) -> TypeGuard[np.random.Generator]:
    """True for a ``numpy.random.Generator``, asked without importing ``numpy.random``."""
    random = sys.modules.get("numpy.random")
    return random is not None and isinstance(rng, random.Generator)
