from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.autograd import (
    GraphReleasedError,
    GraphRetention,
    NonFiniteGradientError,
    NonFiniteSeedError,
    NotAParameterError,
    NotRecordedError,
    NotScalarOutputError,
    OperandDtypeMismatchError,
    OperandShapeMismatchError,
    ReleasedOperandError,
    ReshapeCountMismatchError,
    SeedShapeMismatchError,
    SeedTypeError,
    StaleValueError,
    TensorAutodiffError,
    TensorValue,
    no_grad,
)
from llm_from_scratch.gradcheck import check_gradient
from llm_from_scratch.tensor import Tensor


def parameter(*values: float) -> TensorValue:
    return TensorValue.parameter(Tensor((len(values),), values))


def test_a_new_parameter_has_a_zero_gradient_and_a_constant_has_none() -> None:
    w = parameter(1.0, 2.0)
    c = TensorValue.constant(Tensor((2,), [1.0, 2.0]))
    assert w.gradient is not None and w.gradient.flat_values() == [0.0, 0.0]
    assert c.gradient is None and c.gradient_snapshot() is None


def test_is_same_node_is_identity_not_equal_values() -> None:
    a, b = parameter(1.0), parameter(1.0)
    assert a.is_same_node(a)
    assert not a.is_same_node(b)


def test_value_snapshot_is_an_independent_copy() -> None:
    w = parameter(1.0, 2.0)
    snapshot = w.value_snapshot()
    assert snapshot.equals(w.value)
    assert not np.shares_memory(snapshot.numpy(), w.numpy())


def test_values_handed_out_are_read_only() -> None:
    w = parameter(1.0, 2.0)
    for array in (w.numpy(), w.value.numpy()):
        with pytest.raises(ValueError):
            array[0] = 3.0


def test_backward_of_a_scalar_is_a_seed_of_one() -> None:
    w = parameter(3.0, -1.0)
    w.mul(w).sum().backward()
    assert w.gradient_snapshot().flat_values() == [6.0, -2.0]  # type: ignore[union-attr]


def test_add_mul_sum_and_reshape_pass_the_finite_difference_probe() -> None:
    other = Tensor((2, 3), [0.5, -1.0, 2.0, 3.0, -0.25, 1.5])

    def loss(p: TensorValue) -> TensorValue:
        return p.mul(p).add(other).reshape((3, 2)).mul(p.reshape((3, 2))).sum()

    probe = check_gradient(loss, TensorValue.parameter(Tensor((2, 3), [1, 2, 3, 4, 5, 6])))
    assert probe.passed, probe


def test_gradients_accumulate_over_two_retained_passes() -> None:
    w = parameter(1.0, 2.0)
    loss = w.mul(Tensor((2,), [3.0, 5.0])).sum()
    loss.backward_with_seed(np.array(1.0), GraphRetention.RETAIN)
    loss.backward_with_seed(np.array(1.0), GraphRetention.RETAIN)
    assert w.gradient.flat_values() == [6.0, 10.0]  # type: ignore[union-attr]


def test_zero_grad_resets_a_parameter_and_rejects_other_values() -> None:
    w = parameter(1.0)
    w.sum().backward()
    w.zero_grad()
    assert w.gradient.flat_values() == [0.0]  # type: ignore[union-attr]
    with pytest.raises(NotAParameterError) as caught:
        w.sum().zero_grad()
    assert caught.value.kind == "operation"


def test_a_released_graph_refuses_a_second_backward() -> None:
    w = parameter(1.0, 2.0)
    loss = w.sum()
    loss.backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    assert w.gradient.flat_values() == [1.0, 1.0]  # type: ignore[union-attr]
    with pytest.raises(GraphReleasedError) as caught:
        loss.backward()
    assert caught.value.operation == "sum"
    assert str(caught.value) == "the sum operation tape has been released"
    assert w.gradient.flat_values() == [1.0, 1.0]  # type: ignore[union-attr]


def test_release_frees_every_operation_the_pass_walked() -> None:
    w = parameter(1.0, 2.0)
    doubled = w.add(w)
    doubled.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    with pytest.raises(GraphReleasedError) as caught:
        doubled.backward_with_seed(np.ones(2))
    assert caught.value.operation == "add"


def test_building_on_a_released_operand_names_the_operation_and_operand() -> None:
    w = parameter(1.0, 2.0)
    doubled = w.add(w)
    doubled.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    with pytest.raises(ReleasedOperandError) as caught:
        w.mul(doubled)
    assert (caught.value.operation, caught.value.operand) == ("mul", "right")
    assert str(caught.value) == (
        "cannot build mul: operand right reaches a released operation tape"
    )


def test_an_operand_whose_ancestor_was_released_is_refused_too() -> None:
    w = parameter(1.0, 2.0)
    doubled = w.add(w)
    branch = doubled.mul(Tensor((2,), [1.0, 1.0]))
    doubled.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    with pytest.raises(ReleasedOperandError) as caught:
        branch.sum()
    assert caught.value.operand == "input"


def test_parameters_are_never_released() -> None:
    w = parameter(1.0)
    w.sum().backward_with_seed(np.array(1.0), GraphRetention.RELEASE)
    w.sum().backward()
    assert w.gradient.flat_values() == [2.0]  # type: ignore[union-attr]


def test_seed_shape_must_match_the_output_shape() -> None:
    w = TensorValue.parameter(Tensor((2, 2), [1, 2, 3, 4]))
    with pytest.raises(SeedShapeMismatchError) as caught:
        w.mul(w).backward_with_seed(np.ones((4,)))
    assert (caught.value.expected, caught.value.actual) == ((2, 2), (4,))
    assert str(caught.value) == "backward seed shape [4] does not match output shape [2, 2]"


def test_a_non_finite_seed_leaves_the_gradient_untouched() -> None:
    w = parameter(1.0, 2.0)
    y = w.mul(Tensor((2,), [2.0, 2.0]))
    y.backward_with_seed(np.array([1.0, 1.0]))
    before = w.gradient_snapshot()
    with pytest.raises(NonFiniteSeedError) as caught:
        y.backward_with_seed(np.array([1.0, np.nan]))
    assert caught.value.index == 1 and np.isnan(caught.value.value)
    assert w.gradient.equals(before)  # type: ignore[union-attr, arg-type]


def test_a_non_finite_vjp_raises_and_stores_nothing_anywhere() -> None:
    a, b = parameter(1.0), parameter(1e308)
    loss = a.sum().add(b.mul(Tensor((1,), [1e308])).sum())
    with pytest.raises(NonFiniteGradientError):
        loss.backward_with_seed(np.array(1e10))
    assert a.gradient.flat_values() == [0.0]  # type: ignore[union-attr]
    assert b.gradient.flat_values() == [0.0]  # type: ignore[union-attr]


def test_an_accumulated_overflow_raises_and_keeps_the_earlier_gradient() -> None:
    w = parameter(1.0)
    loss = w.mul(Tensor((1,), [1e308])).sum()
    loss.backward()
    with pytest.raises(NonFiniteGradientError) as caught:
        loss.backward()
    assert caught.value.operation == "accumulated parameter"
    assert w.gradient.flat_values() == [1e308]  # type: ignore[union-attr]


def test_seed_must_be_a_tensor_or_numpy_array() -> None:
    w = parameter(1.0)
    with pytest.raises(SeedTypeError):
        w.sum().backward_with_seed([1.0])  # type: ignore[arg-type]


def test_seed_may_be_a_tensor() -> None:
    w = parameter(1.0, 2.0)
    w.mul(w).backward_with_seed(Tensor((2,), [1.0, 0.5]))
    assert w.gradient.flat_values() == [2.0, 2.0]  # type: ignore[union-attr]


def test_backward_without_seed_needs_a_scalar() -> None:
    with pytest.raises(NotScalarOutputError):
        parameter(1.0, 2.0).mul(parameter(1.0, 1.0)).backward()


def test_backward_from_a_constant_is_refused() -> None:
    c = TensorValue.constant(Tensor((1,), [1.0]))
    with pytest.raises(NotRecordedError):
        c.sum().backward()


def test_no_grad_builds_untracked_values() -> None:
    w = parameter(1.0)
    with no_grad():
        y = w.mul(w)
    assert y.kind == "constant"
    assert w.mul(w).kind == "operation"


def test_elementwise_operands_need_one_shape_and_one_dtype() -> None:
    with pytest.raises(OperandShapeMismatchError):
        parameter(1.0).add(parameter(1.0, 2.0))
    with pytest.raises(OperandDtypeMismatchError):
        parameter(1.0).add(TensorValue.parameter(Tensor((1,), [1.0], dtype=np.float32)))


def test_reshape_keeps_the_element_count() -> None:
    with pytest.raises(ReshapeCountMismatchError) as caught:
        parameter(1.0, 2.0).reshape((3,))
    assert (caught.value.expected, caught.value.actual) == (2, 3)


def test_every_tape_error_is_a_tensor_autodiff_error() -> None:
    for error in (
        GraphReleasedError,
        ReleasedOperandError,
        SeedShapeMismatchError,
        NonFiniteSeedError,
        StaleValueError,
        NonFiniteGradientError,
    ):
        assert issubclass(error, TensorAutodiffError)


def test_a_seed_changed_after_backward_does_not_change_the_stored_gradient() -> None:
    w = TensorValue.parameter(Tensor((2, 2), [1, 2, 3, 4]))
    seed = np.ones((4,))
    w.reshape((4,)).backward_with_seed(seed)
    direct = np.ones((2, 2))
    w.backward_with_seed(direct)
    seed[0] = 99.0
    direct[0, 0] = 99.0
    assert w.gradient.flat_values() == [2.0, 2.0, 2.0, 2.0]  # type: ignore[union-attr]


def test_an_overflowing_repeated_row_is_caught_even_though_copies_are_not_rescanned() -> None:
    table = TensorValue.parameter(Tensor((3, 1), [0.0, 0.0, 0.0]))
    rows = table.gather_rows([0, 2, 2], (3,))
    with pytest.raises(NonFiniteGradientError) as caught:
        rows.backward_with_seed(np.array([[1.0], [1e308], [1e308]]))
    assert (caught.value.operation, caught.value.index) == ("gather_rows", 2)
    assert not table.gradient.numpy().any()  # type: ignore[union-attr]


def test_two_finite_contributions_that_overflow_together_are_caught() -> None:
    w = parameter(1e308)
    with pytest.raises(NonFiniteGradientError):
        w.add(w).sum().backward_with_seed(np.array(1e308))
    assert w.gradient.flat_values() == [0.0]  # type: ignore[union-attr]
