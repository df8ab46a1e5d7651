"""A layer built as ``nn.Embedding(V, d)`` is built: float32 from the seed 0, reproducibly;
``new`` takes an int seed (the course's SplitMix64 stream) or a NumPy Generator as well as a
SplitMix64, and either advances only when the layer is built."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import OptionError, TableError
from llm_from_scratch.nn import (
    Embedding,
    EmbeddingBag,
    SplitMix64,
)
from llm_from_scratch.nn.init import xavier_scale

from checks import raises_rule

LAYERS = [Embedding, EmbeddingBag]


@pytest.mark.parametrize("kind", LAYERS)
def test_the_class_called_with_sizes_is_new_with_float32_and_the_seed_0(kind: Any) -> None:
    layer = kind(1000, 64)
    course = kind.new("token_embedding.weight", 1000, 64, SplitMix64.from_seed(0), np.float32)
    assert (layer.vocabulary_size, layer.embedding_width) == (1000, 64)
    assert layer.table.name == "token_embedding.weight" and not layer.frozen
    assert layer.table.tensor.dtype == np.float32
    assert layer.table.tensor.value.equals(course.table.tensor.value)
    assert layer.table.tensor.value.equals(kind(1000, 64).table.tensor.value)
    assert not layer.table.tensor.is_same_node(kind(1000, 64).table.tensor)


def test_the_sizes_constructor_takes_the_options_dtype_generator_and_name() -> None:
    layer = Embedding(
        10, 4, padding_idx=0, max_norm=1.0, dtype=np.float64, rng=7, name="words.weight"
    )
    assert (layer.padding_idx, layer.max_norm, layer.table.name) == (0, 1.0, "words.weight")
    assert layer.table.tensor.dtype == np.float64
    assert layer.table.tensor.numpy()[0].tolist() == [0.0] * 4
    bags = EmbeddingBag(10, 4, mode="max", rng=np.random.default_rng(1))
    assert bags.mode == "max" and bags([[1, 2]]).shape == (1, 4)
    with raises_rule(OptionError, "option.value", name="padding_idx"):
        Embedding(10, 4, padding_idx=10)


def test_an_int_seed_is_the_course_stream_of_splitmix64_from_that_seed() -> None:
    by_seed = Embedding.new("token_embedding.weight", 4, 2, 18)
    by_generator = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
    assert by_seed.table.tensor.value.equals(by_generator.table.tensor.value)
    assert by_seed.table.tensor.dtype == np.float64  # new keeps the course's default


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_numpy_generator_draws_the_xavier_table_from_its_random_stream(dtype: Any) -> None:
    rng, twin = np.random.default_rng(3), np.random.default_rng(3)
    layer = Embedding.new("token_embedding.weight", 50, 6, rng, dtype)
    limit = xavier_scale(50, 6).uniform_limit
    expected = (limit * (2.0 * twin.random(300) - 1.0)).astype(dtype).reshape(50, 6)
    assert layer.table.tensor.numpy().tobytes() == expected.tobytes()
    assert rng.random() == twin.random()  # it advanced by exactly the table's draws


def test_a_failed_construction_leaves_a_numpy_generator_where_it_was() -> None:
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    for call in (
        lambda: Embedding.new("token_embedding.weight", 4, 2, rng, np.int32),
        lambda: Embedding.new("token_embedding.weight", 2**31, 2**31, rng),
        lambda: Embedding(4, 2, rng=rng, padding_idx=9),
    ):
        with pytest.raises((TableError, OptionError)):
            call()
        assert rng.bit_generator.state == state


@pytest.mark.parametrize(
    ("rng", "cause"),
    [
        (-1, "seed.range"),
        (2**64, "seed.range"),
        (True, "seed.range"),
        (1.5, "init.generator-type"),
        (np.random.RandomState(0), "init.generator-type"),
        (None, "init.generator-type"),
    ],
)
def test_what_is_no_generator_or_seed_is_refused_naming_what_is(rng: object, cause: str) -> None:
    with raises_rule(TableError, "table.initialization") as caught:
        Embedding(4, 2, rng=rng)  # type: ignore[arg-type]
    assert type(caught.value.__cause__) is TableError and caught.value.__cause__.rule == cause
    if cause == "init.generator-type":
        assert "numpy.random.Generator or an int seed" in str(caught.value)
