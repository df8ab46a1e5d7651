"""The chunked finiteness check that saving and loading use."""

from __future__ import annotations

import numpy as np
import pytest

from llm_from_scratch.nn.checkpoint import CHUNK, first_non_finite


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("position", [0, 5, CHUNK - 1, CHUNK, 2 * CHUNK + 7])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_the_first_non_finite_value_is_found_at_its_flat_position(
    dtype: type, position: int, bad: float
) -> None:
    values = np.ones(2 * CHUNK + 10, dtype=dtype)
    values[position] = bad
    values[-1] = np.nan  # a later one is not reported
    found = first_non_finite(values.reshape(-1, 2))
    assert found is not None and found[0] == position
    assert found[1] == bad or (np.isnan(found[1]) and np.isnan(bad))


def test_finite_values_whose_sum_overflows_are_finite() -> None:
    values = np.full(CHUNK + 3, np.finfo(np.float32).max, dtype=np.float32)
    assert first_non_finite(values) is None
    values[-2] = np.inf
    assert first_non_finite(values) == (CHUNK + 1, float("inf"))


def test_empty_and_scalar_arrays() -> None:
    assert first_non_finite(np.zeros((0, 4))) is None
    assert first_non_finite(np.array(2.0)) is None
    assert first_non_finite(np.array(np.nan)) is not None
