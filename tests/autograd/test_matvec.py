"""``matvec``, the row-wise dot products skip-gram scores with: its VJP against central
differences, its NumPy and compiled paths against each other (bit for bit), and both against
PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import (
    TensorValue,
)
from llm_from_scratch.autograd.dispatch import COMPILED_KERNEL_MIN_VALUES, compiled_kernel
from llm_from_scratch.autograd.matvec import (
    lane_dot_numpy,
    lane_dot_pair,
    matvec_into,
    matvec_vjp_into,
)
from llm_from_scratch.errors import NonFiniteError, ShapeError, TapeError
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from conftest import import_optional


def leaf(array: np.ndarray[Any, Any]) -> TensorValue:
    return TensorValue.parameter(Tensor.from_numpy(array))


def test_a_small_example() -> None:
    rows = leaf(np.array([[[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]]]))
    vector = leaf(np.array([[1.0, 1.0, 2.0]]))
    scores = rows.matvec(vector)
    assert scores.shape == (1, 2)
    assert scores.numpy().tolist() == [[9.0, 1.0]]
    scores.backward_with_seed(np.array([[1.0, 10.0]]))
    assert rows.gradient.numpy().tolist() == [[[1, 1, 2], [10, 10, 20]]]  # type: ignore[union-attr]
    assert vector.gradient.numpy().tolist() == [[1, 12, 3]]  # type: ignore[union-attr]


@pytest.mark.parametrize("operand", ["matrices", "vectors"])
def test_each_operand_agrees_with_central_differences(operand: str) -> None:
    rng = np.random.default_rng(7)
    matrices = rng.normal(size=(2, 3, 4, 11))
    vectors = rng.normal(size=(2, 3, 11))
    weights = Tensor.from_numpy(rng.normal(size=(2, 3, 4)))

    def loss(value: TensorValue) -> TensorValue:
        if operand == "matrices":
            return value.matvec(Tensor.from_numpy(vectors)).mul(weights).sum()
        return TensorValue.constant(Tensor.from_numpy(matrices)).matvec(value).mul(weights).sum()

    probe = check_gradient(loss, leaf(matrices if operand == "matrices" else vectors))
    assert probe.passed, probe


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("width", [1, 7, 8, 13, 100, 129])
def test_the_compiled_kernels_give_the_numpy_paths_bits(dtype: str, width: int) -> None:
    rng = np.random.default_rng(width)
    count, rows = 64, 6
    matrices = rng.normal(size=(count, rows, width)).astype(dtype)
    vectors = rng.normal(size=(count, width)).astype(dtype)
    upstream = rng.normal(size=(count, rows)).astype(dtype)
    out = np.empty((count, rows), dtype=dtype)
    matvec_into(out, matrices, vectors)
    assert out.tobytes() == lane_dot_numpy(matrices * vectors[:, None, :]).tobytes()
    matrix_gradient = np.empty_like(matrices)
    vector_gradient = np.empty_like(vectors)
    matvec_vjp_into(matrix_gradient, vector_gradient, upstream, matrices, vectors)
    assert matrix_gradient.tobytes() == (upstream[:, :, None] * vectors[:, None, :]).tobytes()
    expected = np.zeros_like(vectors)
    for m in range(rows):
        expected += upstream[:, m, None] * matrices[:, m, :]
    assert vector_gradient.tobytes() == expected.tobytes()


@compiled_kernel(parallel=False, pack_lanes=True)
def pair_dots_into(out: Any, rows: Any, vector: Any) -> None:  # pragma: no cover - JIT
    for r in range(0, rows.shape[0], 2):
        out[r], out[r + 1] = lane_dot_pair(rows[r], rows[r + 1], vector)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("width", [1, 7, 8, 13, 100, 129])
def test_two_dot_products_side_by_side_give_each_ones_bits(dtype: str, width: int) -> None:
    rng = np.random.default_rng(width)
    rows = rng.normal(size=(64, width)).astype(dtype)
    vector = rng.normal(size=width).astype(dtype)
    out = np.empty(64, dtype=dtype)
    pair_dots_into(out, rows, vector)
    assert out.tobytes() == lane_dot_numpy(rows * vector).tobytes()


def test_the_dot_product_adds_in_eight_lanes() -> None:
    # 1e16 + 1 - 1e16 loses the 1 left to right; in lanes, the 1 and -1e16 meet other values.
    values = np.zeros(16)
    values[0], values[8], values[1] = 1e16, -1e16, 1.0
    assert float(lane_dot_numpy(values)) == 1.0
    out = np.empty((1, 1))
    matvec_into(out, values.reshape(1, 1, 16), np.ones((1, 16)))
    assert float(out[0, 0]) == 1.0


def test_both_sides_of_the_threshold_run_the_same_arithmetic() -> None:
    rng = np.random.default_rng(3)
    width = 100
    small_count = (COMPILED_KERNEL_MIN_VALUES - 1) // (6 * width)
    matrices = rng.normal(size=(small_count + 200, 6, width)).astype(np.float32)
    vectors = rng.normal(size=(small_count + 200, width)).astype(np.float32)
    large = leaf(matrices).matvec(leaf(vectors)).numpy()
    small = leaf(matrices[:small_count]).matvec(leaf(vectors[:small_count])).numpy()
    assert large[:small_count].tobytes() == small.tobytes()


def test_operands_that_do_not_pair_up_are_refused() -> None:
    matrices = leaf(np.zeros((2, 3, 4)))
    with raises_rule(ShapeError, "operand.matvec-shape") as caught:
        matrices.matvec(leaf(np.zeros((2, 5))))
    assert (caught.value.left, caught.value.right) == ((2, 3, 4), (2, 5))
    with raises_rule(ShapeError, "operand.matvec-shape"):
        leaf(np.zeros(4)).matvec(leaf(np.zeros(4)))
    with raises_rule(ShapeError, "operand.matvec-shape"):
        matrices.matvec(leaf(np.zeros((3, 4))))
    with raises_rule(ShapeError, "operand.dtype"):
        matrices.matvec(leaf(np.zeros((2, 4), dtype=np.float32)))
    with raises_rule(TapeError, "operand.matvec-type") as type_error:
        matrices.matvec([[0.0] * 4] * 2)  # type: ignore[arg-type]
    assert type_error.value.operand_type == "list"
    assert matrices.matvec(np.ones((2, 4))).shape == (2, 3)  # a NumPy array is a constant


def test_empty_stacks() -> None:
    assert leaf(np.zeros((0, 3, 4))).matvec(leaf(np.zeros((0, 4)))).shape == (0, 3)
    scores = leaf(np.ones((2, 3, 0))).matvec(leaf(np.ones((2, 0))))
    assert scores.numpy().tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 6, 100), (300, 6, 100), (2, 3, 4, 9)])
def test_values_and_gradients_equal_pytorchs(dtype: str, shape: tuple[int, ...]) -> None:
    torch = import_optional("torch")
    rng = np.random.default_rng(sum(shape))
    matrices = rng.normal(size=shape).astype(dtype)
    vectors = rng.normal(size=shape[:-2] + shape[-1:]).astype(dtype)
    upstream = rng.normal(size=shape[:-1]).astype(dtype)
    ours_matrices, ours_vectors = leaf(matrices), leaf(vectors)
    scores = ours_matrices.matvec(ours_vectors)
    scores.backward_with_seed(upstream)
    their_matrices = torch.tensor(matrices, requires_grad=True)
    their_vectors = torch.tensor(vectors, requires_grad=True)
    theirs = torch.matmul(their_matrices, their_vectors.unsqueeze(-1)).squeeze(-1)
    theirs.backward(torch.from_numpy(upstream))
    tolerance = {"float32": 1e-5, "float64": 1e-12}[dtype]
    pairs = [
        (scores.numpy(), theirs.detach().numpy()),
        (ours_matrices.gradient.numpy(), their_matrices.grad.numpy()),  # type: ignore[union-attr]
        (ours_vectors.gradient.numpy(), their_vectors.grad.numpy()),  # type: ignore[union-attr]
    ]
    for ours, reference in pairs:
        scale = float(np.abs(reference).max())
        np.testing.assert_allclose(ours, reference, rtol=tolerance, atol=tolerance * scale)


@pytest.mark.parametrize("count", [2, 300])
def test_a_gradient_that_overflows_is_refused_and_nothing_is_stored(count: int) -> None:
    matrices = np.ones((count, 6, 100), dtype=np.float32)
    matrices[1, 2, 7] = 3e38
    rows, vectors = leaf(matrices), leaf(np.ones((count, 100), dtype=np.float32))
    seed = np.ones((count, 6), dtype=np.float32)
    seed[1, 2] = 10.0  # the vectors' gradient at [1, 7] is 10 * 3e38 + 5: infinite
    with raises_rule(NonFiniteError, "gradient.non-finite") as caught:
        rows.matvec(vectors).backward_with_seed(seed)
    assert caught.value.operation == "matvec"
    assert (caught.value.index, caught.value.value) == (107, float("inf"))
    assert not rows.gradient.numpy().any() and not vectors.gradient.numpy().any()  # type: ignore[union-attr]
