"""``load_parameters(into=...)``: values written in place, all or nothing."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import llm_from_scratch.files as files_module
from llm_from_scratch.autograd.value import update_leaves_in_place
from llm_from_scratch.errors import (
    FileAccessError,
    FormatError,
    MismatchError,
    NonFiniteError,
    TapeError,
)
from llm_from_scratch.nn import (
    Embedding,
    NamedParameter,
    NamedParameters,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.tensor import Tensor

from checkpoint_support import safetensors_file, write_file
from checks import raises_rule
from conftest import KNOWN_TABLE, import_optional

NEW_TABLE = np.arange(8, dtype=np.float64).reshape(4, 2) / 4.0


def trained_layer() -> Embedding:
    """The known table with a stored row-sparse gradient (rows 1 and 2)."""
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    layer([[2, 1, 2]]).backward_with_seed(np.array([[[1, 0], [0, 2], [3, 4]]], dtype=float))
    return layer


def state(layer: Embedding) -> tuple[bytes, list[list[float]], int]:
    leaf = layer.table.tensor
    return leaf.numpy().tobytes(), leaf.gradient.tolist(), leaf.value_revision


def test_into_writes_the_values_into_the_same_leaf_bumps_its_revision_and_keeps_the_gradient(
    tmp_path: Path,
) -> None:
    layer = trained_layer()
    before = state(layer)
    path = write_file(tmp_path, safetensors_file([("token_embedding.weight", NEW_TABLE)]))
    returned = load_parameters(path, into=layer.parameters())
    assert returned["token_embedding.weight"] is layer.table
    leaf = layer.table.tensor
    assert leaf.numpy().tolist() == NEW_TABLE.tolist()
    assert leaf.gradient.tolist() == before[1]
    assert leaf.value_revision == before[2] + 1


def test_a_graph_recorded_before_the_load_refuses_to_run_backward(tmp_path: Path) -> None:
    layer = trained_layer()
    output = layer([[3, 0]])
    path = write_file(tmp_path, safetensors_file([("token_embedding.weight", NEW_TABLE)]))
    load_parameters(path, into=layer.parameters())
    with raises_rule(TapeError, "tape.stale-value"):
        output.backward_with_seed(np.ones((1, 2, 2)))
    fresh = layer([[3, 0]])
    assert fresh.numpy().tolist() == [[[1.5, 1.75], [0.0, 0.25]]]


def test_into_a_float32_table_from_a_bfloat16_file_with_an_explicit_dtype(tmp_path: Path) -> None:
    table = NamedParameter.from_tensor(
        "token_embedding.weight", Tensor((4, 2), KNOWN_TABLE, dtype=np.float32)
    )
    layer = Embedding.from_parameter(table)
    halves = (np.array(KNOWN_TABLE, dtype=np.float32).reshape(4, 2) / 8).view(np.uint32) >> 16
    content = safetensors_file(
        [("token_embedding.weight", halves.astype(np.uint16))],
        codes={"token_embedding.weight": "BF16"},
    )
    load_parameters(write_file(tmp_path, content), into=[layer.table], dtype=np.float32)
    assert layer.table.tensor.numpy().tolist() == (np.array(KNOWN_TABLE).reshape(4, 2) / 8).tolist()


def test_into_a_subset_with_names(tmp_path: Path) -> None:
    layer = trained_layer()
    content = safetensors_file(
        [("position_ids", np.arange(3)), ("token_embedding.weight", NEW_TABLE)]
    )
    path = write_file(tmp_path, content)
    load_parameters(path, into=layer.parameters(), names=layer.parameters().names())
    assert layer.table.tensor.numpy().tolist() == NEW_TABLE.tolist()


NAME = "token_embedding.weight"


@pytest.mark.parametrize(
    ("tensors", "missing", "unexpected", "differing"),
    [
        (
            [(NAME, np.zeros((2, 4)))],
            (),
            (),
            (f"{NAME}: shape [2, 4] in the file, [4, 2] in into=",),
        ),
        (
            [(NAME, NEW_TABLE.astype(np.float32))],
            (),
            (),
            (f"{NAME}: loads as float32, float64 in into=",),
        ),
        (
            [(NAME, np.zeros((2, 4), dtype=np.float32))],
            (),
            (),
            (
                f"{NAME}: shape [2, 4] in the file, [4, 2] in into=",
                f"{NAME}: loads as float32, float64 in into=",
            ),
        ),
        ([("output.weight", NEW_TABLE)], (NAME,), ("output.weight",), ()),
        ([(NAME, NEW_TABLE), ("output.bias", np.zeros(2))], (), ("output.bias",), ()),
        ([], (NAME,), (), ()),
    ],
)
def test_a_mismatch_is_reported_and_changes_nothing(
    tmp_path: Path,
    tensors: list[tuple[str, np.ndarray]],
    missing: tuple[str, ...],
    unexpected: tuple[str, ...],
    differing: tuple[str, ...],
) -> None:
    layer = trained_layer()
    before = state(layer)
    path = write_file(tmp_path, safetensors_file(tensors))
    with raises_rule(MismatchError, "checkpoint.into", path=str(path)) as caught:
        load_parameters(path, into=layer.parameters())
    error = caught.value
    assert (error.missing, error.unexpected, error.differing) == (missing, unexpected, differing)
    assert str(error) == (
        f"checkpoint {path} does not match into=: missing tensors {list(missing)} (parameters "
        f"of into= that no tensor to load names), unexpected tensors {list(unexpected)} (no "
        f"parameter of into= has their names), shapes or dtypes that differ {list(differing)}"
    )
    assert state(layer) == before


def test_a_mismatch_lists_every_missing_unexpected_and_differing_name_as_pytorch_does(
    tmp_path: Path,
) -> None:
    torch = import_optional("torch")
    names = ("a.weight", "b.weight", "c.weight", "d.weight")
    parameters = [NamedParameter.from_tensor(name, Tensor((2, 2), [1, 2, 3, 4])) for name in names]
    before = snapshot(*parameters)
    tensors = [
        ("x.weight", np.zeros(1)),  # unexpected
        ("c.weight", np.zeros((3, 2))),  # another shape
        ("a.weight", np.zeros((2, 2))),
        ("y.weight", np.zeros(1)),  # unexpected
    ]  # b.weight and d.weight are missing
    path = write_file(tmp_path, safetensors_file(tensors))
    with raises_rule(MismatchError, "checkpoint.into") as caught:
        load_parameters(path, into=parameters)
    error = caught.value

    module = torch.nn.ParameterDict(
        {name.split(".")[0]: torch.nn.Parameter(torch.zeros(2, 2)) for name in names}
    )
    state_dict = {key.replace(".weight", ""): torch.from_numpy(value) for key, value in tensors}
    result = module.load_state_dict(
        {key: value for key, value in state_dict.items() if key != "c"}, strict=False
    )
    with pytest.raises(RuntimeError, match="size mismatch for c"):
        module.load_state_dict(state_dict)
    assert [f"{key}.weight" for key in result.missing_keys if key != "c"] == list(error.missing)
    assert [f"{key}.weight" for key in result.unexpected_keys] == list(error.unexpected)
    assert error.missing == ("b.weight", "d.weight")
    assert error.unexpected == ("x.weight", "y.weight")  # in file order
    assert error.differing == ("c.weight: shape [3, 2] in the file, [2, 2] in into=",)
    assert snapshot(*parameters) == before


def two_tables() -> tuple[NamedParameter, NamedParameter]:
    first = NamedParameter.from_tensor("a.weight", Tensor((2, 2), [1, 2, 3, 4]))
    second = NamedParameter.from_tensor("b.weight", Tensor((2, 2), [5, 6, 7, 8]))
    return first, second


def snapshot(*parameters: NamedParameter) -> list[tuple[bytes, int]]:
    return [(p.tensor.numpy().tobytes(), p.tensor.value_revision) for p in parameters]


def test_a_non_finite_value_in_the_last_tensor_leaves_the_first_unchanged(
    tmp_path: Path,
) -> None:
    first, second = two_tables()
    before = snapshot(first, second)
    content = safetensors_file(
        [("a.weight", np.zeros((2, 2))), ("b.weight", np.array([[0.0, 1.0], [np.nan, 2.0]]))]
    )
    with raises_rule(NonFiniteError, "checkpoint.non-finite") as caught:
        load_parameters(write_file(tmp_path, content), into=[first, second])
    assert (caught.value.name, caught.value.position) == ("b.weight", 2)
    assert snapshot(first, second) == before


class FileFailingAtRead(io.FileIO):
    """A file whose ``failing_read``-th ``readinto`` (counting from 1) ends early or fails."""

    failing_read = 2  # the first tensor, then the second (the header is read by position)
    failure: OSError | None = None  # None: the file ends there

    def __init__(self, path: str, mode: str = "rb", buffering: int = 0) -> None:
        super().__init__(path, mode)
        self.reads = 0

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self.reads += 1
        if self.reads == self.failing_read:
            if self.failure is not None:
                raise self.failure
            return 0
        return super().readinto(buffer) or 0


def test_a_read_failure_after_the_first_tensor_leaves_every_leaf_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two_tables()
    before = snapshot(first, second)
    path = tmp_path / "model.safetensors"
    save_parameters(path, [first, second])
    monkeypatch.setattr(FileFailingAtRead, "failure", OSError(5, "Input/output error"))
    monkeypatch.setattr(files_module, "open", FileFailingAtRead, raising=False)
    with raises_rule(FileAccessError, "checkpoint.read") as caught:
        load_parameters(path, into=[first, second])
    assert caught.value.cause.errno == 5 and caught.value.path == str(path)
    assert snapshot(first, second) == before


def test_a_file_that_ends_early_while_it_is_read_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two_tables()
    before = snapshot(first, second)
    path = tmp_path / "model.safetensors"
    save_parameters(path, [first, second])
    data_start = path.stat().st_size - 64
    monkeypatch.setattr(files_module, "open", FileFailingAtRead, raising=False)
    with raises_rule(FormatError, "checkpoint.invalid") as caught:
        load_parameters(path, into=[first, second])
    error = caught.value
    assert type(error.cause) is EOFError and error.path == str(path)
    assert str(error.cause) == f"the file ends at byte {data_start + 32}, not {data_start + 64}"
    assert snapshot(first, second) == before


JOIN_SECONDS = 60.0  # a guard against a hang, not a measurement


class AbandonedUpdateError(Exception):
    """Raised by a planned update to give its lock back without writing anything."""


def held_lock(
    parameter: NamedParameter, holding: threading.Event, go: threading.Event
) -> Callable[[], None]:
    """An in-place update that holds ``parameter``'s lock until ``go``, then writes nothing."""

    def planned() -> list[Callable[[Any], None]]:
        holding.set()
        go.wait(JOIN_SECONDS)
        raise AbandonedUpdateError()

    def run() -> None:
        with contextlib.suppress(AbandonedUpdateError):
            update_leaves_in_place([parameter.tensor], planned)

    return run


def test_a_load_into_two_parameters_writes_both_in_one_step_holding_both_locks(
    tmp_path: Path,
) -> None:
    first, second = two_tables()
    before = snapshot(first, second)
    content = safetensors_file([("a.weight", np.zeros((2, 2))), ("b.weight", np.ones((2, 2)))])
    path = write_file(tmp_path, content)
    holding, go = threading.Event(), threading.Event()
    holder = threading.Thread(target=held_lock(second, holding, go))
    holder.start()
    assert holding.wait(JOIN_SECONDS)
    loaded: list[NamedParameters] = []
    loader = threading.Thread(
        target=lambda: loaded.append(load_parameters(path, into=[first, second]))
    )
    loader.start()
    loader.join(1.0)
    assert loader.is_alive(), "the load finished while another step held the second parameter"
    assert snapshot(first, second) == before  # the first is not written before both are held
    go.set()
    holder.join(JOIN_SECONDS)
    loader.join(JOIN_SECONDS)
    assert len(loaded) == 1
    assert first.tensor.numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert second.tensor.numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert (first.tensor.value_revision, second.tensor.value_revision) == (1, 1)


def test_the_values_of_loaded_parameters_new_or_written_into_never_turn_writeable(
    tmp_path: Path,
) -> None:
    path = write_file(tmp_path, safetensors_file([("token_embedding.weight", NEW_TABLE)]))
    layer = trained_layer()
    loaded = load_parameters(path)["token_embedding.weight"].tensor
    written = load_parameters(path, into=layer.parameters())["token_embedding.weight"].tensor
    for leaf in (loaded, written):
        for array in (leaf.numpy(), leaf.value.numpy()):
            link: object = array
            while isinstance(link, np.ndarray):
                with pytest.raises(ValueError, match="WRITEABLE"):
                    link.flags.writeable = True
                link = link.base
        assert leaf.numpy().tolist() == NEW_TABLE.tolist()
