"""The contract restated as plain Python: what each public call must return or raise.

Every model here follows docs/spec/ch18-token-embeddings.md and docs/errors.md with plain loops
and integer arithmetic. A model never calls the code under test: from ``llm_from_scratch`` it
takes only the error classes it names and the types it checks arguments against, and it never
calls or reads an attribute of what it imports (tests/test_reference.py checks this). Tests pass
plain data in (arrays, integers, names) and compare what the library did with what a model says.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llm_from_scratch.autograd import (
    GraphReleasedError,
    GraphRetention,
    InvalidShapeError,
    NonFiniteGradientError,
    NonFiniteSeedError,
    RetentionTypeError,
    SeedShapeMismatchError,
    SeedTypeError,
    StaleValueError,
    TokenCountMismatchError,
    TokenIdContainerError,
    TokenIdDtypeError,
    TokenIdOutOfBoundsError,
    TokenIdTypeError,
    TokenShapeError,
)
from llm_from_scratch.errors import IdError, NonFiniteError, OptionError, TableError
from llm_from_scratch.tensor import (
    DataLengthMismatchError,
    NegativeExtentError,
    NonIntegerExtentError,
    ShapeOverflowError,
    ShapeTypeError,
    TensorAllocationError,
    TensorValueOverflowError,
    TensorValueTypeError,
    TooManyAxesError,
)

INDEX_LIMIT = 2**63 - 1  # the largest element count, and byte count, a layout may have
MAX_AXES = 64 if int(np.__version__.split(".")[0]) >= 2 else 32  # NumPy's own limit on axes
FLOAT_DTYPES = (np.float64, np.float32)


# Expected outcomes ---------------------------------------------------------------------------


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


# Shapes and tensors --------------------------------------------------------------------------


def row_major_layout(shape: object) -> tuple[tuple[int, ...], int] | Raises:
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


def element_count(shape: object) -> int | None:
    """The element count of a valid shape, or None for an invalid one."""
    layout = row_major_layout(shape)
    return None if isinstance(layout, Raises) else layout[1]


def numpy_cannot_hold(extents: Sequence[int], itemsize: int) -> bool:
    """True when NumPy rejects the shape: ``itemsize * product of non-zero extents`` overflows."""
    nbytes = itemsize
    for extent in extents:
        nbytes *= extent or 1
    return nbytes > INDEX_LIMIT


def expected_tensor(shape: object, values: object, dtype: object) -> Outcome:
    """``Tensor(shape, values, dtype)``: shape, dtype, container, value count, a shape NumPy
    can describe, then each value in flat order (a non-real one, or one whose conversion to
    ``dtype`` overflows); the result is the values in row-major order."""
    layout = row_major_layout(shape)
    if isinstance(layout, Raises):
        return layout
    if dtype is None:
        dtype = kept_dtype(values)
    if dtype not in FLOAT_DTYPES:
        return Raises(TensorValueTypeError)
    if isinstance(values, str | bytes):
        return Raises(TensorValueTypeError)
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "biuf":
            return Raises(TensorValueTypeError)
        items: list[object] = values.reshape(-1).tolist()
    elif not isinstance(values, list | tuple):
        return Raises(TensorValueTypeError)
    else:
        items = list(values)
    if len(items) != layout[1]:
        return Raises(DataLengthMismatchError, {"expected": layout[1], "actual": len(items)})
    extents = tuple(int(extent) for extent in shape)  # type: ignore[attr-defined]
    if numpy_cannot_hold(extents, np.dtype(dtype).itemsize):  # type: ignore[arg-type]
        return Raises(ShapeOverflowError, {"shape": extents})
    converted = []
    for position, value in enumerate(items):
        if not isinstance(value, numbers.Real):
            return Raises(TensorValueTypeError)
        overflow = {"position": position, "value": value, "dtype": np.dtype(dtype).name}  # type: ignore[call-overload]
        try:
            wide = float(value)
        except OverflowError:
            return Raises(TensorValueOverflowError, overflow)
        with np.errstate(over="ignore"):
            narrow = np.array(wide, dtype=dtype)  # type: ignore[call-overload]
        if math.isfinite(wide) and not np.isfinite(narrow):
            return Raises(TensorValueOverflowError, overflow)
        converted.append(narrow)
    return Returns(np.array(converted, dtype=dtype).reshape(extents))  # type: ignore[call-overload]


def kept_dtype(values: object) -> Any:
    """The dtype of ``Tensor(shape, values)`` without ``dtype``: a float32 or float64 array's
    own (in either byte order), anything else float64."""
    if isinstance(values, np.ndarray) and values.dtype.char in ("f", "d"):
        return np.float32 if values.dtype.char == "f" else np.float64
    return np.float64


def expected_from_numpy(array: object) -> Outcome:
    """``Tensor.from_numpy(array)``: a NumPy array that is not masked, of a float32 or float64
    dtype (kept) or an integer dtype (float64, each value rounded to nearest as a Python int
    is); any other array (bool included) or object is a TensorValueTypeError."""
    if not isinstance(array, np.ndarray) or isinstance(array, np.ma.MaskedArray):
        return Raises(TensorValueTypeError)
    plain = np.ndarray.view(array, np.ndarray)
    if plain.dtype.char in ("f", "d"):  # every bit kept, NaN payloads included
        return Returns(plain.astype(kept_dtype(plain)))
    if plain.dtype.kind in "iu":
        converted = [float(int(value)) for value in plain.reshape(-1).tolist()]
        return Returns(np.array(converted, dtype=np.float64).reshape(plain.shape))
    return Raises(TensorValueTypeError)


def expected_zeros(shape: object) -> Outcome:
    """``Tensor.zeros(shape)`` (float64): the layout, then a shape NumPy can describe and a block
    it can allocate; the result is the shape, all zero."""
    layout = row_major_layout(shape)
    if isinstance(layout, Raises):
        return layout
    extents = tuple(int(extent) for extent in shape)  # type: ignore[attr-defined]
    if numpy_cannot_hold(extents, np.dtype(np.float64).itemsize):
        return Raises(ShapeOverflowError if layout[1] == 0 else TensorAllocationError)
    return Returns(extents)


# Token IDs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdScan:
    """What the contract's flat scan finds: a container problem, a count, a bad ID, or IDs."""

    container_problem: bool = False
    count: int = 0
    bad_kind: str | None = None  # "type", "bounds", or "dtype" (an empty non-integer array)
    bad_position: int = 0
    bad_value: object = None
    ids: tuple[int, ...] = ()


def scan_flat_ids(ids: object, rows: int) -> IdScan:
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


def flatten_nested(ids: object) -> tuple[list[object], tuple[int, ...]]:
    """Flatten nested lists/tuples (or one scalar) in row-major order; RaggedError if irregular."""
    if isinstance(ids, np.ndarray):
        return flatten_nested(ids.tolist())

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


# The lookup and its gradient -----------------------------------------------------------------


def plain_lookup(table: np.ndarray[Any, Any], ids: Sequence[int]) -> np.ndarray[Any, Any]:
    """Rows ``table[ids[p]]`` stacked by a Python loop: an ``[len(ids), width]`` array."""
    width = table.shape[1]
    out = np.empty((len(ids), width), dtype=table.dtype)
    for position, token_id in enumerate(ids):
        for feature in range(width):
            out[position, feature] = table[token_id, feature]
    return out


def plain_scatter(
    ids: Sequence[int], upstream: np.ndarray[Any, Any], rows: int, width: int
) -> np.ndarray[Any, Any]:
    """The table gradient as a plain loop: ``g[ids[p]] += upstream[p]`` in flat order, in the
    upstream's dtype; a sum that overflows is infinite, as IEEE arithmetic makes it."""
    gradient = np.zeros((rows, width), dtype=upstream.dtype)
    flat = upstream.reshape(len(ids), width)
    with np.errstate(over="ignore", invalid="ignore"):
        for position, token_id in enumerate(ids):
            for feature in range(width):
                gradient[token_id, feature] += flat[position, feature]
    return gradient


def expected_lookup(
    table: np.ndarray[Any, Any], ids: object, shape: object, boundary: str
) -> Outcome:
    """``Embedding.forward(ids, shape)`` (``boundary="forward"``) or ``gather_rows(ids, shape)``
    (``"gather"``) on a rank-two ``table``: the checks in documented order, then the plain loop."""
    rows, width = table.shape
    forward = boundary == "forward"
    layout = row_major_layout(shape)
    if isinstance(layout, Raises):
        if forward:
            return Raises(TokenShapeError, {"token_shape": shape}, cause=layout)
        return Raises(InvalidShapeError, {"what": "gather index shape"}, cause=layout)
    scan = scan_flat_ids(ids, rows)
    checker = "embedding" if forward else "gather"
    if scan.container_problem:
        return Raises(TokenIdContainerError, {"checker": checker})
    if scan.count != layout[1]:
        attributes = {"expected": layout[1], "actual": scan.count, "checker": checker}
        return Raises(TokenCountMismatchError, attributes)
    output_shape = (*(int(extent) for extent in shape), width)  # type: ignore[attr-defined]
    output_layout = row_major_layout(output_shape)
    if not isinstance(output_layout, Raises) and numpy_cannot_hold(
        output_shape, table.dtype.itemsize
    ):  # its bytes overflow: even with no element NumPy cannot describe it
        output_layout = Raises(ShapeOverflowError, {"shape": output_shape})
    if isinstance(output_layout, Raises):  # found before any ID is read
        if forward:
            return Raises(TokenShapeError, {"token_shape": shape}, cause=output_layout)
        attributes = {"what": "row gather output shape", "shape": output_shape}
        return Raises(InvalidShapeError, attributes, cause=output_layout)
    if scan.bad_kind == "dtype":
        fields = {"position": None, "value": None, "dtype": scan.bad_value, "checker": checker}
        return Raises(TokenIdDtypeError, fields)
    if scan.bad_kind == "type":
        where = {"position": scan.bad_position, "value": scan.bad_value, "checker": checker}
        return Raises(TokenIdTypeError, where)
    if scan.bad_kind == "bounds":
        where = {"position": scan.bad_position, "id": scan.bad_value, "checker": checker}
        return Raises(TokenIdOutOfBoundsError, {**where, "vocabulary_size": rows, "rows": rows})
    return Returns(plain_lookup(table, scan.ids).reshape(output_shape))


def expected_call(table: np.ndarray[Any, Any], ids: object) -> Outcome:
    """``embedding(ids)``: an array's own shape is the token shape; nested lists must be
    regular, and their nesting is the token shape."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind != "O":
        return expected_lookup(table, np.ravel(ids, order="C"), ids.shape, "forward")
    try:
        flat, shape = flatten_nested(ids)
    except RaggedError:
        return Raises(TokenIdContainerError)
    return expected_lookup(table, flat, shape, "forward")


# Reverse mode and the optimizer step ---------------------------------------------------------


def first_non_finite(array: np.ndarray[Any, Any]) -> dict[str, object] | None:
    """The flat index and value of the first NaN or infinity, or None."""
    for index, value in enumerate(array.reshape(-1).tolist()):
        if not np.isfinite(value):
            return {"index": index, "value": value}
    return None


def expected_backward(
    seed: object,
    retention: object,
    *,
    ids: Sequence[int],
    output_shape: tuple[int, ...],
    stored_gradient: np.ndarray[Any, Any],
    released: bool = False,
    stale: bool = False,
) -> Outcome:
    """``output.backward_with_seed(seed, retention)`` where ``output`` is the row lookup of
    ``ids`` from a parameter table whose stored gradient is ``stored_gradient``.

    A ``Tensor`` seed is passed as its array. ``released``: an earlier pass released the graph;
    ``stale``: one optimizer step (revision 0 to 1) ran after the forward. The result is the new
    stored gradient: the plain-loop scatter added to the rows the IDs touch.
    """
    if not (isinstance(seed, np.ndarray | np.generic) and seed.dtype.kind in "biuf"):
        return Raises(SeedTypeError, {"seed_type": type(seed).__name__})
    array = np.asarray(seed)
    if array.shape != output_shape:
        return Raises(SeedShapeMismatchError, {"expected": output_shape, "actual": array.shape})
    with np.errstate(over="ignore"):
        converted = array.astype(stored_gradient.dtype)
    bad_seed = first_non_finite(converted)
    if bad_seed is not None:
        return Raises(NonFiniteSeedError, bad_seed)
    if not isinstance(retention, GraphRetention):
        return Raises(RetentionTypeError, {"retention": retention})
    if released:
        return Raises(GraphReleasedError, {"operation": "gather_rows"})
    if stale:
        recorded = {"operation": "gather_rows", "operand": "table", "recorded_revision": 0}
        return Raises(StaleValueError, {**recorded, "current_revision": 1})
    rows, width = stored_gradient.shape
    pass_gradient = plain_scatter(ids, converted, rows, width)
    bad_pass = first_non_finite(pass_gradient)
    if bad_pass is not None:
        return Raises(NonFiniteGradientError, {"operation": "gather_rows", **bad_pass})
    total = stored_gradient.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for row in sorted(set(ids)):
            for feature in range(width):
                total[row, feature] = stored_gradient[row, feature] + pass_gradient[row, feature]
    bad_total = first_non_finite(total)
    if bad_total is not None:
        return Raises(NonFiniteGradientError, {"operation": "accumulated parameter", **bad_total})
    return Returns(total)


def expected_sgd_step(
    values: np.ndarray[Any, Any],
    gradient: np.ndarray[Any, Any],
    rows: Iterable[int],
    learning_rate: float,
) -> Outcome:
    """``SGD.step()`` on a table whose gradient touched ``rows``: ``w - lr * g`` on those rows,
    rounded in the table's dtype, the other rows unchanged; a NaN or infinity changes nothing."""
    updated = values.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        rate = values.dtype.type(learning_rate)  # 1e308 as float32 is inf
        for row in rows:
            for feature in range(values.shape[1]):
                updated[row, feature] = values[row, feature] - rate * gradient[row, feature]
    if first_non_finite(updated) is not None:
        return Raises(NonFiniteError, {"rule": "optimizer.non-finite-step"})
    return Returns(updated)


# Initialization ------------------------------------------------------------------------------


class SplitMix64Reference:
    """The published SplitMix64, restated as plain integer arithmetic."""

    def __init__(self, state: int) -> None:
        self.state = state

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) % 2**64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
        return z ^ (z >> 31)

    def next_unit(self) -> float:
        """The top 53 bits as a float in ``[0, 1)``."""
        return (self.next_u64() >> 11) * 2.0**-53


def xavier_table(state: int, rows: int, width: int, dtype: object) -> tuple[Any, int]:
    """The Xavier-uniform ``[rows, width]`` table drawn from a generator at ``state``, in
    row-major order in float64 and then rounded to ``dtype``, and the generator's next state."""
    generator = SplitMix64Reference(state)
    limit = math.sqrt(6.0 / (rows + width))
    values = [limit * (2.0 * generator.next_unit() - 1.0) for _ in range(rows * width)]
    table = np.array(values, dtype=np.float64).astype(dtype).reshape(rows, width)  # type: ignore[call-overload]
    return table, generator.state


def name_error(name: object) -> Raises | None:
    """The contract's parameter-name rules, reported at the first bad byte, or None."""
    if not isinstance(name, str):
        return Raises(TableError, {"rule": "name.type", "name_type": type(name).__name__})
    encoded = name.encode("utf-8", errors="surrogatepass")
    if not encoded:
        return Raises(TableError, {"name": name, "rule": "name.empty"})
    segment_start = 0
    for index, byte in enumerate(encoded):
        if byte == ord("."):
            if index == segment_start:
                fields = {"name": name, "rule": "name.segment", "index": index}
                return Raises(TableError, fields)
            segment_start = index + 1
        elif not (ord("a") <= byte <= ord("z") or ord("0") <= byte <= ord("9") or byte == 0x5F):
            fields = {"name": name, "rule": "name.byte", "index": index, "byte": byte}
            return Raises(TableError, fields)
    if segment_start == len(encoded):
        fields = {"name": name, "rule": "name.segment", "index": len(encoded)}
        return Raises(TableError, fields)
    return None


def fan_error(which: str, value: object) -> Raises | None:
    """A fan must be a non-negative integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < 0:
        return Raises(TableError, {"rule": "fan.value", "which": which, "value": value})
    return None


def expected_new(
    name: object,
    rows: object,
    width: object,
    rng_state: int | None,
    rng_type: str,
    dtype: object,
) -> Outcome:
    """``Embedding.new(name, rows, width, rng, dtype)`` with ``rng`` of type ``rng_type`` (at
    ``rng_state`` if it is a ``SplitMix64``, or the seed ``rng_state`` if it is an ``int``):
    name, fans (type, then zero), generator (a seed outside ``[0, 2**64)`` too), dtype, layout,
    memory; the result is the Xavier table and the generator's next state."""
    initialization = {"rule": "table.initialization"}
    build = {"rule": "table.build"}
    bad_name = name_error(name)
    if bad_name is not None:
        return Raises(TableError, initialization, cause=bad_name)
    for which, value in (("fan-in", rows), ("fan-out", width)):
        bad_fan = fan_error(which, value)
        if bad_fan is not None:
            return Raises(TableError, initialization, cause=bad_fan)
    rows_, width_ = int(rows), int(width)  # type: ignore[call-overload]
    if rows_ == 0:
        fields = {"rule": "table.empty-vocabulary", "vocabulary_size": 0}
        return Raises(TableError, fields, cause=Raises(TableError, {"rule": "fan.zero-in"}))
    if width_ == 0:
        fields = {"rule": "table.zero-width", "embedding_width": 0}
        return Raises(TableError, fields, cause=Raises(TableError, {"rule": "fan.zero-out"}))
    if rng_state is None:
        generator = {"rule": "init.generator-type", "rng_type": rng_type}
        return Raises(TableError, initialization, cause=Raises(TableError, generator))
    if not 0 <= rng_state < 2**64:
        seed_error = Raises(TableError, {"rule": "seed.range", "seed": rng_state})
        return Raises(TableError, initialization, cause=seed_error)
    if dtype not in FLOAT_DTYPES:
        return Raises(
            TableError,
            initialization,
            cause=Raises(TableError, build, cause=Raises(TensorValueTypeError)),
        )
    layout = row_major_layout((rows_, width_))
    if isinstance(layout, Raises):
        return Raises(TableError, initialization, cause=Raises(TableError, build, cause=layout))
    if rows_ * width_ * np.dtype(dtype).itemsize > INDEX_LIMIT:  # type: ignore[call-overload]
        return Raises(TableError, initialization, cause=Raises(TableError, build))
    return Returns(xavier_table(rng_state, rows_, width_, dtype))


def expected_from_parameter(shape: tuple[int, ...]) -> Outcome:
    """``Embedding.from_parameter`` of a table of ``shape``: rank, then rows, then width."""
    if len(shape) != 2:
        return Raises(TableError, {"rule": "table.rank", "rank": len(shape)})
    if shape[0] == 0:
        return Raises(TableError, {"rule": "table.empty-vocabulary", "vocabulary_size": 0})
    if shape[1] == 0:
        return Raises(TableError, {"rule": "table.zero-width", "embedding_width": 0})
    return Returns(shape)


# Embedding options and bags ------------------------------------------------------------------


def expected_padding_row(padding_idx: object, rows: int) -> Outcome:
    """``padding_idx``: None, or an integer (not a bool) in ``[-V, V)``, a negative one counted
    from the end; the result is the row, or None."""
    if padding_idx is None:
        return Returns(None)
    requirement = f"an integer in [-{rows}, {rows})"
    if isinstance(padding_idx, bool | np.bool_) or not isinstance(padding_idx, numbers.Integral):
        fields = {"name": "padding_idx", "requirement": requirement, "value": padding_idx}
        return Raises(OptionError, {"rule": "option.value", **fields})
    value = int(padding_idx)
    if not -rows <= value < rows:
        fields = {"name": "padding_idx", "requirement": requirement, "value": value}
        return Raises(OptionError, {"rule": "option.value", **fields})
    return Returns(value + rows if value < 0 else value)


def expected_positive(value: object, name: str) -> Outcome:
    """A finite real number above zero (not a bool), as a float."""
    requirement = "a finite real number above zero"
    refused = Raises(
        OptionError,
        {"rule": "option.value", "name": name, "requirement": requirement, "value": value},
    )
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return refused
    try:
        converted = float(value)
    except OverflowError:  # an int beyond float64 is not finite
        return refused
    if not math.isfinite(converted) or converted <= 0:
        return refused
    return Returns(converted)


def expected_flag(name: str, value: object) -> Outcome:
    """A Python or NumPy bool."""
    if not isinstance(value, bool | np.bool_):
        fields = {"name": name, "requirement": "a bool", "value": value}
        return Raises(OptionError, {"rule": "option.type", **fields})
    return Returns(bool(value))


def expected_lookup_options(
    rows: int, padding_idx: object, max_norm: object, norm_type: object, scale: object
) -> Outcome:
    """The options of a lookup, checked in the order padding_idx, max_norm, norm_type,
    scale_grad_by_freq; the result is the four checked values."""
    checked: list[object] = []
    for outcome in (
        lambda: expected_padding_row(padding_idx, rows),
        lambda: expected_max_norm(max_norm),
        lambda: expected_positive(norm_type, "norm_type"),
        lambda: expected_flag("scale_grad_by_freq", scale),
    ):
        result = outcome()
        if isinstance(result, Raises):
            return result
        checked.append(result.value)
    return Returns(tuple(checked))


def expected_max_norm(max_norm: object) -> Outcome:
    """None, or a finite real number above zero."""
    if max_norm is None:
        return Returns(None)
    return expected_positive(max_norm, "max_norm")


def expected_bag_options(
    rows: int, mode: object, padding_idx: object, max_norm: object, norm_type: object
) -> Outcome:
    """The options of a bag: the mode first, then as a lookup's (without the flag)."""
    if not isinstance(mode, str) or str(mode) not in ("sum", "mean", "max"):
        fields = {"name": "mode", "requirement": "'sum', 'mean' or 'max'", "value": mode}
        return Raises(OptionError, {"rule": "option.value", **fields})
    rest = expected_lookup_options(rows, padding_idx, max_norm, norm_type, False)
    if isinstance(rest, Raises):
        return rest
    return Returns((str(mode), *rest.value[:3]))  # type: ignore[index]


def plain_option_gradient(
    ids: Sequence[int],
    upstream: np.ndarray[Any, Any],
    rows: int,
    width: int,
    padding_row: int | None,
    scale_by_frequency: bool,
) -> np.ndarray[Any, Any]:
    """The table gradient of a lookup with options: the plain flat-order loop, each row's sum
    divided by its count (``scale_grad_by_freq``), and the padding row left at zero."""
    gradient = plain_scatter(ids, upstream, rows, width)
    if scale_by_frequency:
        for row in set(ids):
            count = gradient.dtype.type(list(ids).count(row))
            for feature in range(width):
                gradient[row, feature] = gradient[row, feature] / count
    if padding_row is not None:
        gradient[padding_row] = 0.0
    return gradient


def row_norm(row: np.ndarray[Any, Any], norm_type: float) -> float:
    """PyTorch's general norm of one row, in its dtype, terms added left to right."""
    kind = row.dtype.type
    total = kind(0.0)
    for value in row.tolist():
        element = kind(value)
        if norm_type == 2.0:
            term = element * element
        elif norm_type == 1.0:
            term = abs(element)
        else:
            term = abs(element) ** kind(norm_type)
        total = kind(total + term)
    if norm_type == 2.0:
        return float(np.sqrt(total))
    if norm_type == 1.0:
        return float(total)
    return float(total ** (kind(1.0) / kind(norm_type)))


def pytorch_renorm(
    table: np.ndarray[Any, Any], ids: Iterable[int], max_norm: float, norm_type: float
) -> np.ndarray[Any, Any]:
    """``embedding_renorm_`` as a loop over the distinct IDs in increasing order: a row whose
    norm exceeds ``max_norm`` is multiplied by ``max_norm / (norm + 1e-7)``, computed in float64
    and rounded to the table's dtype."""
    renormed = table.copy()
    for row in sorted(set(ids)):
        norm = row_norm(table[row], norm_type)
        if norm > max_norm:
            scale = table.dtype.type(max_norm / (norm + 1e-7))
            for feature in range(table.shape[1]):
                renormed[row, feature] = table[row, feature] * scale
    return renormed


def expected_bag_starts(
    id_shape: tuple[int, ...], offsets: object, include_last_offset: bool
) -> Outcome:
    """Where each bag starts, then the ID count; the layout, then the offsets: container, at
    least one, each an integer in ``[0, N]`` in flat order, the first 0, none smaller than the
    one before, with include_last_offset the last ``N``."""
    if len(id_shape) == 2 and offsets is None:
        bags, length = id_shape
        return Returns([bag * length for bag in range(bags + 1)])
    if len(id_shape) != 1 or offsets is None:
        fields = {"rank": len(id_shape), "offsets_given": offsets is not None}
        return Raises(IdError, {"rule": "bag.layout", **fields})
    count = id_shape[0]
    if isinstance(offsets, np.ndarray):
        if offsets.ndim != 1:
            return Raises(IdError, {"rule": "offsets.container"})
        items: list[object] = offsets.tolist()
        if offsets.size and offsets.dtype.kind not in "iuO":
            fields = {"rule": "offsets.type", "position": 0, "offset": items[0]}
            return Raises(IdError, fields)
    elif isinstance(offsets, str | bytes) or not isinstance(offsets, Sequence):
        return Raises(IdError, {"rule": "offsets.container"})
    else:
        items = list(offsets)
    if not items:
        return Raises(IdError, {"rule": "offsets.empty"})
    for position, value in enumerate(items):
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
            fields = {"rule": "offsets.type", "position": position, "offset": value}
            return Raises(IdError, fields)
        if not 0 <= int(value) <= count:
            where = {"position": position, "offset": int(value), "bound": count}
            return Raises(IdError, {"rule": "offsets.range", **where})
    starts = [int(value) for value in items]  # type: ignore[call-overload]
    if starts[0] != 0:
        return Raises(IdError, {"rule": "offsets.first", "offset": starts[0]})
    for position in range(1, len(starts)):
        if starts[position] < starts[position - 1]:
            where = {"position": position, "offset": starts[position]}
            bound = starts[position - 1]
            return Raises(IdError, {"rule": "offsets.increasing", **where, "bound": bound})
    if not include_last_offset:
        return Returns([*starts, count])
    if starts[-1] != count:
        return Raises(IdError, {"rule": "offsets.last", "offset": starts[-1], "bound": count})
    return Returns(starts)


@dataclass(frozen=True)
class PlainBag:
    """An embedding bag computed by plain loops: the output, each bag's entries that are not
    padding, and the row behind each output coordinate of ``max`` (-1 in an empty bag)."""

    output: np.ndarray[Any, Any]
    sizes: list[int]
    max_rows: np.ndarray[Any, Any]


def plain_bag(
    table: np.ndarray[Any, Any],
    ids: Sequence[int],
    starts: Sequence[int],
    mode: str,
    padding_row: int | None,
    weights: np.ndarray[Any, Any] | None = None,
) -> PlainBag:
    """Each bag's rows reduced by a loop in flat order, padding entries skipped: ``sum`` adds
    ``weights[p] * row`` from 0.0, ``mean`` divides the sum by the entries, ``max`` keeps a
    coordinate's first largest value."""
    bags, width = len(starts) - 1, table.shape[1]
    output = np.zeros((bags, width), dtype=table.dtype)
    max_rows = np.full((bags, width), -1)
    sizes = []
    for bag in range(bags):
        entries = [p for p in range(starts[bag], starts[bag + 1]) if ids[p] != padding_row]
        for entry, position in enumerate(entries):
            row = table[ids[position]]
            if mode == "max":
                for feature in range(width):
                    if entry == 0 or row[feature] > output[bag, feature]:
                        output[bag, feature] = row[feature]
                        max_rows[bag, feature] = ids[position]
                continue
            term = row if weights is None else weights[position] * row
            output[bag] = output[bag] + term
        if mode == "mean" and entries:
            output[bag] = output[bag] / table.dtype.type(len(entries))
        sizes.append(len(entries))
    return PlainBag(output, sizes, max_rows)


def plain_bag_gradients(
    table: np.ndarray[Any, Any],
    ids: Sequence[int],
    starts: Sequence[int],
    mode: str,
    padding_row: int | None,
    upstream: np.ndarray[Any, Any],
    weights: np.ndarray[Any, Any] | None = None,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The table gradient and the per-sample weights' gradient of a bag, by plain loops:
    ``g[ids[p]] += w[p] * upstream[b]`` (``mean``: ``upstream[b] / size[b]``) in flat order,
    or for ``max`` each output coordinate's upstream into the row behind it, bag by bag; and
    ``dw[p] = upstream[b] . table[ids[p]]``, features left to right (0 for padding)."""
    bagged = plain_bag(table, ids, starts, mode, padding_row, weights)
    gradient = np.zeros(table.shape, dtype=table.dtype)
    weight_gradient = np.zeros(len(ids), dtype=table.dtype)
    for bag in range(len(starts) - 1):
        if mode == "max":
            for feature in range(table.shape[1]):
                row = bagged.max_rows[bag, feature]
                if row >= 0:
                    gradient[row, feature] += upstream[bag, feature]
            continue
        for position in range(starts[bag], starts[bag + 1]):
            if ids[position] == padding_row:
                continue
            term = upstream[bag]
            if mode == "mean":
                term = term / table.dtype.type(bagged.sizes[bag])
            if weights is not None:
                term = weights[position] * term
            gradient[ids[position]] = gradient[ids[position]] + term
            total = table.dtype.type(0.0)
            for feature in range(table.shape[1]):
                total = total + upstream[bag, feature] * table[ids[position], feature]
            weight_gradient[position] = total
    return gradient, weight_gradient
