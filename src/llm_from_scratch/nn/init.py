"""Parameter initialization (course chapter 17): ``SplitMix64``, names and Xavier tables.

Initialization is transactional: a caller's generator advances only when the whole construction
succeeds; after any error its state is what it was.
"""

from __future__ import annotations

import copy
import math
import numbers
import operator
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.errors import ShapeError, StructuredError
from llm_from_scratch.tensor.storage import (
    CONVERSION_ERRORS,
    FloatArray,
    Tensor,
    checked_dtype,
    checked_row_major_layout,
)

_TRUSTED: Final = object()  # the key of the trusted constructors below

_MASK64: Final = (1 << 64) - 1
_CHUNK: Final = 1 << 20  # generator values per vectorized block (bounds temporary memory)


class InitializationError(StructuredError):
    """Base class of every error raised by :mod:`llm_from_scratch.nn.init`."""


class ParameterNameError(InitializationError, ValueError):
    """A parameter name that breaks a rule, reported at its first bad byte (names are UTF-8):
    ``empty`` (the name ``""``), ``segment`` (two dots in a row, or a dot at either end:
    ``index`` is the byte where it shows, a trailing dot reporting the length in bytes) or
    ``byte`` (the first byte that is not ``a-z``, ``0-9``, ``_`` or ``.``: ``index`` and
    ``byte``)."""

    template_key = "rule"
    template: ClassVar[Mapping[str, str]] = {
        "empty": "parameter name must not be empty",
        "segment": "parameter name has an empty dot-separated segment at byte {index}",
        "byte": (
            "parameter name byte {index} must be lowercase ASCII, a digit, underscore, "
            "or dot; got 0x{byte:02x}"
        ),
    }
    name: str
    rule: Literal["empty", "segment", "byte"]
    index: int | None = None
    byte: int | None = None


EmptyParameterNameError = EmptyNameSegmentError = InvalidNameByteError = ParameterNameError
"""Earlier names of :class:`ParameterNameError`, kept so that existing ``except`` clauses work."""


class ParameterNameTypeError(InitializationError, TypeError):
    """A name that is not a ``str``.

    A ``str`` subclass is a ``str``: it is read once as the plain ``str`` it holds, which is then
    encoded, checked and stored.
    """

    template = "parameter name must be a str, got {name_type}"
    name_type: str


class ZeroFanInError(InitializationError, ValueError):
    """Xavier initialization with ``fan_in == 0`` (``Embedding.new`` reports it as the cause of
    an ``EmptyVocabularyError``)."""

    template = "fan-in must be greater than zero"


class ZeroFanOutError(InitializationError, ValueError):
    """Xavier initialization with ``fan_out == 0`` (``Embedding.new`` reports it as the cause of
    a ``ZeroEmbeddingWidthError``)."""

    template = "fan-out must be greater than zero"


class FanValueError(InitializationError, ValueError):
    """A fan that is not a non-negative integer (``bool`` is not an integer here).

    A fan (``V`` or ``d``) that is negative, a ``bool``, a ``float``, ``None``, a ``str``, or an
    ``Integral`` whose ``__index__`` fails; each fan is read once (``operator.index``).
    """

    template = "{which} must be a non-negative integer, got {value!r}"
    which: str
    value: object


class SeedRangeError(InitializationError, ValueError):
    """A generator seed or state outside ``[0, 2**64)`` or not an integer.

    ``SplitMix64(state)`` or ``SplitMix64.from_seed`` with a negative, too large or non-integer
    state (a ``bool`` included); the state is read once, and that one value is checked and stored.
    Also unpickling a ``SplitMix64`` with such a state (a crafted pickle): it rebuilds through
    ``SplitMix64(state)``.
    """

    template = "SplitMix64 state must be an integer in [0, 2**64), got {seed!r}"
    seed: object


class ParameterTableError(InitializationError, ValueError):
    """A table whose layout or dtype is invalid, or that cannot be allocated.

    The dtype is not float64 or float32, the ``[fan_in, fan_out]`` layout overflows, or the table
    cannot be allocated (``__cause__`` is the ``TensorError``, the ``MemoryError`` or NumPy's
    ``ValueError``).
    """

    template = "cannot build the parameter table: {detail}"
    detail: str


class GeneratorTypeError(InitializationError, TypeError):
    """A generator argument that is not a :class:`SplitMix64`, a ``numpy.random.Generator`` or an
    int seed (a ``numpy.random.RandomState``, ``None``, a float).

    A ``bool`` is no seed either: it is read as a seed and refused with :class:`SeedRangeError`,
    as a negative seed is.
    """

    template = (
        "the generator must be a SplitMix64, a numpy.random.Generator or an int seed, "
        "got {rng_type}"
    )
    rng_type: str


class NotAParameterLeafError(InitializationError, TypeError):
    """A named parameter built from a value that is not a parameter leaf.

    ``NamedParameter.from_value`` with a constant, an operation result or anything that is not a
    ``TensorValue``; also unpickling a ``NamedParameter`` whose leaf is not a parameter (a crafted
    pickle: it rebuilds through ``from_value``, which checks the name first).
    """

    template = "a named parameter needs a parameter leaf, got a {kind}"
    kind: str


class SplitMix64:
    """The standard SplitMix64 generator: one 64-bit state, advanced by the golden gamma.

    Example:
        >>> rng = SplitMix64.from_seed(18)
        >>> twin = SplitMix64.from_seed(18)
        >>> rng.next_u64() == twin.next_u64()
        True
        >>> SplitMix64.from_seed(0).next_u64()
        16294208416658607535
    """

    GOLDEN_GAMMA: Final = 0x9E3779B97F4A7C15
    __slots__ = ("_state",)
    _state: int

    def __init__(self, state: int) -> None:
        self._state = _checked_integer(state, 0, _MASK64, SeedRangeError)

    @classmethod
    def from_seed(cls, seed: int) -> SplitMix64:
        """A generator whose state is ``seed``: any integer in ``[0, 2**64)`` but a bool,
        read once (one ``operator.index`` call).

        Raises:
            SeedRangeError: anything else.
        """
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

    def __copy__(self) -> SplitMix64:
        return SplitMix64(self._state)

    def __deepcopy__(self, memo: dict[int, Any]) -> SplitMix64:
        return SplitMix64(self._state)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as ``SplitMix64(state)``, so the constructor checks the state it rebuilds
        (a crafted state outside ``[0, 2**64)`` is a :class:`SeedRangeError`)."""
        return SplitMix64, (self._state,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SplitMix64) and other._state == self._state

    def __hash__(self) -> int:
        return hash(("SplitMix64", self._state))

    def __repr__(self) -> str:
        return f"SplitMix64(state={self._state:#018x})"

    def peek_unit_f64_block(self, count: int, skip: int = 0) -> npt.NDArray[np.float64]:
        """The values :meth:`next_unit_f64` would return after ``skip`` draws, ``count`` of them,
        computed vectorized; the state does not change (see :meth:`advance`).

        Example:
            >>> rng = SplitMix64.from_seed(7)
            >>> block = rng.peek_unit_f64_block(2, skip=1)
            >>> _ = rng.next_unit_f64()
            >>> block.tolist() == [rng.next_unit_f64(), rng.next_unit_f64()]
            True
        """
        steps = np.arange(skip + 1, skip + count + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = np.uint64(self._state) + steps * np.uint64(self.GOLDEN_GAMMA)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def advance(self, draws: int) -> None:
        """Move the state forward as ``draws`` calls of :meth:`next_u64` would (``draws >= 0``).

        With :meth:`peek_unit_f64_block`, this lets an initializer draw first and commit the
        draws only once the whole construction has succeeded.
        """
        self._state = (self._state + draws * self.GOLDEN_GAMMA) & _MASK64


def validate_parameter_name(name: object) -> str:
    """Return ``name`` if it is a valid parameter name, else raise at its first bad byte.

    Rules: non-empty; dot-separated segments, none empty (a trailing dot reports index =
    length); every other byte lowercase ASCII, a digit or underscore. A ``str`` subclass is
    read once as the plain ``str`` it holds (no overridden method runs), and that plain
    ``str`` is what is checked and returned.

    Example:
        >>> validate_parameter_name("token_embedding.weight")
        'token_embedding.weight'
        >>> try:
        ...     validate_parameter_name("token..weight")
        ... except ParameterNameError as error:
        ...     print(error.rule, "|", error)
        segment | parameter name has an empty dot-separated segment at byte 6
    """
    if not isinstance(name, str):
        raise ParameterNameTypeError(type(name).__name__)
    name = str.__str__(name)  # a str subclass is read once, as the plain str it holds
    encoded = name.encode("utf-8", errors="surrogatepass")
    if not encoded:
        raise ParameterNameError(name, "empty")
    segment_start = 0
    for index, byte in enumerate(encoded):
        if byte == 0x2E:  # "."
            if index == segment_start:
                raise ParameterNameError(name, "segment", index)
            segment_start = index + 1
        elif not (0x61 <= byte <= 0x7A or 0x30 <= byte <= 0x39 or byte == 0x5F):
            raise ParameterNameError(name, "byte", index, byte)
    if segment_start == len(encoded):
        raise ParameterNameError(name, "segment", len(encoded))
    return name


def xavier_limit(fan_in: int, fan_out: int) -> float:
    """``sqrt(6 / (fan_in + fan_out))``, the Glorot uniform bound (see :func:`xavier_scale`)."""
    return xavier_scale(fan_in, fan_out).uniform_limit


def _checked_fan(which: str, value: object) -> int:
    return _checked_integer(value, 0, None, partial(FanValueError, which))


def _checked_integer(
    value: object, low: int, high: int | None, error: Callable[[object], Exception]
) -> int:
    """``value`` read once (``operator.index``) if it is an integer (not a bool) in
    ``[low, high]``; else ``error(value)``, with a failed conversion as its cause."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise error(value)
    try:
        as_int = operator.index(value)
    except CONVERSION_ERRORS as conversion:
        raise error(value) from conversion
    if as_int < low or (high is not None and as_int > high):
        raise error(value)
    return as_int


Seed: TypeAlias = "SplitMix64 | np.random.Generator | int"
"""What draws a table: a :class:`SplitMix64` (the course's stream), an int seed (the stream of
``SplitMix64.from_seed(seed)``, the same values) or a NumPy ``Generator``."""


def xavier_uniform_array(
    fan_in: int, fan_out: int, rng: Seed, dtype: npt.DTypeLike = np.float64
) -> FloatArray:
    """A new ``[fan_in, fan_out]`` Xavier-uniform array; advances ``rng`` only on success.

    Each value, in row-major order, is ``limit * (2 * u - 1)`` computed in float64 (then
    rounded to ``dtype``), where ``u`` is the next ``rng.next_unit_f64()`` of a SplitMix64 (the
    course's stream, exactly) or of ``SplitMix64.from_seed(rng)`` for an int, or the next
    ``rng.random()`` of a NumPy ``Generator`` (also the top 53 bits of a 64-bit draw).

    Raises:
        FanValueError, ZeroFanInError, ZeroFanOutError: bad fans, in this order per fan.
        GeneratorTypeError: ``rng`` is none of these; SeedRangeError: an int seed outside
            ``[0, 2**64)`` (or a bool).
        ParameterTableError: the shape overflows, the dtype is not a float, or no memory.

    Example:
        >>> same = xavier_uniform_array(2, 3, 18), xavier_uniform_array(2, 3, SplitMix64(18))
        >>> bool((same[0] == same[1]).all())
        True
        >>> xavier_uniform_array(2, 3, np.random.default_rng(0)).shape
        (2, 3)
    """
    scale = xavier_scale(fan_in, fan_out)
    fan_in, fan_out = scale.fan_in, scale.fan_out
    source = checked_generator(rng)
    try:
        resolved = checked_dtype(dtype)
        _, count = checked_row_major_layout((fan_in, fan_out))
    except ShapeError as error:
        raise ParameterTableError(str(error)) from error
    try:
        # NumPy raises ValueError, not MemoryError, when the byte count overflows.
        table = np.empty((fan_in, fan_out), dtype=resolved)
    except (MemoryError, ValueError) as error:
        raise ParameterTableError(f"could not allocate {count} values") from error
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


def checked_generator(rng: object) -> SplitMix64 | np.random.Generator:
    """The generator ``rng`` names: itself, or ``SplitMix64.from_seed(rng)`` for an integer.

    Raises:
        GeneratorTypeError: not a SplitMix64, a NumPy Generator or an integer.
        SeedRangeError: an integer outside ``[0, 2**64)``, or a bool.
    """
    if isinstance(rng, SplitMix64 | np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral | np.bool_):
        return SplitMix64.from_seed(rng)  # type: ignore[arg-type]
    raise GeneratorTypeError(type(rng).__name__)


def _fill(
    flat: FloatArray, limit: float, draws: Callable[[int, int], npt.NDArray[np.float64]]
) -> None:
    """``flat[i] = limit * (2 * u[i] - 1)``, ``u`` drawn in blocks: ``draws(start, size)``."""
    for start in range(0, flat.size, _CHUNK):
        stop = min(start + _CHUNK, flat.size)
        flat[start:stop] = limit * (2.0 * draws(start, stop - start) - 1.0)


@dataclass(frozen=True, eq=False, repr=False)
class NamedParameter:
    """One validated name paired with one parameter leaf.

    Build one with :meth:`from_tensor`, :meth:`from_value` or :meth:`xavier_uniform`.

    Attributes:
        name: the validated name, e.g. ``token_embedding.weight``.
        tensor: the parameter leaf.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> p = NamedParameter.from_tensor("token_embedding.weight", Tensor((1, 2), [1, 2]))
        >>> p.name, p.tensor.kind, p.tensor.shape
        ('token_embedding.weight', 'parameter', (1, 2))
    """

    __slots__ = ("name", "tensor")
    name: str
    tensor: TensorValue
    key: InitVar[object] = None

    def __post_init__(self, key: object) -> None:
        if key is not _TRUSTED:
            raise TypeError("build a NamedParameter with from_tensor, from_value or xavier_uniform")

    @classmethod
    def from_tensor(cls, name: str, tensor: Tensor) -> NamedParameter:
        """A new parameter leaf holding a copy of ``tensor``, named ``name`` (checked first).

        Raises:
            ParameterNameError, ParameterNameTypeError: the name.
            OperandTypeError: ``tensor`` is not a Tensor.
            NonFiniteParameterError: a value of ``tensor`` is NaN or infinite, reported at its
                flat position (from :meth:`TensorValue.parameter`, as its own type).
        """
        checked = validate_parameter_name(name)
        return cls(checked, TensorValue.parameter(tensor), _TRUSTED)

    @classmethod
    def from_value(cls, name: str, value: TensorValue) -> NamedParameter:
        """Name an existing parameter leaf (the same node, not a copy).

        Every parameter leaf holds finite values: :meth:`TensorValue.parameter` refuses others
        and an optimizer step that would leave one changes nothing.
        """
        checked = validate_parameter_name(name)
        if not isinstance(value, TensorValue) or value.kind != "parameter":
            raise NotAParameterLeafError(getattr(value, "kind", type(value).__name__))
        return cls(checked, value, _TRUSTED)

    @classmethod
    def xavier_uniform(
        cls,
        name: str,
        fan_in: int,
        fan_out: int,
        rng: Seed,
        dtype: npt.DTypeLike = np.float64,
    ) -> NamedParameter:
        """A ``[fan_in, fan_out]`` Xavier-uniform parameter; the name is checked first.

        Raises:
            ParameterNameError: the name (before anything else).
            ZeroFanInError, ZeroFanOutError, FanValueError, GeneratorTypeError,
                ParameterTableError: see :func:`xavier_uniform_array`.
        """
        checked = validate_parameter_name(name)
        table = xavier_uniform_array(fan_in, fan_out, rng, dtype)
        return cls(checked, parameter_from_owned_array(table), _TRUSTED)

    def __repr__(self) -> str:
        return f"NamedParameter(name={self.name!r}, shape={self.tensor.shape})"

    # Pickle and copy ----------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the name and the leaf (which pickles its values and gradient), rebuilt by
        :func:`restore_named_parameter`."""
        return restore_named_parameter, (self.name, self.tensor)

    def __copy__(self) -> NamedParameter:
        """A new named parameter with the same name and the same leaf (``is_same_node``)."""
        return NamedParameter(self.name, self.tensor, _TRUSTED)

    def __deepcopy__(self, memo: dict[int, Any]) -> NamedParameter:
        """The same name and an independent leaf with equal values and gradient (see
        ``TensorValue.__deepcopy__``)."""
        return NamedParameter(self.name, copy.deepcopy(self.tensor, memo), _TRUSTED)


def restore_named_parameter(name: object, tensor: object) -> NamedParameter:
    """Rebuild a pickled :class:`NamedParameter`: the unpickler's entry point.

    The checks of :meth:`NamedParameter.from_value`, so a crafted pickle cannot give a bad
    name or a leaf that is no parameter.

    Raises:
        ParameterNameTypeError, ParameterNameError: the name.
        NotAParameterLeafError: ``tensor`` is not a parameter leaf.
    """
    return NamedParameter.from_value(name, tensor)  # type: ignore[arg-type]


# Xavier scale ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class XavierScale:
    """The Xavier (Glorot) scale of a ``[fan_in, fan_out]`` matrix; build it with
    :func:`xavier_scale`.

    The fans are checked on construction (the errors of :func:`xavier_scale`); the three
    scales are computed from them.

    Attributes:
        fan_in: the number of rows, a positive ``int``.
        fan_out: the number of columns, a positive ``int``.
    """

    fan_in: int
    fan_out: int

    def __post_init__(self) -> None:
        fan_in, fan_out = _checked_fan("fan-in", self.fan_in), _checked_fan("fan-out", self.fan_out)
        if fan_in == 0:
            raise ZeroFanInError()
        if fan_out == 0:
            raise ZeroFanOutError()
        object.__setattr__(self, "fan_in", fan_in)  # a NumPy integer becomes an int
        object.__setattr__(self, "fan_out", fan_out)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as ``XavierScale(fan_in, fan_out)``, so a rebuilt scale is checked too."""
        return XavierScale, (self.fan_in, self.fan_out)

    @property
    def target_variance(self) -> float:
        """``2 / (fan_in + fan_out)``, the variance that keeps activations and gradients at
        one scale."""
        return 2.0 / (self.fan_in + self.fan_out)

    @property
    def standard_deviation(self) -> float:
        """``sqrt(target_variance)``, the scale of a Xavier-normal table."""
        return math.sqrt(self.target_variance)

    @property
    def uniform_limit(self) -> float:
        """``sqrt(6 / (fan_in + fan_out))``: a uniform draw on ``[-limit, limit)`` has the target
        variance. :func:`xavier_uniform_array` uses exactly this value."""
        return math.sqrt(6.0 / (self.fan_in + self.fan_out))


def xavier_scale(fan_in: int, fan_out: int) -> XavierScale:
    """The Xavier scale of a ``[fan_in, fan_out]`` matrix.

    Raises:
        FanValueError, ZeroFanInError, ZeroFanOutError: bad fans, in this order per fan (the
            same checks as :func:`xavier_uniform_array`).

    Example:
        >>> scale = xavier_scale(4, 2)
        >>> scale.target_variance, scale.uniform_limit
        (0.3333333333333333, 1.0)
        >>> scale.standard_deviation == scale.target_variance ** 0.5
        True
    """
    return XavierScale(fan_in, fan_out)


# Named parameter collections ---------------------------------------------------------------------

FREEZE_FALSE: Final = "build the layer with freeze=False to train it or load values into it"
"""What makes a frozen table a parameter, in every error a frozen table causes."""

FROZEN_DETAIL: Final = (
    "is frozen, a constant (from_pretrained(..., freeze=True) is PyTorch's default): "
    + FREEZE_FALSE
)
"""Why a frozen table is no parameter, and what makes it one."""


class ParameterCollectionTypeError(InitializationError, TypeError):
    """Named parameters given as something that is not an iterable (or as a single
    ``NamedParameter``, a ``str`` or ``bytes``).

    ``NamedParameters(x)``, and so ``save_parameters`` and ``load_parameters(into=x)``.
    """

    template = "named parameters must be an iterable of NamedParameter, got {container_type}"
    container_type: str


class NotANamedParameterError(InitializationError, TypeError):
    """An item of a named-parameter collection that is not a ``NamedParameter``.

    The first such item in order (a ``TensorValue`` included).
    """

    template = "named parameters hold NamedParameter items, got {item_type} at position {position}"
    position: int
    item_type: str


class DuplicateParameterNameError(InitializationError, ValueError):
    """The first name, in order, that repeats: ``first`` and ``repeated`` are its positions."""

    template = "parameter name {name!r} appears at positions {first} and {repeated}"
    name: str
    first: int
    repeated: int


class UnknownParameterError(InitializationError, KeyError):
    """``parameters[name]`` for a name the collection does not hold.

    ``NamedParameters.get`` returns None instead. Its ``str`` is the message itself, without the
    quotes ``KeyError`` adds.
    """

    template = "no parameter named {name!r}"
    name: str

    def __str__(self) -> str:  # KeyError would print the message's repr
        return str(self.args[0])


@dataclass(frozen=True, init=False, eq=False, repr=False)
class NamedParameters:
    """An ordered collection of named parameters whose names are unique.

    Args:
        parameters: an iterable of :class:`NamedParameter` (another ``NamedParameters``
            included, whose :attr:`frozen` names it keeps); the order is kept. The parameters
            are held, not copied.
        frozen: the names of frozen tables left out (a frozen layer's ``parameters()`` is
            empty), so that an optimizer or a checkpoint load given no parameter of that name
            can say why (:meth:`absence`).

    Raises:
        ParameterCollectionTypeError: ``parameters`` is not an iterable (a single
            ``NamedParameter``, a ``str`` and ``bytes`` are not accepted either).
        NotANamedParameterError, DuplicateParameterNameError: the first bad item in order:
            one that is not a ``NamedParameter``, or one whose name an earlier item has.

    Example:
        >>> from llm_from_scratch.tensor import Tensor
        >>> a = NamedParameter.from_tensor("a.weight", Tensor((1,), [1.0]))
        >>> b = NamedParameter.from_tensor("b.weight", Tensor((1,), [2.0]))
        >>> parameters = NamedParameters([a, b])
        >>> len(parameters), parameters.names(), parameters["b.weight"] is b
        (2, ('a.weight', 'b.weight'), True)
        >>> parameters.get("c.weight") is None, "a.weight" in parameters
        (True, True)
        >>> try:
        ...     NamedParameters([a, b, a])
        ... except DuplicateParameterNameError as error:
        ...     print(error.name, error.first, error.repeated)
        a.weight 0 2
    """

    __slots__ = ("_frozen", "_index", "_parameters")
    _parameters: tuple[NamedParameter, ...]
    _index: dict[str, int]
    _frozen: tuple[str, ...]

    def __init__(self, parameters: Iterable[NamedParameter], *, frozen: Iterable[str] = ()) -> None:
        checked = _checked_parameters(parameters)
        kept = parameters.frozen if isinstance(parameters, NamedParameters) else ()
        object.__setattr__(self, "_parameters", checked)
        object.__setattr__(self, "_index", {p.name: i for i, p in enumerate(checked)})
        object.__setattr__(self, "_frozen", (*kept, *map(validate_parameter_name, frozen)))

    @property
    def frozen(self) -> tuple[str, ...]:
        """The names of the frozen tables left out of the collection."""
        return self._frozen

    def absence(self, name: str) -> str:
        """Why no parameter is named ``name``: ``none has that name``, or that the table of that
        name is frozen and how to make it trainable."""
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
        """The parameter named ``name``; :class:`UnknownParameterError` (a ``KeyError``) if
        there is none."""
        found = self.get(name)
        if found is None:
            raise UnknownParameterError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._index

    def __iter__(self) -> Iterator[NamedParameter]:
        return iter(self._parameters)

    def __len__(self) -> int:
        return len(self._parameters)

    def __repr__(self) -> str:
        return f"NamedParameters({list(self.names())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and copy) as ``NamedParameters(parameters, frozen=...)``, which checks the
        items again: ``copy.copy`` holds the same parameters, ``copy.deepcopy`` deep copies."""
        if not self._frozen:
            return NamedParameters, (self._parameters,)
        return partial(NamedParameters, frozen=self._frozen), (self._parameters,)


def _checked_parameters(parameters: object) -> tuple[NamedParameter, ...]:
    if isinstance(parameters, NamedParameter | str | bytes):
        raise ParameterCollectionTypeError(type(parameters).__name__)
    try:
        items = iter(parameters)  # type: ignore[call-overload]
    except TypeError:
        raise ParameterCollectionTypeError(type(parameters).__name__) from None
    checked: list[NamedParameter] = []
    first_position: dict[str, int] = {}
    for position, item in enumerate(items):
        if not isinstance(item, NamedParameter):
            raise NotANamedParameterError(position, type(item).__name__)
        first = first_position.setdefault(item.name, position)
        if first != position:
            raise DuplicateParameterNameError(item.name, first, position)
        checked.append(item)
    return tuple(checked)
