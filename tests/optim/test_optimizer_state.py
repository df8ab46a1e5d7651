"""Optimizer state dicts: their keys, resuming bit for bit, and checks before any change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.errors import FormatError, OptionError
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.optim import SGD, Adagrad, Adam
from llm_from_scratch.tensor import Tensor

from adversarial_inputs import ShowsOtherValues
from checks import raises_rule
from optim_support import factories, layer_of, random_steps, train

ROWS, WIDTH, TOKENS = 30, 4, 20
FACTORIES = factories(initial_accumulator=0.1)


def test_state_dict_keys_name_the_parameter_then_the_state_and_count_steps() -> None:
    layer = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(1))
    bias = TensorValue.parameter(Tensor((2,), [0.0, 0.0]))
    optimizer = Adam([*layer.parameters(), bias], learning_rate=0.1)
    state = optimizer.state_dict()
    assert list(state) == [
        "token_embedding.weight.exp_avg",
        "token_embedding.weight.exp_avg_sq",
        "1.exp_avg",  # a bare leaf is named by its position
        "1.exp_avg_sq",
        "step",
    ]
    assert optimizer.parameter_names == ("token_embedding.weight", "1")
    assert state["step"].dtype == np.int64 and state["step"].shape == () and int(state["step"]) == 0
    assert state["1.exp_avg"].shape == (2,) and state["1.exp_avg"].dtype == np.float64
    assert list(Adagrad(layer.parameters(), 0.1).state_dict()) == [
        "token_embedding.weight.sum",
        "step",
    ]
    assert list(SGD(layer.parameters(), 0.1).state_dict()) == ["step"]


def test_state_dict_arrays_are_independent_copies() -> None:
    layer = layer_of(np.ones((ROWS, WIDTH)))
    optimizer = Adam(layer.parameters(), 0.1)
    state = optimizer.state_dict()
    train(layer, optimizer, random_steps(ROWS, WIDTH, TOKENS, 2, seed=1))
    assert not state["token_embedding.weight.exp_avg"].any() and int(state["step"]) == 0
    state["token_embedding.weight.exp_avg"][...] = 5.0
    assert not (optimizer.state_dict()["token_embedding.weight.exp_avg"] == 5.0).any()


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("dense", [False, True], ids=["row_sparse", "dense"])
def test_resuming_from_a_state_dict_is_bit_identical_to_an_uninterrupted_run(
    name: str, dense: bool
) -> None:
    factory = FACTORIES[name]
    values = np.random.default_rng(2).standard_normal((ROWS, WIDTH))
    steps = random_steps(ROWS, WIDTH, TOKENS, 20, seed=3)
    straight = layer_of(values)
    train(straight, factory(straight.parameters()), steps, dense)

    first = layer_of(values)
    interrupted = factory(first.parameters())
    train(first, interrupted, steps[:9], dense)
    saved_values, saved_state = (
        first.table.tensor.value_snapshot().numpy(),
        interrupted.state_dict(),
    )
    del first, interrupted

    resumed_layer = layer_of(saved_values)
    resumed = factory(resumed_layer.parameters())
    resumed.load_state_dict(saved_state)
    assert resumed.step_count == 9
    train(resumed_layer, resumed, steps[9:], dense)
    assert resumed_layer.table.tensor.numpy().tobytes() == straight.table.tensor.numpy().tobytes()


def loaded_state_error(
    change: Callable[[dict[str, Any]], object],
) -> tuple[BaseException, Adam, dict[str, Any]]:
    """Load a changed copy of a trained Adam's state; return the error and the untouched state."""
    layer = layer_of(np.random.default_rng(4).standard_normal((ROWS, WIDTH)))
    optimizer = Adam(layer.parameters(), 0.1)
    train(layer, optimizer, random_steps(ROWS, WIDTH, TOKENS, 2, seed=5))
    before = optimizer.state_dict()
    state = optimizer.state_dict()
    state["token_embedding.weight.exp_avg"] += 1.0  # so a partial load would show
    change(state)
    with pytest.raises(Exception) as caught:
        optimizer.load_state_dict(state)
    after = optimizer.state_dict()
    assert after.keys() == before.keys()
    assert all(after[key].tobytes() == before[key].tobytes() for key in before)
    return caught.value, optimizer, before


KEY = "token_embedding.weight.exp_avg_sq"


MISSING = "be given (this optimizer keeps it)"
UNKNOWN = "be a state of this optimizer"


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        (lambda state: state.pop(KEY), (KEY, MISSING, "none")),
        (lambda state: state.pop("step"), ("step", MISSING, "none")),
        (
            lambda state: state.update({"token_embedding.weight.sum": state[KEY]}),
            ("token_embedding.weight.sum", UNKNOWN, "an unknown key"),
        ),
        (
            lambda state: state.update({KEY: state[KEY].tolist()}),
            (KEY, "be a NumPy array", "list"),
        ),
        (
            lambda state: state.update({KEY: state[KEY][:-1]}),
            (KEY, f"have shape [{ROWS}, {WIDTH}]", (ROWS - 1, WIDTH)),
        ),
        (
            lambda state: state.update({KEY: state[KEY].astype(np.float32)}),
            (KEY, "have dtype float64", "float32"),
        ),
        (
            lambda state: state.update({"step": np.array(3, dtype=np.int32)}),
            ("step", "have dtype int64", "int32"),
        ),
        (
            lambda state: state.update({"step": np.array([3])}),
            ("step", "have shape []", (1,)),
        ),
        (
            lambda state: state[KEY].__setitem__((1, 2), -1e-3),
            (KEY, "be finite and at least zero", f"-0.001 at flat index {WIDTH + 2}"),
        ),
        (
            lambda state: state["token_embedding.weight.exp_avg"].__setitem__((0, 1), np.nan),
            ("token_embedding.weight.exp_avg", "be finite", "nan at flat index 1"),
        ),
        (
            lambda state: state.update({"step": np.array(-2)}),
            ("step", "be an integer at least zero", "-2 at flat index 0"),
        ),
    ],
)
def test_load_state_dict_checks_everything_before_changing_anything(
    change: Callable[[dict[str, Any]], object], fields: tuple[str, str, object]
) -> None:
    caught, _, _ = loaded_state_error(change)
    assert (type(caught), caught.rule) == (FormatError, "optimizer.state")
    assert (caught.optimizer, caught.key, caught.requirement, caught.actual) == ("Adam", *fields)
    shown = list(fields[2]) if isinstance(fields[2], tuple) else fields[2]  # a shape as a list
    assert str(caught) == f"Adam state {fields[0]!r} must {fields[1]}, got {shown}"


def test_load_state_dict_needs_a_mapping() -> None:
    optimizer = Adam(layer_of(np.zeros((2, 2))).parameters(), 0.1)
    with raises_rule(FormatError, "optimizer.state-type") as caught:
        optimizer.load_state_dict([("step", np.array(1))])  # type: ignore[arg-type]
    assert (caught.value.optimizer, caught.value.value_type) == ("Adam", "list")


def test_missing_keys_are_reported_before_unknown_keys_and_before_array_checks() -> None:
    def change(state: dict[str, Any]) -> None:
        state["unknown"] = 1
        state[KEY] = "bad"
        del state["step"]

    caught, _, _ = loaded_state_error(change)
    assert (type(caught), caught.rule) == (FormatError, "optimizer.state") and (
        caught.key,
        caught.actual,
    ) == ("step", "none")


def test_a_loaded_state_is_copied_not_shared() -> None:
    layer = layer_of(np.zeros((ROWS, WIDTH)))
    optimizer = Adagrad(layer.parameters(), 0.1)
    state = optimizer.state_dict()
    optimizer.load_state_dict(state)
    state["token_embedding.weight.sum"][...] = 7.0
    assert not optimizer.state_dict()["token_embedding.weight.sum"].any()


def test_parameters_are_checked_container_then_each_entry() -> None:
    layer = Embedding.new("w", 4, 2, SplitMix64.from_seed(1))
    leaf = layer.table.tensor
    with raises_rule(OptionError, "optimizer.parameters-type") as container:
        Adam(layer.table, 0.1)  # type: ignore[arg-type]
    assert container.value.value_type == "NamedParameter"
    with raises_rule(OptionError, "optimizer.parameters-type"):
        SGD(leaf, 0.1)  # type: ignore[arg-type]
    constant = TensorValue.constant(Tensor((1,), [1.0]))
    with raises_rule(OptionError, "optimizer.parameter-type") as entry:
        Adagrad([leaf, constant], 0.1)
    assert entry.value.position == 1
    assert entry.value.got.startswith("a TensorValue of kind constant (")
    assert "freeze=False" in entry.value.got
    with raises_rule(OptionError, "optimizer.duplicate-parameter") as same_leaf:
        Adam([leaf, NamedParameter.from_value("v", leaf)], 0.1)
    assert (same_leaf.value.position, same_leaf.value.repeated, same_leaf.value.first) == (
        1,
        "leaf",
        0,
    )
    other = TensorValue.parameter(Tensor((1,), [1.0]))
    with raises_rule(OptionError, "optimizer.duplicate-parameter") as same_name:
        Adam([NamedParameter.from_value("1", leaf), other], 0.1)  # the bare leaf is "1" too
    assert (same_name.value.repeated, same_name.value.name) == ("name", "1")


def test_a_state_array_subclass_is_checked_and_loaded_as_the_memory_it_holds() -> None:
    def change(state: dict[str, Any]) -> None:
        state[KEY] = state[KEY].view(ShowsOtherValues)
        np.ndarray.__setitem__(state[KEY], (2, 1), np.nan)  # its methods would show zeros

    caught, _, _ = loaded_state_error(change)
    assert (type(caught), caught.rule) == (FormatError, "optimizer.state")
    assert (caught.key, caught.actual) == (KEY, f"nan at flat index {2 * WIDTH + 1}")

    layer = layer_of(np.ones((ROWS, WIDTH)))
    optimizer = Adam(layer.parameters(), 0.1)
    train(layer, optimizer, random_steps(ROWS, WIDTH, TOKENS, 2, seed=5))
    state = optimizer.state_dict()
    expected = state[KEY] + 1.0
    state[KEY] = expected.copy().view(ShowsOtherValues)
    optimizer.load_state_dict(state)
    assert optimizer.state_dict()[KEY].tobytes() == expected.tobytes()


def test_a_masked_state_array_is_refused() -> None:
    caught, _, _ = loaded_state_error(
        lambda state: state.update({KEY: np.ma.masked_invalid(state[KEY])})
    )
    assert (type(caught), caught.rule) == (FormatError, "optimizer.state")
    assert (caught.key, caught.requirement, caught.actual) == (
        KEY,
        "be a NumPy array",
        "MaskedArray",
    )
