"""Shared fixtures: the chapter's 4x2 known table and its upstream seed, and the Hypothesis
profiles."""

from __future__ import annotations

import os
from pathlib import Path

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
KNOWN_UPSTREAM = (1.0, 0.0, 0.0, 2.0, 3.0, 4.0)  # the seed of the lookup of [[2, 1, 2]]
GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def known_layer() -> Embedding:
    """The chapter's table ``[[10,11],[20,21],[30,31],[40,41]]`` named token_embedding.weight."""
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    return Embedding.from_parameter(table)
