"""``llm-from-scratch bench small``: the chapter's lookup (4x2 table, IDs ``[[2, 1, 2]]``, one
thread) against NumPy's ``table[ids]`` and PyTorch's, taking turns, each ``CALLS`` times a sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from llm_from_scratch.bench import rounds
from llm_from_scratch.demos.ch18_token_embeddings.fixture import KNOWN_FIXTURE
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

CALLS: Final = 200
PAIRS: Final = (
    ("forward", "torch forward"),
    ("forward list", "torch forward"),
    ("fwd+bwd", "torch fwd+bwd"),
)
"""Ours over PyTorch's (below 1: ours is faster)."""


def _repeated(action: Callable[[], object]) -> rounds.Timed:
    def run() -> None:
        for _ in range(CALLS):
            action()

    return rounds.Timed(run)


def _ours() -> dict[str, rounds.Timed]:
    fixture = KNOWN_FIXTURE
    table = Tensor(fixture.table_shape, fixture.table_values)
    layer = Embedding.from_parameter(NamedParameter.from_tensor(fixture.table_name, table))
    ids = np.asarray(fixture.token_ids, dtype=np.int64).reshape(fixture.token_shape)
    nested = ids.tolist()
    seed = np.asarray(fixture.upstream_values, dtype=np.float64).reshape(fixture.upstream_shape)
    leaf, values = layer.table.tensor, table.numpy()

    def step() -> None:
        leaf.zero_grad()
        layer(ids).backward_with_seed(seed)

    return {
        "copy": _repeated(lambda: values[ids]),
        "forward": _repeated(lambda: layer(ids)),
        "forward list": _repeated(lambda: layer(nested)),
        "fwd+bwd": _repeated(step),
    }


def _torch() -> dict[str, rounds.Timed]:
    torch = rounds.imported_torch([])
    if torch is None:
        return {}
    torch.set_num_threads(1)
    fixture = KNOWN_FIXTURE
    layer: Any = torch.nn.Embedding(*fixture.table_shape).double()
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(fixture.table_values).reshape(fixture.table_shape))
    ids = torch.tensor(fixture.token_ids).reshape(fixture.token_shape)
    seed = torch.tensor(fixture.upstream_values, dtype=torch.float64)
    seed = seed.reshape(fixture.upstream_shape)

    def step() -> None:
        layer.zero_grad()
        layer(ids).backward(seed)

    return {"torch forward": _repeated(lambda: layer(ids)), "torch fwd+bwd": _repeated(step)}


def measure(repeats: int) -> dict[str, float]:
    """The median seconds of one call of each action (see the module docstring)."""
    medians = rounds.round_robin_medians({**_ours(), **_torch()}, repeats)
    return {name: seconds / CALLS for name, seconds in medians.items()}


def format_result(medians: dict[str, float]) -> str:
    """Each median in microseconds with its ratio to ``copy``, then ours over PyTorch's."""
    return rounds.lines(
        [
            f"the chapter's 4x2 table, IDs [[2, 1, 2]], one thread, {CALLS} calls a sample",
            *rounds.median_rows(medians, "us", "copy"),
            *(
                f"  our {ours} / {theirs} = {medians[ours] / medians[theirs]:.2f} "
                "(below 1: ours is faster)"
                for ours, theirs in PAIRS
                if theirs in medians
            ),
        ]
    )


def run(repeats: int) -> int:
    """Measure and print, ``repeats`` rounds."""
    cases = [("measuring the small lookup ({count} rounds)...", measure)]
    return rounds.run_cases(repeats, cases, lambda found: format_result(found[0]))
