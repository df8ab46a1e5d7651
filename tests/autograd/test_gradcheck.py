from __future__ import annotations

import numpy as np

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.gradcheck import DEFAULT_STEP, DEFAULT_TOLERANCE, check_gradient
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

from conftest import KNOWN_TABLE

WEIGHTS = Tensor((1, 3, 2), [0.5, -1.25, 2.0, 0.75, -3.0, 1.5])


def embedding_loss(table: TensorValue) -> TensorValue:
    """``L = sum(W * X)`` with ``X`` the lookup of the repeated IDs ``[2, 1, 2]``."""
    layer = Embedding.from_parameter(NamedParameter.from_value("token_embedding.weight", table))
    return layer.forward([2, 1, 2], (1, 3)).mul(WEIGHTS).sum()


def test_the_probe_uses_the_contract_step_and_tolerance() -> None:
    assert (DEFAULT_STEP, DEFAULT_TOLERANCE) == (1e-6, 2e-6)


def test_every_table_coordinate_agrees_with_central_differences() -> None:
    table = TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))
    probe = check_gradient(embedding_loss, table)
    assert probe.passed, probe
    assert probe.analytic.tolist() == [[0.0, 0.0], [2.0, 0.75], [-2.5, 0.25], [0.0, 0.0]]


def test_the_probe_leaves_the_parameter_untouched() -> None:
    table = TensorValue.parameter(Tensor((4, 2), KNOWN_TABLE))
    check_gradient(embedding_loss, table)
    assert table.gradient.numpy().tolist() == np.zeros((4, 2)).tolist()  # type: ignore[union-attr]


def test_the_probe_detects_a_wrong_gradient() -> None:
    def sabotaged(p: TensorValue) -> TensorValue:
        # The loss value uses p twice but the tape sees a constant copy for one factor.
        frozen = Tensor(p.shape, p.value_snapshot().numpy())
        return p.mul(frozen).sum()

    probe = check_gradient(sabotaged, TensorValue.parameter(Tensor((2,), [1.0, 2.0])))
    assert not probe.passed
