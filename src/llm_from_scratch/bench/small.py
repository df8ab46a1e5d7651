"""``llm-from-scratch bench small``: one small lookup, the chapter's, against PyTorch's.

On the chapter's 4x2 table with the IDs ``[[2, 1, 2]]`` it times, interleaved in rounds (see
:func:`~llm_from_scratch.bench.embedding.round_robin_medians`), each action run ``CALLS`` times
per sample on one thread:

- ``copy``: NumPy's ``table[ids]``, the copy-once limit of a lookup;
- ``forward`` (an int64 array) and ``forward list`` (nested lists): ``layer(ids)``;
- ``fwd+bwd``: ``zero_grad()``, ``layer(ids)`` and ``backward_with_seed(seed)``;
- with PyTorch installed, ``torch forward`` (``nn.Embedding`` called on an int64 tensor) and
  ``torch fwd+bwd`` (``zero_grad()``, the call and ``backward(seed)``).

Measuring builds a dict of medians; :func:`format_result` only formats it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from llm_from_scratch.bench.embedding import Timed, round_robin_medians
from llm_from_scratch.demos.ch18_token_embeddings.fixture import KNOWN_FIXTURE
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

CALLS: Final = 200
PAIRS: Final = (("torch forward", "forward"), ("torch fwd+bwd", "fwd+bwd"))


def _repeated(action: Callable[[], object]) -> Timed:
    def run() -> None:
        for _ in range(CALLS):
            action()

    return Timed(run)


def _ours() -> dict[str, Timed]:
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


def _torch() -> dict[str, Timed]:
    try:
        import torch
    except ImportError:
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
    medians = round_robin_medians({**_ours(), **_torch()}, repeats)
    return {name: seconds / CALLS for name, seconds in medians.items()}


def format_result(medians: dict[str, float]) -> str:
    """Each median in microseconds with its ratio to ``copy``, then ours over PyTorch's."""
    lines = [f"the chapter's 4x2 table, IDs [[2, 1, 2]], one thread, {CALLS} calls a sample"]
    for name, seconds in medians.items():
        ratio = seconds / medians["copy"]
        lines.append(f"  {name:<16}{seconds * 1e6:>9.2f} us  {ratio:>6.2f}x copy")
    for theirs, ours in PAIRS:
        if theirs in medians:
            ratio = medians[ours] / medians[theirs]
            lines.append(f"  our {ours} / {theirs} = {ratio:.2f} (below 1: ours is faster)")
            if ours == "forward":
                listed = medians["forward list"] / medians[theirs]
                lines.append(f"  our forward list / {theirs} = {listed:.2f}")
    return "\n".join(lines) + "\n"


def run(repeats: int | None = None) -> int:
    """Measure and print; ``repeats`` (rounds) defaults to 41."""
    count = 41 if repeats is None else repeats
    if count < 1:
        print("error: --repeats must be at least 1", file=sys.stderr)
        return 2
    print(f"measuring the small lookup ({count} rounds)...", file=sys.stderr, flush=True)
    sys.stdout.write(format_result(measure(count)))
    return 0
