"""``load_state`` refuses a file that does not fit the optimizer with a typed error, and then
nothing has changed: no state array, step count, parameter value, revision or gradient."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from llm_from_scratch.errors import FileAccessError, FormatError, LlmError, OptionError
from llm_from_scratch.nn import save_parameters
from llm_from_scratch.optim import SGD, Adagrad, Adam, AdamW, Optimizer, load_state, save_state

from checkpoint_support import safetensors_file
from checks import raises_rule
from state_file_support import SIZES, Model, new_model, snapshot, steps_for, train

ROWS, WIDTH, _ = SIZES["numpy"]
TABLE = "token_embedding.weight"
EXP_AVG, EXP_AVG_SQ = f"{TABLE}.exp_avg", f"{TABLE}.exp_avg_sq"


def adam(parameters: Any, **changes: Any) -> Adam:
    """The optimizer of every saved file: Adam with weight decay; ``changes`` override."""
    options: dict[str, Any] = {"learning_rate": 0.01, "weight_decay": 0.1, **changes}
    return Adam(parameters, **options)


@dataclass
class Saved:
    """A trained Adam's state file, its tensors and metadata as safetensors reads them."""

    path: Path
    tensors: dict[str, np.ndarray]
    metadata: dict[str, str]

    def rewritten(
        self,
        change: Callable[[dict[str, np.ndarray], dict[str, str]], object],
        name: str = "changed.safetensors",
    ) -> Path:
        """A copy written by the safetensors package after ``change`` edits its tensors and
        metadata (an empty metadata is left out of the file)."""
        tensors = {key: array.copy() for key, array in self.tensors.items()}
        metadata = dict(self.metadata)
        change(tensors, metadata)
        path = self.path.with_name(name)
        save_file(tensors, str(path), metadata=metadata or None)
        return path


@pytest.fixture
def saved(tmp_path: Path) -> Saved:
    model = new_model("numpy", "float64")
    optimizer = adam(model.parameters())
    train(model, optimizer, steps_for("numpy", "float64", 3), "row_sparse")
    path = tmp_path / "adam.safetensors"
    save_state(path, optimizer)
    with safe_open(path, framework="np") as opened:
        metadata = opened.metadata()
    return Saved(path, load_file(path), metadata)


def target(factory: Callable[[Any], Optimizer] = adam) -> tuple[Model, Optimizer]:
    """An optimizer two steps into another run, with a gradient stored: a partial load, or a
    load that touched the parameters, would show."""
    model = new_model("numpy", "float64", seed=11)
    optimizer = factory(model.parameters())
    train(model, optimizer, steps_for("numpy", "float64", 2, seed=12), "row_sparse")
    model.layer.forward(np.array([1, 2, 2]), (3,)).sum().backward()
    return model, optimizer


def refused(path: object, factory: Callable[[Any], Optimizer] = adam) -> BaseException:
    """The error ``load_state`` raises for ``path``, after checking that nothing changed."""
    model, optimizer = target(factory)
    before = snapshot(model, optimizer)
    with pytest.raises(LlmError) as caught:
        load_state(path, optimizer)  # type: ignore[arg-type]
    assert snapshot(model, optimizer) == before
    return caught.value


def fields(error: BaseException, *names: str) -> tuple[Any, ...]:
    return tuple(getattr(error, name) for name in names)


# The optimizer's kind and hyperparameters ------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "kind"),
    [
        (lambda parameters: AdamW(parameters, 0.01, weight_decay=0.1), "AdamW"),
        (lambda parameters: Adagrad(parameters, 0.01), "Adagrad"),
        (lambda parameters: SGD(parameters, 0.01), "SGD"),
    ],
)
def test_a_file_saved_from_another_kind_is_refused_naming_both(
    saved: Saved, factory: Callable[[Any], Optimizer], kind: str
) -> None:
    error = refused(saved.path, factory)
    assert (type(error), error.rule) == (FormatError, "optimizer.state-file")
    assert fields(error, "optimizer", "path", "key", "expected", "actual") == (
        kind,
        str(saved.path),
        "optimizer",
        kind,
        "Adam",
    )
    assert str(error) == (
        f"{kind} cannot load the state in {saved.path}: its __metadata__ 'optimizer' must be "
        f"{kind!r}, got 'Adam'"
    )


def test_an_adam_state_is_not_an_adamw_state_though_their_keys_agree(tmp_path: Path) -> None:
    model = new_model("numpy", "float64")
    path = tmp_path / "adamw.safetensors"
    save_state(path, AdamW(model.parameters(), 0.01, weight_decay=0.1))
    error = refused(path)
    assert (type(error), error.rule) == (FormatError, "optimizer.state-file")
    assert fields(error, "optimizer", "key", "expected", "actual") == (
        "Adam",
        "optimizer",
        "Adam",
        "AdamW",
    )
    # Adam(decoupled=True) is AdamW:
    load_state(path, Adam(model.parameters(), 0.01, weight_decay=0.1, decoupled=True))


@pytest.mark.parametrize(
    ("changes", "name", "expected", "actual"),
    [
        ({"learning_rate": 0.02}, "learning_rate", "0.02", "0.01"),
        ({"betas": (0.8, 0.999)}, "betas[0]", "0.8", "0.9"),
        ({"betas": (0.9, 0.99)}, "betas[1]", "0.99", "0.999"),
        ({"eps": 1e-6}, "eps", "1e-06", "1e-08"),
        ({"weight_decay": 0.0}, "weight_decay", "0.0", "0.1"),
    ],
)
def test_a_file_saved_with_another_hyperparameter_is_refused(
    saved: Saved, changes: dict[str, Any], name: str, expected: str, actual: str
) -> None:
    error = refused(saved.path, lambda parameters: adam(parameters, **changes))
    assert (type(error), error.rule) == (FormatError, "optimizer.state-file")
    assert fields(error, "optimizer", "path", "key", "expected", "actual") == (
        "Adam",
        str(saved.path),
        name,
        expected,
        actual,
    )


@pytest.mark.parametrize("key", ["optimizer", "learning_rate", "betas[1]", "weight_decay"])
def test_a_file_without_a_metadata_entry_is_refused(saved: Saved, key: str) -> None:
    error = refused(saved.rewritten(lambda tensors, metadata: metadata.pop(key)))
    assert (type(error), error.rule) == (FormatError, "optimizer.state-file")
    assert fields(error, "optimizer", "key", "actual") == ("Adam", key, None)


def test_files_without_metadata_are_refused_as_not_state_files(
    saved: Saved, tmp_path: Path
) -> None:
    bare = saved.rewritten(lambda tensors, metadata: metadata.clear())
    model = new_model("numpy", "float64")
    parameters = tmp_path / "model.safetensors"
    save_parameters(parameters, model.named_parameters(), metadata={"steps": "3"})
    for path in (bare, parameters):
        error = refused(path)
        assert (type(error), error.rule) == (FormatError, "optimizer.state-file")
        assert fields(error, "path", "key", "actual") == (str(path), "optimizer", None)


def test_extra_metadata_entries_are_ignored(saved: Saved) -> None:
    path = saved.rewritten(lambda tensors, metadata: metadata.update({"format": "np", "run": "7"}))
    _, optimizer = target()
    load_state(path, optimizer)
    assert optimizer.step_count == 3


# The tensors ------------------------------------------------------------------------------------


def changed_array(key: str, make: Callable[[np.ndarray], np.ndarray]) -> Callable[..., object]:
    return lambda tensors, metadata: tensors.update({key: make(tensors[key])})


def with_value(key: str, index: tuple[int, ...], value: float) -> Callable[..., object]:
    def change(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
        tensors[key][index] = value

    return change


MISSING = "be given (this optimizer keeps it)"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda tensors, metadata: tensors.pop(EXP_AVG_SQ), (EXP_AVG_SQ, MISSING, "none")),
        (lambda tensors, metadata: tensors.pop("step"), ("step", MISSING, "none")),
        (
            lambda tensors, metadata: tensors.update({f"{TABLE}.sum": tensors[EXP_AVG_SQ]}),
            (f"{TABLE}.sum", "be a state of this optimizer", "an unknown key"),
        ),
        (
            changed_array(EXP_AVG, lambda array: array[:-1]),
            (EXP_AVG, f"have shape [{ROWS}, {WIDTH}]", (ROWS - 1, WIDTH)),
        ),
        (
            changed_array("1.exp_avg", lambda array: array.reshape(1, 3)),
            ("1.exp_avg", "have shape [3]", (1, 3)),
        ),
        (
            changed_array("step", lambda array: array.reshape(1)),
            ("step", "have shape []", (1,)),
        ),
        (
            changed_array(EXP_AVG, lambda array: array.astype(np.float32)),
            (EXP_AVG, "have dtype float64", "float32"),
        ),
        (
            changed_array("step", lambda array: array.astype(np.int32)),
            ("step", "have dtype int64", "int32"),
        ),
        (
            changed_array("step", lambda array: array.astype(np.float64)),
            ("step", "have dtype int64", "float64"),
        ),
        (
            with_value(EXP_AVG, (2, 1), np.nan),
            (EXP_AVG, "be finite", f"nan at flat index {2 * WIDTH + 1}"),
        ),
        (
            with_value(EXP_AVG_SQ, (0, 3), -1e-12),
            (EXP_AVG_SQ, "be finite and at least zero", "-1e-12 at flat index 3"),
        ),
        (
            changed_array("step", lambda array: np.array(-2, dtype=np.int64)),
            ("step", "be an integer at least zero", "-2 at flat index 0"),
        ),
    ],
)
def test_a_tensor_that_does_not_fit_is_the_state_error_load_state_dict_raises(
    saved: Saved, change: Callable[..., object], expected: tuple[str, str, object]
) -> None:
    path = saved.rewritten(change)
    caught = refused(path)
    assert (type(caught), caught.rule) == (FormatError, "optimizer.state")
    assert fields(caught, "optimizer", "key", "requirement", "actual") == ("Adam", *expected)

    # load_state_dict raises the same error for the same arrays.
    _, optimizer = target()
    with raises_rule(FormatError, "optimizer.state") as direct:
        optimizer.load_state_dict(load_file(path))
    assert str(direct.value) == str(caught)


def test_a_dtype_numpy_cannot_hold_is_named_by_its_code(saved: Saved, tmp_path: Path) -> None:
    tensors = dict(saved.tensors)
    tensors[EXP_AVG] = tensors[EXP_AVG].astype(np.float32).view(np.uint16)[:, ::2].copy()
    content = safetensors_file(list(tensors.items()), saved.metadata, codes={EXP_AVG: "BF16"})
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(content)
    error = refused(path)
    assert (type(error), error.rule) == (FormatError, "optimizer.state")
    assert fields(error, "key", "requirement", "actual") == (EXP_AVG, "have dtype float64", "BF16")


# Which error comes first ------------------------------------------------------------------------


def test_the_kind_is_checked_before_the_hyperparameters_and_the_tensors(saved: Saved) -> None:
    def change(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
        metadata.update({"optimizer": "AdamW", "learning_rate": "0.5"})
        del tensors["step"]

    error = refused(saved.rewritten(change))
    assert (type(error), error.rule) == (
        FormatError,
        "optimizer.state-file",
    ) and error.key == "optimizer"


def test_the_hyperparameters_are_checked_before_the_tensors(saved: Saved) -> None:
    def change(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
        metadata["eps"] = "0.5"
        del tensors["step"]

    error = refused(saved.rewritten(change))
    assert (type(error), error.rule) == (FormatError, "optimizer.state-file") and error.key == "eps"


def test_missing_keys_come_before_unknown_keys(saved: Saved) -> None:
    def change(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
        tensors["unknown"] = np.zeros(1)
        del tensors["1.exp_avg"]

    error = refused(saved.rewritten(change))
    assert fields(error, "key", "actual") == ("1.exp_avg", "none")


def test_every_shape_and_dtype_is_checked_from_the_header_before_any_value(saved: Saved) -> None:
    def change(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
        tensors[EXP_AVG][0, 0] = np.inf  # the first key's values
        tensors["step"] = tensors["step"].astype(np.int32)  # the last key's dtype

    error = refused(saved.rewritten(change))
    assert (type(error), error.rule) == (FormatError, "optimizer.state") and fields(
        error, "key", "actual"
    ) == ("step", "int32")


def test_the_file_format_is_checked_before_the_metadata(saved: Saved) -> None:
    content = saved.rewritten(lambda tensors, metadata: metadata.clear()).read_bytes()
    truncated = saved.path.with_name("truncated.safetensors")
    truncated.write_bytes(content[:-1])
    error = refused(truncated)
    assert (type(error), error.rule) == (FormatError, "checkpoint.data-size")


def test_the_path_is_checked_before_the_optimizer(saved: Saved) -> None:
    with raises_rule(OptionError, "checkpoint.argument"):
        load_state(5, "adam")  # type: ignore[arg-type]
    with raises_rule(OptionError, "checkpoint.argument"):
        save_state(b"adam.safetensors", "adam")  # type: ignore[arg-type]


@pytest.mark.parametrize("function", [save_state, load_state])
@pytest.mark.parametrize("given", [None, "adam", {"step": np.array(1)}])
def test_something_that_is_not_an_optimizer_is_refused(
    saved: Saved, function: Callable[[Path, Any], None], given: object
) -> None:
    before = saved.path.read_bytes()
    with raises_rule(OptionError, "optimizer.type") as caught:
        function(saved.path, given)
    assert fields(caught.value, "function", "value_type") == (
        function.__name__,
        type(given).__name__,
    )
    assert saved.path.read_bytes() == before
    assert os.listdir(saved.path.parent) == [saved.path.name]


# Files that are not whole safetensors files -------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 7, 8, 50])
def test_a_file_cut_before_its_data_is_refused_by_the_package(saved: Saved, keep: int) -> None:
    content = saved.path.read_bytes()
    path = saved.path.with_name("truncated.safetensors")
    path.write_bytes(content[:keep])
    error = refused(path)
    assert (type(error), error.rule) == (FormatError, "checkpoint.invalid")
    assert type(error.cause) is SafetensorError


@pytest.mark.parametrize("change", [-9, -1, 1])
def test_data_cut_short_or_followed_by_bytes_is_refused_with_both_lengths(
    saved: Saved, change: int
) -> None:
    content = saved.path.read_bytes()
    path = saved.path.with_name("changed.safetensors")
    path.write_bytes(content[:change] if change < 0 else content + bytes(change))
    error = refused(path)
    assert (type(error), error.rule) == (FormatError, "checkpoint.data-size")
    assert error.given - error.needed == change


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda content: content[:8] + b"[" + content[9:],
        lambda content: b"\xff" * 8 + content[8:],
        lambda content: b"PK\x03\x04 a zip archive, not a state file",
    ],
)
def test_a_corrupt_file_is_refused(saved: Saved, corrupt: Callable[[bytes], bytes]) -> None:
    path = saved.path.with_name("corrupt.safetensors")
    path.write_bytes(corrupt(saved.path.read_bytes()))
    error = refused(path)
    assert (type(error), error.rule) == (FormatError, "checkpoint.invalid")
    assert type(error.cause) is SafetensorError


def test_a_missing_file_or_a_folder_is_a_read_error(saved: Saved, tmp_path: Path) -> None:
    for path in (tmp_path / "missing.safetensors", tmp_path):
        error = refused(path)
        assert (type(error), error.rule) == (FileAccessError, "checkpoint.read")
        assert error.path == str(path)
