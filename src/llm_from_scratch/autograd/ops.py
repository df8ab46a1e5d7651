"""Differentiable element-wise and shape operations, each forward next to its VJP.

Operands have one shape and one dtype (no broadcasting: every VJP stays as small as its
forward); a real number is recorded, in the value's dtype, as a constant of the operation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_from_scratch.autograd.gradient import Gradient
from llm_from_scratch.autograd.tape import Node, Vjp, output_allocation_error, record
from llm_from_scratch.errors import ShapeError
from llm_from_scratch.tensor.storage import (
    FloatArray,
    Shape,
    checked_shape_and_count,
    numpy_can_describe,
)


def check_same_dtype(operation: str, left: FloatArray, right: FloatArray) -> None:
    """``operand.dtype`` unless both operands have one dtype."""
    if left.dtype != right.dtype:
        left_dtype, right_dtype = str(left.dtype), str(right.dtype)
        raise ShapeError("operand.dtype", operation=operation, left=left_dtype, right=right_dtype)


def _recorded(
    operation: str,
    operands: Sequence[tuple[str, Node]],
    saved: object,
    vjp: Vjp,
    function: Callable[..., FloatArray],
    *arguments: Any,
) -> Node:
    """Record ``function(*arguments)`` (overflow and NaN are values; no memory is
    ``output.allocation``)."""

    def compute() -> tuple[FloatArray, object]:
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                result = np.asarray(function(*arguments))  # rank zero: a scalar
        except MemoryError as error:
            raise output_allocation_error(operation, operands[0][1].array.size) from error
        return result, saved

    return record(operation, operands, compute, vjp)


def _element_wise(
    operation: str,
    function: Callable[[FloatArray, FloatArray], FloatArray],
    left: Node,
    right: Node,
    saved: object,
    vjp: Vjp,
) -> Node:
    if left.array.shape != right.array.shape:
        left_shape, right_shape = left.array.shape, right.array.shape
        raise ShapeError("operand.shape", operation=operation, left=left_shape, right=right_shape)
    check_same_dtype(operation, left.array, right.array)
    operands = (("left", left), ("right", right))
    return _recorded(operation, operands, saved, vjp, function, left.array, right.array)


def add_forward(left: Node, right: Node) -> Node:
    """``left + right`` (its VJP needs no facts)."""
    return _element_wise("add", np.add, left, right, None, add_vjp)


def add_vjp(saved: None, upstream: FloatArray) -> Sequence[Gradient]:
    """Both operands receive ``upstream`` unchanged."""
    return upstream, upstream


def sub_forward(left: Node, right: Node) -> Node:
    """``left - right`` (its VJP needs no facts)."""
    return _element_wise("sub", np.subtract, left, right, None, sub_vjp)


def sub_vjp(saved: None, upstream: FloatArray) -> Sequence[Gradient]:
    """``(upstream, -upstream)``."""
    return upstream, np.negative(upstream)


@dataclass(frozen=True, slots=True)
class MulSaved:
    """The two operand values."""

    left: FloatArray
    right: FloatArray


def mul_forward(left: Node, right: Node) -> Node:
    """``left * right`` element-wise."""
    saved = MulSaved(left.array, right.array)
    return _element_wise("mul", np.multiply, left, right, saved, mul_vjp)


def mul_vjp(saved: MulSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """``(upstream * right, upstream * left)``."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (
            np.asarray(np.multiply(upstream, saved.right)),
            np.asarray(np.multiply(upstream, saved.left)),
        )


@dataclass(frozen=True, slots=True)
class ScalarSaved:
    """The number the operation added or multiplied by, in the operand's dtype."""

    number: np.floating[Any]


def _by_number(
    operation: str,
    function: Callable[[FloatArray, np.floating[Any]], FloatArray],
    source: Node,
    number: np.floating[Any],
    vjp: Vjp,
) -> Node:
    saved = ScalarSaved(number)
    return _recorded(operation, (("left", source),), saved, vjp, function, source.array, number)


def shift_forward(source: Node, number: np.floating[Any]) -> Node:
    """``source + number``."""
    return _by_number("add", np.add, source, number, shift_vjp)


def minus_number_forward(source: Node, number: np.floating[Any]) -> Node:
    """``source - number`` (the VJP of a shift)."""
    return _by_number("sub", np.subtract, source, number, shift_vjp)


def shift_vjp(saved: ScalarSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """The operand receives ``upstream`` unchanged; the number receives nothing."""
    return (upstream,)


def number_minus_forward(source: Node, number: np.floating[Any]) -> Node:
    """``number - source``."""
    return _by_number("sub", lambda x, n: np.subtract(n, x), source, number, number_minus_vjp)


def number_minus_vjp(saved: ScalarSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """The operand receives ``-upstream``."""
    return (np.negative(upstream),)


def scale_forward(source: Node, number: np.floating[Any]) -> Node:
    """``source * number``."""
    return _by_number("mul", np.multiply, source, number, scale_vjp)


def scale_vjp(saved: ScalarSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """``upstream * number``."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(np.multiply(upstream, saved.number)),)


def divided_forward(source: Node, number: np.floating[Any]) -> Node:
    """``source / number`` (a zero gives infinities or NaN, as NumPy and PyTorch do)."""
    return _by_number("div", np.divide, source, number, divided_vjp)


def divided_vjp(saved: ScalarSaved, upstream: FloatArray) -> Sequence[Gradient]:
    """``upstream / number``."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return (np.asarray(np.divide(upstream, saved.number)),)


def sum_forward(source: Node) -> Node:
    """The sum of every element (``[*]`` to ``[]``); the VJP's fact is the input's shape."""

    def compute() -> tuple[FloatArray, Shape]:
        with np.errstate(over="ignore", invalid="ignore"):  # an infinite sum is its value
            total = np.asarray(np.sum(source.array), dtype=source.array.dtype).reshape(())
        return total, source.array.shape

    return record("sum", (("input", source),), compute, sum_vjp)


def sum_vjp(input_shape: Shape, upstream: FloatArray) -> Sequence[Gradient]:
    """Every input element receives the scalar upstream gradient."""
    return (np.full(input_shape, upstream.reshape(()), dtype=upstream.dtype),)


def reshape_forward(source: Node, shape: object) -> Node:
    """The same values in row-major order under ``shape`` (the VJP's fact is the input's shape):
    ``shape.invalid`` for a target whose layout fails, then ``reshape.count`` for another count,
    then ``shape.invalid`` (``shape.overflow``) for an empty one NumPy cannot describe."""
    what = "reshape target shape"
    try:
        target, count = checked_shape_and_count(shape)
    except ShapeError as error:
        raise ShapeError("shape.invalid", what=what, cause=error, shape=shape) from error
    if count != source.array.size:
        raise ShapeError(
            "reshape.count",
            source=source.array.shape,
            expected=source.array.size,
            target=target,
            actual=count,
        )
    if count == 0 and not numpy_can_describe(target, source.array.itemsize):
        overflow = ShapeError("shape.overflow", shape=target)
        raise ShapeError("shape.invalid", what=what, cause=overflow, shape=shape) from overflow

    def compute() -> tuple[FloatArray, Shape]:
        view = source.array.reshape(target)
        if source.kind == "parameter":  # a parameter's values change: never share them
            try:
                view = np.array(view, copy=True)
            except MemoryError as error:
                raise output_allocation_error("reshape", count) from error
        return view, source.array.shape

    return record("reshape", (("input", source),), compute, reshape_vjp)


def reshape_vjp(input_shape: Shape, upstream: FloatArray) -> Sequence[Gradient]:
    """The upstream gradient under the input's shape."""
    return (upstream.reshape(input_shape),)


def log_sigmoid_forward(source: Node) -> Node:
    """``log(sigmoid(x))`` element-wise without overflow for any ``x``,
    ``min(x, 0) - log1p(exp(-|x|))``; the VJP's fact is the slope ``sigmoid(-x)``."""

    def compute() -> tuple[FloatArray, FloatArray]:
        x = source.array
        try:
            with np.errstate(under="ignore", invalid="ignore"):  # NaN stays NaN
                small = np.exp(-np.abs(x))  # in (0, 1]: exp never overflows here
                value = np.asarray(np.minimum(x, 0) - np.log1p(small))
                one = x.dtype.type(1)
                slope = np.where(x >= 0, small / (one + small), one / (one + small))
        except MemoryError as error:
            raise output_allocation_error("log_sigmoid", x.size) from error
        return value, np.asarray(slope, dtype=x.dtype)

    return record("log_sigmoid", (("input", source),), compute, log_sigmoid_vjp)


def log_sigmoid_vjp(slope: FloatArray, upstream: FloatArray) -> Sequence[Gradient]:
    """``upstream * sigmoid(-x)``: the derivative of ``log(sigmoid(x))`` is ``1 - sigmoid(x)``."""
    return (np.asarray(upstream * slope),)
