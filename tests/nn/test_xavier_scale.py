"""``xavier_scale``: the one Xavier formula, shared with the Xavier-uniform initializer."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from llm_from_scratch.errors import TableError
from llm_from_scratch.nn import SplitMix64, XavierScale, xavier_scale
from llm_from_scratch.nn.init import xavier_uniform_array

from checks import raises_rule


@pytest.mark.parametrize(("fan_in", "fan_out"), [(4, 2), (1, 1), (50257, 768), (128256, 4096)])
def test_the_three_scales_follow_from_the_fans(fan_in: int, fan_out: int) -> None:
    scale = xavier_scale(fan_in, fan_out)
    assert scale.target_variance == 2.0 / (fan_in + fan_out)
    assert scale.standard_deviation == math.sqrt(2.0 / (fan_in + fan_out))
    assert scale.uniform_limit == math.sqrt(6.0 / (fan_in + fan_out))


def test_a_uniform_draw_within_the_limit_has_the_target_variance() -> None:
    scale = xavier_scale(4, 2)
    assert math.isclose(scale.uniform_limit**2 / 3.0, scale.target_variance, rel_tol=1e-15)


def test_the_known_table_fans_give_variance_one_third_and_limit_one() -> None:
    scale = xavier_scale(4, 2)
    assert (scale.fan_in, scale.fan_out) == (4, 2)
    assert scale.target_variance == 1.0 / 3.0 and scale.uniform_limit == 1.0


def test_the_initializer_draws_within_the_scale_limit_with_the_same_formula() -> None:
    scale = xavier_scale(64, 32)
    rng = SplitMix64.from_seed(18)
    draws = SplitMix64.from_seed(18).peek_unit_f64_block(64 * 32)
    table = xavier_uniform_array(64, 32, rng)
    assert np.array_equal(table.reshape(-1), scale.uniform_limit * (2.0 * draws - 1.0))


@pytest.mark.parametrize(
    ("fan_in", "fan_out", "rule", "fields"),
    [
        (0, 2, "fan.zero-in", {}),
        (2, 0, "fan.zero-out", {}),
        (-1, 2, "fan.value", {"which": "fan-in", "value": -1}),
        (2, 1.5, "fan.value", {"which": "fan-out", "value": 1.5}),
        (True, 2, "fan.value", {"which": "fan-in", "value": True}),
        (0, -1, "fan.value", {"which": "fan-out", "value": -1}),
    ],
)
def test_bad_fans_raise_the_initializer_errors_in_its_order(
    fan_in: object, fan_out: object, rule: str, fields: dict[str, object]
) -> None:
    for call in (xavier_scale, xavier_uniform_array):
        with raises_rule(TableError, rule, **fields):
            if call is xavier_scale:
                xavier_scale(fan_in, fan_out)  # type: ignore[arg-type]
            else:
                xavier_uniform_array(fan_in, fan_out, SplitMix64.from_seed(0))  # type: ignore[arg-type]


def test_numpy_integer_fans_become_ints_and_the_scale_is_frozen() -> None:
    scale = xavier_scale(np.int64(4), np.uint8(2))  # type: ignore[arg-type]
    assert type(scale.fan_in) is int and type(scale.fan_out) is int
    assert isinstance(scale, XavierScale)
    with pytest.raises(dataclasses.FrozenInstanceError):
        scale.fan_in = 8  # type: ignore[misc]
