from __future__ import annotations

import copy

import numpy as np
import pytest

from llm_from_scratch.errors import TableError
from llm_from_scratch.nn.init import NamedParameter, SplitMix64, validate_parameter_name
from llm_from_scratch.tensor import Tensor

from checks import raises_rule
from reference import SplitMix64Reference, xavier_table

MASK = 2**64 - 1


def test_splitmix64_from_seed_zero_matches_the_published_first_output() -> None:
    assert SplitMix64.from_seed(0).next_u64() == 0xE220A8397B1DCDAF


@pytest.mark.parametrize("seed", [0, 1, 18, 2**63, MASK])
def test_splitmix64_matches_an_independent_reference(seed: int) -> None:
    rng, reference = SplitMix64.from_seed(seed), SplitMix64Reference(seed)
    assert [rng.next_u64() for _ in range(5)] == [reference.next_u64() for _ in range(5)]


def test_next_unit_f64_uses_the_top_53_bits() -> None:
    rng = SplitMix64.from_seed(18)
    expected = (SplitMix64Reference(18).next_u64() >> 11) * 2.0**-53
    value = rng.next_unit_f64()
    assert value == expected and 0.0 <= value < 1.0


def test_copies_and_equal_states_produce_the_same_stream() -> None:
    rng = SplitMix64.from_seed(7)
    rng.next_u64()
    twin = copy.copy(rng)
    assert twin is not rng and twin.state == rng.state
    assert [twin.next_u64() for _ in range(3)] == [rng.next_u64() for _ in range(3)]


@pytest.mark.parametrize("seed", [-1, 2**64, True, 1.5])
def test_seeds_outside_64_bits_are_rejected(seed: object) -> None:
    with raises_rule(TableError, "seed.range", seed=seed):
        SplitMix64.from_seed(seed)  # type: ignore[arg-type]


def test_xavier_values_follow_the_generator_in_row_major_order() -> None:
    rng = SplitMix64.from_seed(18)
    parameter = NamedParameter.xavier_uniform("w", 3, 5, rng)
    table, state = xavier_table(18, 3, 5, np.float64)
    assert parameter.tensor.numpy().tobytes() == table.tobytes()
    assert rng.state == state


def test_xavier_float32_rounds_the_float64_values() -> None:
    wide = NamedParameter.xavier_uniform("w", 4, 2, SplitMix64.from_seed(3))
    narrow = NamedParameter.xavier_uniform("w", 4, 2, SplitMix64.from_seed(3), np.float32)
    assert narrow.tensor.dtype == np.float32
    assert np.array_equal(narrow.tensor.numpy(), wide.tensor.numpy().astype(np.float32))


def test_xavier_rejects_zero_fan_in_before_zero_fan_out() -> None:
    with raises_rule(TableError, "fan.zero-in") as fan_in:
        NamedParameter.xavier_uniform("w", 0, 0, SplitMix64.from_seed(1))
    assert str(fan_in.value) == "fan-in must be greater than zero"
    with raises_rule(TableError, "fan.zero-out") as fan_out:
        NamedParameter.xavier_uniform("w", 1, 0, SplitMix64.from_seed(1))
    assert str(fan_out.value) == "fan-out must be greater than zero"


@pytest.mark.parametrize(
    ("name", "rule", "fields"),
    [
        ("", "name.empty", {}),
        (".weight", "name.segment", {"index": 0}),
        ("token..weight", "name.segment", {"index": 6}),
        ("weight.", "name.segment", {"index": 7}),
        ("Weight", "name.byte", {"index": 0, "byte": 0x57}),
        ("token-embedding", "name.byte", {"index": 5, "byte": 0x2D}),
        ("wé", "name.byte", {"index": 1, "byte": 0xC3}),
    ],
)
def test_names_are_rejected_at_their_first_bad_byte(
    name: str, rule: str, fields: dict[str, int]
) -> None:
    with raises_rule(TableError, rule, name=name, **fields):
        validate_parameter_name(name)


def test_name_messages_keep_the_contract_wording() -> None:
    with raises_rule(TableError, "name.byte") as caught:
        validate_parameter_name("a b")
    assert str(caught.value) == (
        "parameter name byte 1 must be lowercase ASCII, a digit, underscore, or dot; got 0x20"
    )
    with raises_rule(TableError, "name.segment") as segment:
        validate_parameter_name("a.")
    assert str(segment.value) == "parameter name has an empty dot-separated segment at byte 2"


def test_valid_names_pass() -> None:
    for name in ("token_embedding.weight", "a", "layer_0.attn.w_q"):
        assert validate_parameter_name(name) == name


def test_a_name_that_is_not_a_string_is_a_type_error() -> None:
    with raises_rule(TableError, "name.type", name_type="int"):
        validate_parameter_name(3)


@pytest.mark.parametrize(
    ("name", "fan_in", "fan_out", "rule"),
    [
        ("Bad", 4, 2, "name.byte"),
        ("", 0, 2, "name.empty"),
        ("w", 0, 2, "fan.zero-in"),
        ("w", 4, 0, "fan.zero-out"),
        ("w", -1, 2, "fan.value"),
        ("w", 4, True, "fan.value"),
        ("w", 2**40, 2**40, "table.build"),
    ],
)
def test_the_generator_is_unchanged_after_every_failing_constructor(
    name: str, fan_in: int, fan_out: int, rule: str
) -> None:
    rng = SplitMix64.from_seed(99)
    rng.next_u64()
    before = rng.state
    with raises_rule(TableError, rule):
        NamedParameter.xavier_uniform(name, fan_in, fan_out, rng)
    assert rng.state == before


def test_from_tensor_copies_the_values_into_a_new_leaf() -> None:
    source = np.array([1.0, 2.0])
    tensor = Tensor((1, 2), source)
    a = NamedParameter.from_tensor("w", tensor)
    b = NamedParameter.from_tensor("w", tensor)
    source[:] = -1.0
    assert a.tensor.kind == "parameter" and not a.tensor.is_same_node(b.tensor)
    assert a.tensor.value.flat_values() == [1.0, 2.0]


def test_named_parameter_fields_cannot_be_replaced() -> None:
    parameter = NamedParameter.from_tensor("w", Tensor((1,), [1.0]))
    with pytest.raises(AttributeError):
        parameter._name = "other"  # type: ignore[misc]
