"""``matmul`` and ``t``, the matrix product and transpose HogBatch scores a window with: each
VJP against central differences, both against PyTorch, and the operands they refuse."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import NonFiniteError, ShapeError, TapeError
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import import_optional


def leaf(array: np.ndarray[Any, Any]) -> TensorValue:
    return TensorValue.parameter(Tensor.from_numpy(array))


def test_a_small_example() -> None:
    left = leaf(np.array([[1.0, 2.0], [0.0, 1.0]]))
    right = leaf(np.array([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]]))
    product = left.matmul(right)
    assert product.numpy().tolist() == [[7.0, 2.0, 2.0], [3.0, 1.0, 0.0]]
    product.backward_with_seed(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 10.0]]))
    assert left.gradient.numpy().tolist() == [[1.0, 3.0], [20.0, 0.0]]  # type: ignore[union-attr]
    assert right.gradient.numpy().tolist() == [[1.0, 0.0, 0.0], [2.0, 0.0, 10.0]]  # type: ignore[union-attr]


def test_the_transpose_swaps_the_axes_and_its_gradient_swaps_them_back() -> None:
    matrix = leaf(np.arange(6.0).reshape(2, 3))
    flipped = matrix.t()
    assert flipped.numpy().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    flipped.backward_with_seed(np.arange(6.0).reshape(3, 2))
    assert matrix.gradient.numpy().tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]  # type: ignore[union-attr]


@pytest.mark.parametrize("operand", ["left", "right", "transposed"])
def test_each_operand_agrees_with_central_differences(operand: str) -> None:
    rng = np.random.default_rng(5)
    left, right = rng.normal(size=(4, 7)), rng.normal(size=(7, 3))
    weights = Tensor.from_numpy(rng.normal(size=(4, 3)))

    def loss(value: TensorValue) -> TensorValue:
        if operand == "left":
            product = value.matmul(Tensor.from_numpy(right))
        elif operand == "right":
            product = TensorValue.constant(Tensor.from_numpy(left)).matmul(value)
        else:
            product = TensorValue.constant(Tensor.from_numpy(left)).matmul(value.t())
        return product.mul(weights).sum()

    start = {"left": left, "right": right, "transposed": right.T.copy()}[operand]
    probe = check_gradient(loss, leaf(start))
    assert probe.passed, probe


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 100, 6), (10, 100, 6), (300, 64, 200)])
def test_values_and_gradients_equal_pytorchs(dtype: str, shape: tuple[int, int, int]) -> None:
    torch = import_optional("torch")
    rng = np.random.default_rng(sum(shape))
    rows, width, columns = shape
    left = rng.normal(size=(rows, width)).astype(dtype)
    right = rng.normal(size=(columns, width)).astype(dtype)
    upstream = rng.normal(size=(rows, columns)).astype(dtype)
    ours_left, ours_right = leaf(left), leaf(right)
    product = ours_left.matmul(ours_right.t())
    product.backward_with_seed(upstream)
    their_left = torch.tensor(left, requires_grad=True)
    their_right = torch.tensor(right, requires_grad=True)
    theirs = torch.matmul(their_left, their_right.t())
    theirs.backward(torch.from_numpy(upstream))
    tolerance = {"float32": 1e-5, "float64": 1e-12}[dtype]
    pairs = [
        (product.numpy(), theirs.detach().numpy()),
        (ours_left.gradient.numpy(), their_left.grad.numpy()),  # type: ignore[union-attr]
        (ours_right.gradient.numpy(), their_right.grad.numpy()),  # type: ignore[union-attr]
    ]
    for ours, reference in pairs:
        scale = float(np.abs(reference).max())
        np.testing.assert_allclose(ours, reference, rtol=tolerance, atol=tolerance * scale)


def test_operands_that_do_not_pair_up_are_refused() -> None:
    matrix = leaf(np.zeros((2, 3)))
    with raises_rule(ShapeError, "operand.matmul-shape") as caught:
        matrix.matmul(leaf(np.zeros((2, 3))))
    assert (caught.value.left, caught.value.right) == ((2, 3), (2, 3))
    with raises_rule(ShapeError, "operand.matmul-shape"):
        leaf(np.zeros(3)).matmul(leaf(np.zeros((3, 2))))
    with raises_rule(ShapeError, "operand.dtype"):
        matrix.matmul(leaf(np.zeros((3, 2), dtype=np.float32)))
    with raises_rule(TapeError, "operand.matmul-type") as type_error:
        matrix.matmul([[0.0] * 2] * 3)  # type: ignore[arg-type]
    assert type_error.value.operand_type == "list"
    with raises_rule(ShapeError, "operand.transpose-shape") as transposed:
        leaf(np.zeros((2, 3, 4))).t()
    assert transposed.value.shape == (2, 3, 4)
    assert matrix.matmul(np.ones((3, 4))).shape == (2, 4)  # a NumPy array is a constant


def test_a_gradient_that_overflows_is_refused_and_nothing_is_stored() -> None:
    left = np.ones((2, 3), dtype=np.float32)
    left[1, 2] = 3e38
    ours_left, ours_right = leaf(left), leaf(np.ones((3, 2), dtype=np.float32))
    with raises_rule(NonFiniteError, "gradient.non-finite") as caught:
        ours_left.matmul(ours_right).backward_with_seed(np.full((2, 2), 10.0, np.float32))
    assert caught.value.operation == "matmul"
    assert not ours_left.gradient.numpy().any() and not ours_right.gradient.numpy().any()  # type: ignore[union-attr]
