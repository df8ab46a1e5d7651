"""``llm-from-scratch bench embedding``, second part: ``EmbeddingBag(mode="sum")`` against
PyTorch's ``nn.EmbeddingBag``; PyTorch's dense actions and its sparse ones each run as a group
of their own (a dense step's ``[V, d]`` gradient slows whatever runs after it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.bench import rounds
from llm_from_scratch.bench.embedding import (
    DTYPES,
    FULL_SHAPES,
    LEARNING_RATE,
    QUICK_SHAPES,
    format_results,
    measure_case,
)
from llm_from_scratch.nn import EmbeddingBag, NamedParameter
from llm_from_scratch.optim import SGD

FULL_BAG_SHAPES: Final = ((50257, 768, 8192, 512),)
QUICK_BAG_SHAPES: Final = ((5000, 256, 2048, 128),)
COMPARISONS: Final = tuple(
    (f"torch bag {kind} {how}", f"bag {ours}")
    for kind, ours in (("fwd+bwd", "fwd+bwd"), ("step", "step"), ("step", "fused step"))
    for how in ("dense", "sparse")
)
"""Which PyTorch measurement is compared with which of ours (PyTorch time / our time)."""


@dataclass(frozen=True)
class BagCaseResult:
    """The medians (seconds) of one bag shape and dtype."""

    vocabulary_size: int
    embedding_width: int
    token_count: int
    bags: int
    dtype: str
    medians: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def ratio(self, name: str, baseline: str = "bag step") -> float:
        """``medians[name] / medians[baseline]``."""
        return self.medians[name] / self.medians[baseline]


def measure_bag_case(
    vocabulary_size: int, width: int, token_count: int, bags: int, dtype: str, repeats: int
) -> BagCaseResult:
    """Time one bag shape and dtype: ours, and PyTorch's beside it when installed."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocabulary_size, size=token_count, dtype=np.int64)
    offsets = np.arange(bags, dtype=np.int64) * (token_count // bags)
    upstream = rng.standard_normal((bags, width)).astype(dtype)
    values = rng.standard_normal((vocabulary_size, width)).astype(dtype)
    medians = rounds.round_robin_medians(_our_actions(values, ids, offsets, upstream), repeats)
    notes: list[str] = []
    torch = rounds.imported_torch(notes)
    groups = (
        partial(_torch_actions, torch, values, (ids, offsets, upstream), sparse)
        for sparse in (False, True)
    )
    medians.update(rounds.grouped_medians(groups if torch is not None else (), repeats))
    return BagCaseResult(vocabulary_size, width, token_count, bags, dtype, medians, notes)


def _our_actions(
    values: np.ndarray[Any, Any],
    ids: np.ndarray[Any, Any],
    offsets: np.ndarray[Any, Any],
    upstream: np.ndarray[Any, Any],
) -> dict[str, rounds.Timed]:
    leaf = parameter_from_owned_array(np.array(values, copy=True))
    table = NamedParameter.from_value("token_embedding.weight", leaf)
    layer = EmbeddingBag.from_parameter(table, mode="sum")
    steps = {("bag step", "bag fused step"): SGD(layer.parameters(), learning_rate=LEARNING_RATE)}
    forward = partial(layer, ids, offsets)
    return rounds.our_steps(forward, upstream, leaf, ("bag forward", "bag fwd+bwd"), steps)


def _torch_actions(
    torch: Any, values: np.ndarray[Any, Any], arrays: Sequence[Any], sparse: bool
) -> dict[str, rounds.Timed]:
    """PyTorch's ``fwd+bwd`` and ``step``, dense or sparse."""
    ids, offsets, upstream = (torch.from_numpy(array) for array in arrays)
    table = torch.from_numpy(np.array(values, copy=True))
    module = torch.nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="sum", sparse=sparse)
    optimizer = torch.optim.SGD(module.parameters(), lr=LEARNING_RATE)
    reset = partial(optimizer.zero_grad, set_to_none=True)

    def backward() -> None:
        module(ids, offsets).backward(upstream)

    kind = "sparse" if sparse else "dense"
    return {
        f"torch bag fwd+bwd {kind}": rounds.Timed(backward, reset),
        f"torch bag step {kind}": rounds.step(backward, optimizer, reset),
    }


def format_bag_results(results: list[BagCaseResult]) -> str:
    """A plain-text table: medians in milliseconds and PyTorch's steps as multiples of ours."""
    rows = []
    for case in results:
        rows += [
            f'EmbeddingBag(mode="sum") V={case.vocabulary_size} d={case.embedding_width} '
            f"N={case.token_count} in {case.bags} bags {case.dtype}",
            *rounds.median_rows(case.medians, "ms"),
            *rounds.ratio_rows(case.medians, COMPARISONS),
            *(f"  note: {note}" for note in case.notes),
        ]
    return rounds.lines(rows)


def run(quick: bool, repeats: int | None, only: str | None, optimizers: Sequence[str]) -> int:
    """``bench embedding``: the lookup cases of :mod:`~llm_from_scratch.bench.embedding` (full
    steps with ``optimizers``), then the bag cases (``only``: ``"lookup"``, ``"bag"`` or None
    for both); ``repeats`` None: 15, 5 with ``quick``."""
    count = repeats or (5 if quick else 15)
    if only != "bag":
        chosen = ", ".join(optimizers) or "no optimizer"
        lookups = [
            (
                f"measuring V={rows} d={width} N={n} {dtype} ({{count}} repeats; {chosen})...",
                partial(measure_case, rows, width, n, dtype, optimizers=optimizers),
            )
            for rows, width, n in (QUICK_SHAPES if quick else FULL_SHAPES)
            for dtype in DTYPES
        ]
        rounds.run_cases(count, lookups, format_results)
    if only == "lookup":
        return 0
    cases = [
        (
            f"measuring EmbeddingBag V={rows} d={width} N={count} B={bags} {dtype} "
            "({count} repeats)...",
            partial(measure_bag_case, rows, width, count, bags, dtype),
        )
        for rows, width, count, bags in (QUICK_BAG_SHAPES if quick else FULL_BAG_SHAPES)
        for dtype in DTYPES
    ]
    return rounds.run_cases(count, cases, format_bag_results)
