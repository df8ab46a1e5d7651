"""Shared fixtures: the chapter's 4x2 known table, and plain-loop references."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, settings

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

KNOWN_TABLE = (10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 40.0, 41.0)
GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def known_layer() -> Embedding:
    """The chapter's table ``[[10,11],[20,21],[30,31],[40,41]]`` named token_embedding.weight."""
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)


def plain_lookup(table: npt.NDArray[np.floating], ids: list[int], width: int) -> list[float]:
    """The lookup as a plain Python loop: row ``ids[p]`` copied to position ``p``."""
    out: list[float] = []
    for token_id in ids:
        for feature in range(width):
            out.append(float(table[token_id][feature]))
    return out


def plain_scatter(
    ids: list[int], upstream: npt.NDArray[np.floating], rows: int, width: int
) -> npt.NDArray[np.floating]:
    """The table gradient as a plain loop: ``g[ids[p]] += upstream[p]`` in flat order."""
    gradient = np.zeros((rows, width), dtype=upstream.dtype)
    flat = upstream.reshape(len(ids), width)
    for position, token_id in enumerate(ids):
        for feature in range(width):
            gradient[token_id, feature] += flat[position, feature]
    return gradient
