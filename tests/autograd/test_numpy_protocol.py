"""NumPy and values: a value converts to its numbers; NumPy's ``add``, ``subtract``,
``multiply``, ``divide`` (by a number) and ``negative`` run on the tape; every other NumPy ufunc
or function gives a typed refusal that names ``value.numpy()``, never another operation's
result. A ``Tensor`` (a constant) converts to its values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from llm_from_scratch.autograd import (
    TensorValue,
)
from llm_from_scratch.errors import ShapeError, TapeError
from llm_from_scratch.nn import Embedding
from llm_from_scratch.tensor import Tensor

from checks import raises_rule

UFUNCS = sorted(
    (value for value in vars(np).values() if isinstance(value, np.ufunc)),
    key=lambda ufunc: ufunc.__name__,
)
ON_THE_TAPE = {"add", "subtract", "multiply", "divide", "negative"}
BOTH_SIDES = {"add", "subtract", "multiply"}  # with a value or an array on either side

FUNCTIONS: dict[str, Callable[[Any], object]] = {
    "dot": lambda v: np.dot(v, v),
    "vdot": lambda v: np.vdot(v, v),
    "inner": lambda v: np.inner(v, v),
    "outer": lambda v: np.outer(v, v),
    "tensordot": lambda v: np.tensordot(v, v, axes=0),
    "einsum": lambda v: np.einsum("...,...", v, v),
    "sum": np.sum,
    "mean": np.mean,
    "std": np.std,
    "var": np.var,
    "prod": np.prod,
    "cumsum": np.cumsum,
    "max": np.max,
    "min": np.min,
    "amax": np.amax,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "sort": np.sort,
    "argsort": np.argsort,
    "clip": lambda v: np.clip(v, -1, 1),
    "where": lambda v: np.where(True, v, v),
    "concatenate": lambda v: np.concatenate([v, v], axis=None),
    "stack": lambda v: np.stack([v, v]),
    "reshape": lambda v: np.reshape(v, -1),
    "ravel": np.ravel,
    "transpose": np.transpose,
    "squeeze": np.squeeze,
    "expand_dims": lambda v: np.expand_dims(v, 0),
    "copy": np.copy,
    "zeros_like": np.zeros_like,
    "ones_like": np.ones_like,
    "full_like": lambda v: np.full_like(v, 2.0),
    "allclose": lambda v: np.allclose(v, v),
    "isclose": lambda v: np.isclose(v, v),
    "array_equal": lambda v: np.array_equal(v, v),
    "round": np.round,
    "around": np.around,
    "linalg.norm": np.linalg.norm,
    "shape": np.shape,
    "ndim": np.ndim,
    "size": np.size,
    "nonzero": np.nonzero,
    "count_nonzero": np.count_nonzero,
    "diff": np.diff,
    "average": np.average,
    "median": np.median,
    "percentile": lambda v: np.percentile(v, 50),
    "histogram": np.histogram,
    "unique": np.unique,
    "tile": lambda v: np.tile(v, 2),
    "repeat": lambda v: np.repeat(v, 2),
    "pad": lambda v: np.pad(v, 1),
}
"""NumPy's common functions, each called with one value (and the value again where it takes
two arrays); on a vector's numbers each computes."""

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
values = st.one_of(
    hnp.arrays(np.float64, shapes, elements=st.floats(-100, 100)),
    hnp.arrays(np.float32, shapes, elements=st.floats(-100, 100, width=32)),
)


def value_of(array: np.ndarray[Any, Any]) -> TensorValue:
    return TensorValue.parameter(Tensor.from_numpy(array))


def refusal(call: Callable[[], object]) -> TapeError:
    with raises_rule(TapeError, "numpy.function") as caught:
        call()
    assert "value.numpy()" in caught.value.use and caught.value.use in str(caught.value)
    return caught.value


@given(values)
def test_a_value_converts_to_its_numbers_read_only_unless_copied(
    array: np.ndarray[Any, Any],
) -> None:
    value = value_of(array)
    for converted in (np.asarray(value), np.asanyarray(value), np.array(value, copy=None)):
        assert type(converted) is np.ndarray and converted.dtype == array.dtype
        np.testing.assert_array_equal(converted, array)
        assert not converted.flags.writeable
    copied = np.array(value)
    assert copied.flags.writeable and copied.shape == array.shape
    copied[...] = 7.0
    np.testing.assert_array_equal(value.numpy(), array)
    other = np.float32 if array.dtype == np.float64 else np.float64
    np.testing.assert_array_equal(np.asarray(value, dtype=other), array.astype(other))
    with pytest.raises(ValueError, match="copy"):
        np.array(value, dtype=other, copy=False)  # NumPy's rule: a conversion copies


def test_the_numpy_calls_that_once_gave_a_wrong_answer_now_give_the_numbers_or_refuse() -> None:
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = Embedding.from_pretrained(table, freeze=False)([[2, 1], [0, 3]])
    assert np.asarray(out).shape == np.array(out).shape == (2, 2, 2)
    np.testing.assert_array_equal(np.asarray(out), table[[[2, 1], [0, 3]]])
    assert refusal(lambda: np.dot(out, out)).function == "numpy.dot"


@settings(max_examples=12)  # per ufunc: some hundred properties in all
@given(values, st.data())
@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda ufunc: ufunc.__name__)
def test_every_ufunc_runs_on_the_tape_as_on_the_numbers_or_refuses(
    ufunc: np.ufunc, array: np.ndarray[Any, Any], data: st.DataObject
) -> None:
    value = value_of(array)
    other = data.draw(hnp.arrays(array.dtype, array.shape, elements=st.floats(-100, 100, width=32)))
    name = ufunc.__name__
    number = array.dtype.type(2.5)
    calls: list[tuple[tuple[Any, ...], Callable[[], object]]] = []
    if ufunc.nin == 1:
        calls = [((), lambda: ufunc(value))]
    if ufunc.nin == 2:
        calls = [
            ((array, other), lambda: ufunc(value, other)),
            ((other, array), lambda: ufunc(other, value)),
            ((array, number), lambda: ufunc(value, number)),
        ]
    for operands, call in calls:
        on_the_tape = name in BOTH_SIDES or (name, len(operands)) == ("negative", 0)
        on_the_tape = on_the_tape or (name == "divide" and operands[1] is number)
        if not on_the_tape:
            with pytest.raises(TapeError) as caught:
                call()
            assert caught.value.rule in ("numpy.function", "operand.type", "operand.divisor-type")
            continue
        result = call()
        assert isinstance(result, TensorValue) and result.kind == "operation"
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(result.numpy(), ufunc(*(operands or (array,))))
    everywhere = (np.empty(array.shape),) * ufunc.nout
    assert refusal(lambda: ufunc(*[value] * ufunc.nin, out=everywhere)).function.startswith(
        f"numpy.{name} with "
    )


@pytest.mark.parametrize("ufunc", [u for u in UFUNCS if u.__name__ not in ON_THE_TAPE])
def test_every_other_ufunc_refuses_naming_itself(ufunc: np.ufunc) -> None:
    value = value_of(np.arange(1.0, 4.0))
    operands = [value] + [np.arange(1.0, 4.0)] * (ufunc.nin - 1)
    assert refusal(lambda: ufunc(*operands)).function == f"numpy.{ufunc.__name__}"


@pytest.mark.parametrize("method", ["reduce", "accumulate", "outer", "reduceat", "at"])
@pytest.mark.parametrize("ufunc", [np.add, np.multiply], ids=lambda ufunc: ufunc.__name__)
def test_a_ufunc_method_other_than_a_call_refuses(ufunc: np.ufunc, method: str) -> None:
    value = value_of(np.arange(4.0))
    arguments = {"reduceat": ([0, 2],), "outer": (value,), "at": ([0], 1.0)}.get(method, ())
    error = refusal(lambda: getattr(ufunc, method)(value, *arguments))
    assert error.function == f"numpy.{ufunc.__name__}.{method}"


@settings(max_examples=12)  # per function
@given(hnp.arrays(np.float64, st.integers(1, 5), elements=st.floats(-100, 100)))
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_common_numpy_function_refuses_a_value_and_computes_on_its_numbers(
    name: str, array: np.ndarray[Any, Any]
) -> None:
    call = FUNCTIONS[name]
    error = refusal(lambda: call(value_of(array)))
    assert error.function.endswith(name.rsplit(".", 1)[-1])
    call(value_of(array).numpy())  # what the refusal says to do computes


def test_the_refusal_names_the_tapes_own_operation_where_there_is_one() -> None:
    value = value_of(np.arange(6.0).reshape(2, 3))
    assert refusal(lambda: np.sum(value)).use.startswith("use value.sum(), or ")
    assert refusal(lambda: np.reshape(value, 6)).use.startswith("use value.reshape(shape), or ")
    assert refusal(lambda: np.add(value, 1.0, dtype=np.float64)).use.startswith("use value + ")
    assert refusal(lambda: np.mean(value)).use.startswith("use value.mean(), or ")
    assert refusal(lambda: np.divide(1.0, value)).function == "numpy.divide"


def test_a_numpy_operand_on_the_left_keeps_the_gradient_of_the_value() -> None:
    x = value_of(np.array([1.0, -2.0, 3.0], dtype=np.float32))
    weights = np.array([0.5, 2.0, -1.0], dtype=np.float32)
    loss = (np.float32(3) * (weights * x) + weights).sum()
    loss.backward()
    np.testing.assert_array_equal(x.gradient.numpy(), np.float32(3) * weights)  # type: ignore[union-attr]
    with raises_rule(ShapeError, "operand.shape"):
        np.ones(2, dtype=np.float32) * x


def test_an_in_place_numpy_operator_refuses_rather_than_write_the_numbers_into_the_array() -> None:
    x = value_of(np.array([1.0, 2.0]))
    target = np.zeros(2)
    with raises_rule(TapeError, "numpy.function"):
        target += x
    assert target.tolist() == [0.0, 0.0]


def test_a_tensor_is_a_constant_whose_values_every_numpy_function_reads() -> None:
    tensor = Tensor((2, 2), [1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    assert np.asarray(tensor).dtype == np.float32 and not np.asarray(tensor).flags.writeable
    np.testing.assert_array_equal(np.dot(tensor, tensor), [[7.0, 10.0], [15.0, 22.0]])
    assert float(np.sum(tensor)) == 10.0 and np.exp(tensor).shape == (2, 2)
