"""Checkpoints round-trip through safetensors files, ours and the safetensors package's."""

from __future__ import annotations

import importlib
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.errors import FormatError, MismatchError, NonFiniteError
from llm_from_scratch.nn import (
    Embedding,
    NamedParameter,
    NamedParameters,
    SplitMix64,
    load_metadata,
    load_parameters,
    save_parameters,
)
from llm_from_scratch.tensor import Tensor

from checkpoint_support import KNOWN_TABLE_HEADER, file_with_header, safetensors_file, write_file
from checks import raises_rule
from conftest import KNOWN_TABLE, import_optional


def named(name: str, array: np.ndarray) -> NamedParameter:
    return NamedParameter.from_value(name, parameter_from_owned_array(np.array(array)))


def known_layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def random_table(rows: int, width: int, dtype: type, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, width)).astype(dtype)


# Our files -------------------------------------------------------------------------------------


def test_the_known_table_is_written_byte_for_byte_as_the_format_says(tmp_path: Path) -> None:
    path = tmp_path / "known.safetensors"
    save_parameters(path, known_layer().parameters())
    padded = KNOWN_TABLE_HEADER + b" " * (-(8 + len(KNOWN_TABLE_HEADER)) % 8)
    expected = struct.pack("<Q", len(padded)) + padded + struct.pack("<8d", *KNOWN_TABLE)
    assert path.read_bytes() == expected
    assert (8 + len(padded)) % 8 == 0


def test_our_file_read_by_safetensors_numpy_equals_what_we_saved(tmp_path: Path) -> None:
    table = named("token_embedding.weight", random_table(50, 8, np.float32))
    bias = named("output.bias", np.linspace(-1.0, 1.0, 7))
    path = tmp_path / "model.safetensors"
    save_parameters(path, [table, bias], metadata={"course": "chapter 18", "note": "é"})
    read = load_file(path)
    assert sorted(read) == ["output.bias", "token_embedding.weight"]
    for parameter in (table, bias):
        array = read[parameter.name]
        assert array.dtype == parameter.tensor.dtype and array.shape == parameter.tensor.shape
        assert array.tobytes() == parameter.tensor.numpy().tobytes()
    with safe_open(path, framework="np") as opened:
        assert opened.metadata() == {"course": "chapter 18", "note": "é"}


def test_saving_then_loading_gives_new_leaves_with_equal_values_dtypes_and_file_order(
    tmp_path: Path,
) -> None:
    saved = [
        named("a.weight", random_table(3, 4, np.float32, seed=1)),
        named("b.weight", random_table(2, 2, np.float64, seed=2)),
        named("c.bias", np.array([0.5, -0.25], dtype=np.float32)),
        named("d.scale", np.array(3.0)),
    ]
    path = tmp_path / "model.safetensors"
    save_parameters(path, saved)
    loaded = load_parameters(path)
    # float64 tensors first, then float32 ones, each in the order given
    assert loaded.names() == ("b.weight", "d.scale", "a.weight", "c.bias")
    for parameter in saved:
        leaf = loaded[parameter.name].tensor
        assert leaf.value.equals(parameter.tensor.value)
        assert leaf.kind == "parameter" and leaf.value_revision == 0
        assert not leaf.is_same_node(parameter.tensor)
        assert not leaf.gradient_snapshot().numpy().any()


def test_the_data_of_each_tensor_starts_at_a_multiple_of_its_item_size(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_parameters(
        path,
        [named("a", np.ones(3, dtype=np.float32)), named("b", np.ones(3)), named("c", np.ones(1))],
    )
    length = struct.unpack("<Q", path.read_bytes()[:8])[0]
    assert (8 + length) % 8 == 0
    with safe_open(path, framework="np") as opened:
        assert set(opened.keys()) == {"a", "b", "c"}
    assert load_parameters(path).names() == ("b", "c", "a")


def test_scalar_and_empty_parameters_round_trip(tmp_path: Path) -> None:
    saved = [named("scalar", np.array(2.5)), named("empty", np.zeros((0, 3), dtype=np.float32))]
    path = tmp_path / "edge.safetensors"
    save_parameters(path, saved)
    read = load_file(path)
    assert read["scalar"].shape == () and read["scalar"] == 2.5
    assert read["empty"].shape == (0, 3) and read["empty"].dtype == np.float32
    loaded = load_parameters(path)
    assert loaded["scalar"].tensor.shape == () and loaded["scalar"].tensor.numpy() == 2.5
    assert loaded["empty"].tensor.shape == (0, 3)


def test_an_empty_collection_is_a_valid_file_without_tensors(tmp_path: Path) -> None:
    path = tmp_path / "empty.safetensors"
    save_parameters(path, NamedParameters([]), metadata={"k": "v"})
    assert load_file(path) == {}
    assert len(load_parameters(path)) == 0
    assert load_metadata(path) == {"k": "v"}


def test_save_accepts_a_collection_a_list_or_a_generator_and_str_or_path_like_paths(
    tmp_path: Path,
) -> None:
    layer = known_layer()
    for index, parameters in enumerate(
        (layer.parameters(), [layer.table], (p for p in [layer.table]))
    ):
        path = tmp_path / f"model{index}.safetensors"
        save_parameters(str(path) if index % 2 else path, parameters)
        assert load_parameters(path)["token_embedding.weight"].tensor.value.equals(
            layer.table.tensor.value
        )


def test_a_loaded_table_gives_the_same_lookups_and_trains_like_the_saved_one(
    tmp_path: Path,
) -> None:
    layer = Embedding.new("token_embedding.weight", 40, 6, SplitMix64.from_seed(18))
    path = tmp_path / "table.safetensors"
    save_parameters(path, layer.parameters())
    twin = Embedding.from_parameter(load_parameters(path)["token_embedding.weight"])
    ids = [[3, 39, 3], [0, 17, 5]]
    assert twin(ids).numpy().tobytes() == layer(ids).numpy().tobytes()
    seed = np.arange(36, dtype=np.float64).reshape(2, 3, 6)
    twin(ids).backward_with_seed(seed)
    layer(ids).backward_with_seed(seed)
    assert twin.table.tensor.gradient.equals(layer.table.tensor.gradient)


def test_metadata_is_written_and_read_back_in_the_order_given(tmp_path: Path) -> None:
    # The package's own metadata() comes back in hash order, another in each process.
    metadata = {key: str(position) for position, key in enumerate("hgfedcba")}
    path = tmp_path / "model.safetensors"
    save_parameters(path, known_layer().parameters(), metadata=metadata)
    assert list(load_metadata(path).items()) == list(metadata.items())
    with safe_open(path, framework="np") as opened:
        assert opened.metadata() == metadata


def test_metadata_is_read_back_and_is_empty_when_absent(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_parameters(path, known_layer().parameters(), metadata={"vocabulary": "4 rows"})
    assert load_metadata(path) == {"vocabulary": "4 rows"}
    save_parameters(path, known_layer().parameters())
    assert load_metadata(path) == {}


def test_a_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    umask = os.umask(0o022)
    try:
        save_parameters(path, known_layer().parameters())
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644


# Files written by the safetensors package ------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_file_from_safetensors_numpy_loads_and_gives_bit_identical_lookups(
    tmp_path: Path, dtype: type
) -> None:
    table = random_table(97, 12, dtype, seed=5)
    path = tmp_path / "numpy.safetensors"
    save_file({"token_embedding.weight": table, "lm_head.bias": table[0].copy()}, path)
    loaded = load_parameters(path)
    assert set(loaded.names()) == {"token_embedding.weight", "lm_head.bias"}
    layer = Embedding.from_parameter(loaded["token_embedding.weight"])
    assert layer.table.tensor.dtype == np.dtype(dtype)
    ids = np.random.default_rng(7).integers(0, 97, size=(4, 9))
    assert layer(ids).numpy().tobytes() == table[ids].tobytes()


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_a_torch_embedding_saved_by_safetensors_torch_gives_bit_identical_lookups(
    tmp_path: Path, dtype_name: str
) -> None:
    torch = import_optional("torch")
    safetensors_torch = importlib.import_module("safetensors.torch")
    torch.manual_seed(0)
    module = torch.nn.Embedding(211, 16).to(getattr(torch, dtype_name))
    path = tmp_path / "torch.safetensors"
    safetensors_torch.save_file(module.state_dict(), path)
    loaded = load_parameters(path)
    assert loaded.names() == ("weight",)
    layer = Embedding.from_parameter(loaded["weight"])
    ids = torch.randint(0, 211, (3, 8))
    with torch.no_grad():
        expected = module(ids).numpy()
    assert layer(ids.numpy()).numpy().tobytes() == expected.tobytes()


def test_a_torch_bfloat16_table_loads_exactly_with_an_explicit_float32_conversion(
    tmp_path: Path,
) -> None:
    torch = import_optional("torch")
    safetensors_torch = importlib.import_module("safetensors.torch")
    torch.manual_seed(1)
    for dtype in (torch.bfloat16, torch.float16):
        weight = torch.randn(64, 8).to(dtype)
        path = tmp_path / "half.safetensors"
        safetensors_torch.save_file({"token_embedding.weight": weight}, path)
        loaded = load_parameters(path, dtype=np.float32)["token_embedding.weight"]
        assert loaded.tensor.numpy().tobytes() == weight.float().numpy().tobytes()


def test_our_file_loads_in_torch_with_the_same_values(tmp_path: Path) -> None:
    torch = import_optional("torch")
    safetensors_torch = importlib.import_module("safetensors.torch")
    layer = Embedding.new("token_embedding.weight", 30, 4, SplitMix64.from_seed(3), np.float32)
    path = tmp_path / "ours.safetensors"
    save_parameters(path, layer.parameters())
    weight = safetensors_torch.load_file(path)["token_embedding.weight"]
    assert weight.dtype == torch.float32
    assert weight.numpy().tobytes() == layer.table.tensor.numpy().tobytes()


# Half-precision conversions --------------------------------------------------------------------


def all_finite_half_bit_patterns() -> np.ndarray:
    bits = np.arange(2**16, dtype=np.uint16)
    return bits[np.isfinite(bits.view(np.float16))]


@pytest.mark.parametrize("target", [np.float32, np.float64])
def test_every_finite_float16_converts_exactly(tmp_path: Path, target: type) -> None:
    halves = all_finite_half_bit_patterns().view(np.float16)
    path = write_file(tmp_path, safetensors_file([("half", halves)]))
    loaded = load_parameters(path, dtype=target)["half"].tensor.numpy()
    assert loaded.dtype == np.dtype(target)
    assert loaded.tobytes() == halves.astype(target).tobytes()


@pytest.mark.parametrize("target", [np.float32, np.float64])
def test_every_finite_bfloat16_converts_exactly_by_shifting_its_bits(
    tmp_path: Path, target: type
) -> None:
    bits = np.arange(2**16, dtype=np.uint16)
    # Independent reference: the float32 whose top 16 bits are the bfloat16, via struct.
    reference = np.array(
        [struct.unpack("<f", struct.pack("<I", int(b) << 16))[0] for b in bits.tolist()]
    )
    finite = np.isfinite(reference)
    path = write_file(
        tmp_path, safetensors_file([("brain", bits[finite])], codes={"brain": "BF16"})
    )
    loaded = load_parameters(path, dtype=target)["brain"].tensor.numpy()
    assert loaded.dtype == np.dtype(target)
    assert np.array_equal(loaded, reference[finite].astype(target))
    assert np.array_equal(np.signbit(loaded), np.signbit(reference[finite]))  # -0.0 stays


def test_a_half_conversion_longer_than_one_chunk_is_exact(tmp_path: Path) -> None:
    halves = np.random.default_rng(3).standard_normal(2**20 + 77).astype(np.float16)
    path = write_file(tmp_path, safetensors_file([("long", halves)]))
    loaded = load_parameters(path, dtype=np.float64)["long"].tensor.numpy()
    assert loaded.tobytes() == halves.astype(np.float64).tobytes()


@pytest.mark.parametrize("code", ["F16", "BF16"])
def test_half_tensors_need_an_explicit_dtype(tmp_path: Path, code: str) -> None:
    content = safetensors_file([("w", np.ones(2, dtype=np.uint16))], codes={"w": code})
    path = write_file(tmp_path, content)
    with raises_rule(FormatError, "checkpoint.tensor-dtype") as caught:
        load_parameters(path)
    error = caught.value
    assert (error.path, error.name, error.dtype) == (str(path), "w", code)
    assert error.requirement == "pass dtype=numpy.float32 or numpy.float64 to convert it"


def test_a_half_infinity_is_a_non_finite_value_at_its_flat_position(tmp_path: Path) -> None:
    halves = np.array([[1.0, 2.0], [np.inf, 3.0]], dtype=np.float16)
    path = write_file(tmp_path, safetensors_file([("w", halves)]))
    with raises_rule(NonFiniteError, "checkpoint.non-finite") as caught:
        load_parameters(path, dtype=np.float32)
    error = caught.value
    assert (error.name, error.position, error.value) == ("w", 2, float("inf"))


def test_dtype_converts_float32_and_float64_tensors_too(tmp_path: Path) -> None:
    table = random_table(5, 3, np.float32)
    path = write_file(tmp_path, safetensors_file([("w", table)]))
    widened = load_parameters(path, dtype=np.float64)["w"].tensor.numpy()
    assert widened.dtype == np.float64 and np.array_equal(widened, table.astype(np.float64))
    big = np.array([1.0, 1e300])
    path = write_file(tmp_path, safetensors_file([("w", big)]), name="big.safetensors")
    with raises_rule(NonFiniteError, "checkpoint.non-finite") as caught:
        load_parameters(path, dtype=np.float32)
    assert (caught.value.position, caught.value.value) == (1, float("inf"))


# Loading one table out of a model file ----------------------------------------------------------


def model_file(tmp_path: Path) -> Path:
    """A file shaped like a sentence-transformer checkpoint: integer position IDs, an uppercase
    key, and the word-embedding table (laid out as the safetensors package does: wide first)."""
    table = random_table(30, 4, np.float32, seed=9)
    content = safetensors_file(
        [
            ("embeddings.position_ids", np.arange(8, dtype=np.int64).reshape(1, 8)),
            ("embeddings.LayerNorm.weight", np.ones(4, dtype=np.float32)),
            ("embeddings.word_embeddings.weight", table),
        ]
    )
    return write_file(tmp_path, content)


def test_names_loads_one_table_from_a_file_with_integer_tensors(tmp_path: Path) -> None:
    path = model_file(tmp_path)
    loaded = load_parameters(path, names=["embeddings.word_embeddings.weight"])
    assert loaded.names() == ("embeddings.word_embeddings.weight",)
    assert np.array_equal(
        loaded["embeddings.word_embeddings.weight"].tensor.numpy(),
        load_file(path)["embeddings.word_embeddings.weight"],
    )


def test_without_names_an_integer_tensor_is_refused_by_name(tmp_path: Path) -> None:
    path = model_file(tmp_path)
    with raises_rule(FormatError, "checkpoint.tensor-dtype") as caught:
        load_parameters(path)
    error = caught.value
    assert (error.path, error.name, error.dtype) == (str(path), "embeddings.position_ids", "I64")


def test_every_name_the_file_lacks_is_listed_in_the_order_asked(tmp_path: Path) -> None:
    path = model_file(tmp_path)
    asked = ["embeddings.word_embeddings.weight", "z.weight", "a.bias", "z.weight"]
    with raises_rule(MismatchError, "checkpoint.names") as caught:
        load_parameters(path, names=asked)
    error = caught.value
    assert (error.path, error.missing) == (str(path), ("z.weight", "a.bias"))
    assert (
        str(error)
        == f"checkpoint {path} lacks tensors that names= asks for: ['z.weight', 'a.bias']"
    )


def test_names_keep_file_order_and_ignore_repeats(tmp_path: Path) -> None:
    path = write_file(
        tmp_path,
        safetensors_file([("b", np.ones(1)), ("a", np.zeros(1)), ("c", np.ones(2))]),
    )
    assert load_parameters(path, names=("c", "b", "c")).names() == ("b", "c")
    assert load_parameters(path, names=[]).names() == ()


def test_unpadded_headers_and_headers_with_unknown_fields_are_read(tmp_path: Path) -> None:
    header = {
        "w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16], "note": "extra field"},
    }
    content = file_with_header(header, struct.pack("<2d", 1.5, -2.0), pad=False)
    loaded = load_parameters(write_file(tmp_path, content))
    assert loaded["w"].tensor.numpy().tolist() == [1.5, -2.0]
