"""``log_sigmoid``: stable at any input, its VJP against central differences, and both against
PyTorch's ``logsigmoid``."""

from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.tensor import Tensor

from conftest import import_optional


def test_values_at_both_ends_neither_overflow_nor_lose_the_small_term() -> None:
    x = TensorValue.parameter(Tensor((5,), [-1000.0, -30.0, 0.0, 30.0, 1000.0]))
    with np.errstate(all="raise"):
        y = x.log_sigmoid()
        y.backward_with_seed(np.ones(5))
    values = y.numpy().tolist()
    assert values[0] == -1000.0 and values[4] == -0.0
    assert values[1] == pytest.approx(-30.0 - np.exp(-30.0), rel=1e-15)
    assert values[2] == pytest.approx(-np.log(2.0), rel=1e-15)
    assert values[3] == pytest.approx(-np.exp(-30.0), rel=1e-12)
    slopes = x.gradient.numpy().tolist()  # type: ignore[union-attr]
    assert slopes[0] == 1.0 and slopes[2] == 0.5 and slopes[4] == 0.0
    assert slopes[3] == pytest.approx(np.exp(-30.0), rel=1e-12)


def test_the_gradient_agrees_with_central_differences() -> None:
    rng = np.random.default_rng(5)
    values = rng.normal(scale=4.0, size=(3, 7))
    weights = Tensor.from_numpy(rng.normal(size=(3, 7)))
    probe = check_gradient(
        lambda x: x.log_sigmoid().mul(weights).sum(),
        TensorValue.parameter(Tensor.from_numpy(values)),
    )
    assert probe.passed, probe


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_gradients_equal_pytorchs(dtype: str) -> None:
    torch = import_optional("torch")
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.normal(scale=10.0, size=500), [-200.0, 0.0, 200.0]])
    values = values.astype(dtype)
    upstream = rng.normal(size=values.shape).astype(dtype)
    x = TensorValue.parameter(Tensor.from_numpy(values))
    y = x.log_sigmoid()
    y.backward_with_seed(upstream)
    theirs_x = torch.tensor(values, requires_grad=True)
    theirs = torch.nn.functional.logsigmoid(theirs_x)
    theirs.backward(torch.from_numpy(upstream))
    tolerance = {"float32": 2e-6, "float64": 1e-14}[dtype]
    np.testing.assert_allclose(y.numpy(), theirs.detach().numpy(), rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(
        x.gradient.numpy(),  # type: ignore[union-attr]
        theirs_x.grad.numpy(),
        rtol=tolerance,
        atol=tolerance,
    )
