"""Real numbers on the tape: ``+``, ``-``, ``*`` by a Python or NumPy number (either side) and
``/`` by one, with the gradient of the value alone; ``-`` of two values, ``-value`` and
``mean()``; ``item()``, ``float()``, ``int()`` and ``format()`` of a one-element value; NumPy
arrays as constant operands."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from llm_from_scratch.autograd import (
    TensorValue,
)
from llm_from_scratch.errors import ShapeError, TapeError
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import import_optional

NUMBERS: list[Any] = [
    2,
    -0.5,
    np.float32(0.1),
    np.float64(3.25),
    np.int64(-3),
    np.uint8(7),
    Fraction(1, 3),
    1e300,  # beyond float32: inf there, as NumPy and PyTorch make it
]
DTYPES = [np.float32, np.float64]
small = st.floats(-10.0, 10.0)  # central differences of step 1e-6 stay within 2e-6 here


def parameter(values: Any, dtype: Any = np.float64) -> TensorValue:
    return TensorValue.parameter(Tensor.from_numpy(np.asarray(values, dtype=dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("number", NUMBERS, ids=repr)
def test_a_number_on_either_side_computes_in_the_values_dtype_and_only_the_value_gets_a_gradient(
    number: Any, dtype: Any
) -> None:
    values = np.array([[1.5, -2.0, 0.0], [4.0, 0.25, -8.0]], dtype=dtype)
    upstream = np.arange(6, dtype=dtype).reshape(2, 3) + 1
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        in_dtype = np.asarray(float(number)).astype(dtype)
        sums, products = values + in_dtype, values * in_dtype
        differences, quotients = values - in_dtype, values / in_dtype
        scaled_upstream, divided_upstream = upstream * in_dtype, upstream / in_dtype
    for result, expected, gradient in [
        (lambda x: x + number, sums, upstream),
        (lambda x: number + x, sums, upstream),
        (lambda x: x.add(number), sums, upstream),
        (lambda x: x - number, differences, upstream),
        (lambda x: number - x, -differences, -upstream),
        (lambda x: x.sub(number), differences, upstream),
        (lambda x: x * number, products, scaled_upstream),
        (lambda x: number * x, products, scaled_upstream),
        (lambda x: x.mul(number), products, scaled_upstream),
        (lambda x: x / number, quotients, divided_upstream),
    ]:
        x = parameter(values, dtype)
        y = result(x)
        assert y.dtype == dtype and y.kind == "operation"
        np.testing.assert_array_equal(y.numpy(), expected)
        if np.isfinite(gradient).all():
            y.backward_with_seed(upstream)
            np.testing.assert_array_equal(x.gradient.numpy(), gradient)  # type: ignore[union-attr]


@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=small), small)
def test_the_gradients_of_add_and_mul_by_a_number_agree_with_central_differences(
    values: np.ndarray[Any, Any], number: float
) -> None:
    weights = Tensor.from_numpy(np.linspace(-1.0, 2.0, values.size).reshape(values.shape))
    losses = (
        lambda x: (x * number + number).mul(weights).sum(),
        lambda x: ((1 - x) * (x - number) - x / 4).mean(),
        lambda x: -(x - weights) * 0.5,
    )
    for loss in losses:
        start = TensorValue.parameter(Tensor.from_numpy(values))
        probe = check_gradient(lambda x, loss=loss: loss(x).sum(), start)
        assert probe.passed, probe


def test_a_loss_with_numbers_equals_pytorchs_and_its_gradient_bit_for_bit() -> None:
    torch = import_optional("torch")
    rng = np.random.default_rng(4)
    table = rng.standard_normal((50, 8)).astype(np.float32)
    weights = rng.standard_normal((4, 6, 8)).astype(np.float32)
    ids = rng.integers(0, 50, size=(4, 6))
    x = parameter(table, np.float32)
    out = x.gather_rows(ids.reshape(-1), (4, 6))
    loss = ((out * 0.5 + 2 - weights) * weights * np.float32(1.5) / 3).mean() - 1
    loss.backward()
    theirs = torch.tensor(table, requires_grad=True)
    their_out = torch.nn.functional.embedding(torch.from_numpy(ids), theirs)
    their_weights = torch.from_numpy(weights)
    their_loss = ((their_out * 0.5 + 2 - their_weights) * their_weights * 1.5 / 3).mean() - 1
    their_loss.backward()
    assert loss.item() == pytest.approx(their_loss.item(), rel=1e-6)  # sums in another order
    np.testing.assert_array_equal(x.gradient.numpy(), theirs.grad.numpy())  # type: ignore[union-attr]


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_a_one_element_value_of_any_shape_reads_as_one_number(shape: tuple[int, ...]) -> None:
    value = parameter(np.full(shape, -2.75), np.float32)
    assert value.item() == -2.75 and type(value.item()) is float
    assert float(value) == -2.75 and int(value) == -2 and type(int(value)) is int
    assert f"{value:.3f}" == "-2.750" and f"{value}" == str(value)
    assert bool(value) and not bool(value * 0) and repr(value).endswith(", value=-2.75)")


@pytest.mark.parametrize("shape", [(0,), (2,), (2, 3)])
@pytest.mark.parametrize(
    ("action", "read"),
    [
        ("item()", lambda v: v.item()),
        ("float()", float),
        ("int()", int),
        ("bool()", bool),
        ("format()", lambda v: f"{v:.2f}"),
    ],
)
def test_a_value_of_other_than_one_element_refuses_to_be_one_number(
    shape: tuple[int, ...], action: str, read: Any
) -> None:
    with raises_rule(ShapeError, "value.not-one-element") as caught:
        read(parameter(np.ones(shape)))
    assert (caught.value.shape, caught.value.action) == (shape, action)
    assert "numpy()" in str(caught.value)


def test_a_bool_or_a_number_beyond_float64_is_no_operand() -> None:
    x = parameter([1.0, 2.0])
    refused = [(True, "bool"), (np.bool_(False), "bool"), (10**400, "int beyond float64")]
    for operand, got in refused:
        with raises_rule(TapeError, "operand.type") as caught:
            x * operand
        assert (caught.value.operation, caught.value.operand_type) == ("mul", got)
    with raises_rule(TapeError, "operand.type") as caught:
        x + "1"  # type: ignore[operator]
    assert (caught.value.operation, caught.value.operand_type) == ("add", "str")


def test_the_difference_of_two_values_gives_each_its_gradient_and_negation_is_exact() -> None:
    x, y = parameter([1.5, -2.0]), parameter([0.25, 4.0])
    (x - y).backward_with_seed(np.array([1.0, 3.0]))
    assert x.gradient.numpy().tolist() == [1.0, 3.0]  # type: ignore[union-attr]
    assert y.gradient.numpy().tolist() == [-1.0, -3.0]  # type: ignore[union-attr]
    assert (-x).numpy().tolist() == [-1.5, 2.0]
    assert (np.ones(2) - x).numpy().tolist() == [-0.5, 3.0]


def test_a_mean_is_the_sum_over_the_count_and_divides_the_gradient_alike() -> None:
    x = parameter(np.arange(12.0).reshape(3, 4), np.float32)
    mean = x.mean()
    mean.backward()
    assert mean.shape == () and mean.item() == 5.5
    assert (x.gradient.numpy() == np.float32(1) / np.float32(12)).all()  # type: ignore[union-attr]
    with np.errstate(invalid="ignore"):
        assert np.isnan(parameter(np.ones((0, 2))).mean().item())  # no element: NaN, as PyTorch


def test_division_is_by_a_real_number_only() -> None:
    x = parameter([1.0, 2.0])
    for divisor, got in [(x, "TensorValue"), (np.ones(2), "ndarray"), (True, "bool")]:
        with raises_rule(TapeError, "operand.divisor-type") as caught:
            x / divisor  # type: ignore[operator]
        assert caught.value.operand_type == got
    with pytest.raises(TypeError):
        1 / x  # type: ignore[operator]
    assert (x / 0).numpy().tolist() == [np.inf, np.inf]  # as NumPy and PyTorch divide


def test_a_numpy_array_is_a_constant_operand_of_the_values_shape_and_dtype() -> None:
    x = parameter([[1.0, 2.0]], np.float32)
    weights = np.array([[3.0, -1.0]], dtype=np.float32)
    y = x * weights
    weights[0, 0] = 100.0  # the operand was copied: the product does not change
    y.sum().backward()
    assert y.numpy().tolist() == [[3.0, -2.0]]
    assert x.gradient.numpy().tolist() == [[3.0, -1.0]]  # type: ignore[union-attr]
    with raises_rule(ShapeError, "operand.dtype") as dtype_error:
        x + np.ones((1, 2))
    assert (dtype_error.value.left, dtype_error.value.right) == ("float32", "float64")
    with raises_rule(ShapeError, "operand.shape", operation="add") as shape_error:
        x + np.ones(2, dtype=np.float32)
    assert (shape_error.value.left, shape_error.value.right) == ((1, 2), (2,))
    with raises_rule(TapeError, "operand.type", operation="mul") as type_error:
        x * np.array([[True, False]])
    assert type_error.value.operand_type == "ndarray of dtype bool"
