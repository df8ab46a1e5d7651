"""``llm-from-scratch bench embedding``, second part: ``EmbeddingBag(mode="sum")`` against
PyTorch's ``nn.EmbeddingBag``, dense and sparse.

For each shape ``(V, d, N, B)`` and dtype: a table of random normals, ``N`` random IDs cut into
``B`` bags, one upstream gradient ``[B, d]``. Ours take turns in every round
(:func:`~llm_from_scratch.bench.embedding.round_robin_medians`): ``bag forward``, ``bag
fwd+bwd``, ``bag step`` (an ``SGD`` step after it) and ``bag fused step``
(``SGD.backward_step``); then PyTorch's dense actions, then its sparse ones, each group on its own
(a dense step's ``[V, d]`` gradient slows whatever runs after it): ``torch bag fwd+bwd`` and
``torch bag step``. :func:`format_bag_results` formats each :class:`BagCaseResult`.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import numpy as np

from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.bench.embedding import Timed, round_robin_medians
from llm_from_scratch.bench.embedding import run as run_lookups
from llm_from_scratch.nn import EmbeddingBag, NamedParameter
from llm_from_scratch.optim import SGD

FULL_BAG_SHAPES: Final = ((50257, 768, 8192, 512),)
QUICK_BAG_SHAPES: Final = ((5000, 256, 2048, 128),)
DTYPES: Final = ("float64", "float32")
LEARNING_RATE: Final = 1e-3


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
    medians = round_robin_medians(_our_actions(values, ids, offsets, upstream), repeats)
    notes: list[str] = []
    for group in _torch_groups(values, ids, offsets, upstream, notes):
        gc.collect()  # each group's arrays are freed before the next one runs
        medians.update(round_robin_medians(group, repeats))
    return BagCaseResult(vocabulary_size, width, token_count, bags, dtype, medians, notes)


def _our_actions(
    values: np.ndarray[Any, Any],
    ids: np.ndarray[Any, Any],
    offsets: np.ndarray[Any, Any],
    upstream: np.ndarray[Any, Any],
) -> dict[str, Timed]:
    leaf = parameter_from_owned_array(np.array(values, copy=True))
    table = NamedParameter.from_value("token_embedding.weight", leaf)
    layer = EmbeddingBag.from_parameter(table, mode="sum")
    optimizer = SGD(layer.parameters(), learning_rate=LEARNING_RATE)

    def forward() -> object:
        return layer(ids, offsets)

    def forward_backward() -> object:
        layer(ids, offsets).backward_with_seed(upstream)
        return leaf.sparse_gradient

    def step() -> object:
        forward_backward()
        optimizer.step()
        return None

    def fused_step() -> object:
        optimizer.backward_step(layer(ids, offsets), upstream)
        return None

    return {
        "bag forward": Timed(forward),
        "bag fwd+bwd": Timed(forward_backward, leaf.zero_grad),
        "bag step": Timed(step, leaf.zero_grad),
        "bag fused step": Timed(fused_step, leaf.zero_grad),
    }


def _torch_groups(
    values: np.ndarray[Any, Any],
    ids: np.ndarray[Any, Any],
    offsets: np.ndarray[Any, Any],
    upstream: np.ndarray[Any, Any],
    notes: list[str],
) -> list[dict[str, Timed]]:
    """PyTorch's dense actions, then its sparse ones, each group timed on its own (one is not
    slowed down by the other's allocations)."""
    try:
        import torch
    except ImportError:
        notes.append("PyTorch is not installed: pip install 'llm-from-scratch[torch]'")
        return []
    ids_t, offsets_t, upstream_t = (torch.from_numpy(a) for a in (ids, offsets, upstream))
    groups = []
    for kind, sparse in (("dense", False), ("sparse", True)):
        actions = {}
        module = torch.nn.EmbeddingBag.from_pretrained(
            torch.from_numpy(np.array(values, copy=True)), freeze=False, mode="sum", sparse=sparse
        )
        optimizer = torch.optim.SGD(module.parameters(), lr=LEARNING_RATE)
        reset = partial(optimizer.zero_grad, set_to_none=True)
        actions[f"torch bag fwd+bwd {kind}"] = Timed(
            _torch_step(module, None, ids_t, offsets_t, upstream_t), reset
        )
        actions[f"torch bag step {kind}"] = Timed(
            _torch_step(module, optimizer, ids_t, offsets_t, upstream_t), reset
        )
        groups.append(actions)
    notes.append(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")
    return groups


def _torch_step(
    module: Any, optimizer: Any | None, ids: Any, offsets: Any, upstream: Any
) -> Callable[[], object]:
    def step() -> object:
        module(ids, offsets).backward(upstream)
        if optimizer is not None:
            optimizer.step()
        return None

    return step


def format_bag_results(results: list[BagCaseResult]) -> str:
    """A plain-text table: medians in milliseconds and PyTorch's steps as multiples of ours."""
    lines = []
    for case in results:
        lines.append(
            f'EmbeddingBag(mode="sum") V={case.vocabulary_size} d={case.embedding_width} '
            f"N={case.token_count} in {case.bags} bags {case.dtype}"
        )
        for name, seconds in case.medians.items():
            lines.append(f"  {name:<22}{seconds * 1e3:>11.3f} ms")
        for ours, name in (
            ("bag fwd+bwd", "torch bag fwd+bwd dense"),
            ("bag fwd+bwd", "torch bag fwd+bwd sparse"),
            ("bag step", "torch bag step dense"),
            ("bag step", "torch bag step sparse"),
            ("bag fused step", "torch bag step dense"),
            ("bag fused step", "torch bag step sparse"),
        ):
            if name in case.medians:
                ratio = case.ratio(name, ours)
                lines.append(f"  {name} / our {ours} = {ratio:.2f} (above 1: ours is faster)")
        lines.extend(f"  note: {note}" for note in case.notes)
    return "\n".join(lines) + "\n"


def run_bags(quick: bool, repeats: int) -> list[BagCaseResult]:
    """Measure every bag shape and dtype, with progress on stderr."""
    results = []
    shapes = QUICK_BAG_SHAPES if quick else FULL_BAG_SHAPES
    for vocabulary_size, width, token_count, bags in shapes:
        for dtype in DTYPES:
            print(
                f"measuring EmbeddingBag V={vocabulary_size} d={width} N={token_count} "
                f"B={bags} {dtype} ({repeats} repeats)...",
                file=sys.stderr,
                flush=True,
            )
            case = measure_bag_case(vocabulary_size, width, token_count, bags, dtype, repeats)
            results.append(case)
    return results


def run(
    quick: bool = False,
    repeats: int | None = None,
    only: str | None = None,
    optimizers: Sequence[str] = ("sgd",),
) -> int:
    """``bench embedding``: the lookup cases of :mod:`~llm_from_scratch.bench.embedding` (full
    steps with ``optimizers``), then the bag cases (``only`` is ``"lookup"``, ``"bag"`` or None
    for both)."""
    if only != "bag":
        status = run_lookups(quick=quick, repeats=repeats, optimizers=optimizers)
        if status != 0 or only == "lookup":
            return status
    count = repeats if repeats is not None else (5 if quick else 15)
    if count < 1:
        print("error: --repeats must be at least 1", file=sys.stderr)
        return 2
    sys.stdout.write(format_bag_results(run_bags(quick, count)))
    return 0
