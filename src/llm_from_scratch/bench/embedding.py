"""``llm-from-scratch bench embedding``: the embedding layer and full training steps against
the copy-once limit and PyTorch, the actions of ``docs/performance.md`` taking turns; a dense
PyTorch step that would not fit in half of the machine's memory is left out with a note."""

from __future__ import annotations

import gc
import tracemalloc
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, cast

import numpy as np

from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.bench import rounds
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD, Adagrad, Adam
from llm_from_scratch.training.options import default_memory_budget

FULL_SHAPES: Final = ((50257, 768, 8192), (128256, 4096, 4096), (1000, 64, 65536))
QUICK_SHAPES: Final = ((5000, 256, 2048),)
DTYPES: Final = ("float64", "float32")
OPTIMIZERS: Final = {"sgd": SGD, "adagrad": Adagrad, "adam": Adam}
LEARNING_RATE: Final = 1e-3
TORCH_DENSE_TABLES: Final = {"sgd": 2, "adagrad": 4, "adam": 5}
"""A dense PyTorch step holds the table, its gradient, the optimizer's state and a temporary:
this many tables in all, which must fit the memory budget (half of the machine's memory)."""


def torch_names(optimizer: str) -> tuple[str, str]:
    """The names of PyTorch's dense and sparse steps with ``optimizer``."""
    sparse = "torch sparse adam" if optimizer == "adam" else f"torch {optimizer} sparse"
    return f"torch {optimizer} dense", sparse


COMPARISONS: Final = (
    ("torch fwd+bwd dense", "fwd+bwd"),
    ("torch fwd+bwd sparse", "fwd+bwd"),
    *(
        (theirs, f"{name} {kind}")
        for name in OPTIMIZERS
        for theirs in torch_names(name)
        for kind in ("step", "fused")
    ),
)
"""Which PyTorch measurement is compared with which of ours (PyTorch time / our time)."""

TARGETS: Final = {
    (torch_names(name)[1], f"{name} {kind}"): 1.3
    for name in ("sgd", "adagrad")
    for kind in ("step", "fused")
}
"""PyTorch's sparse step over ours, at least (our plain loop, ``backward`` then ``step()``, and
our fused ``optimizer.backward_step``, each against ``sparse=True`` and PyTorch's optimizer)."""


@dataclass(frozen=True)
class CaseResult:
    """The medians (seconds) of one shape and dtype, and our backward's peak extra memory."""

    vocabulary_size: int
    embedding_width: int
    token_count: int
    dtype: str
    medians: dict[str, float]
    backward_peak_bytes: int
    table_bytes: int
    notes: list[str] = field(default_factory=list)

    def ratio(self, name: str, baseline: str = "copy") -> float:
        """``medians[name] / medians[baseline]``."""
        return self.medians[name] / self.medians[baseline]


def measure_case(
    vocabulary_size: int,
    width: int,
    token_count: int,
    dtype: str,
    repeats: int,
    optimizers: Sequence[str] = ("sgd",),
) -> CaseResult:
    """Time one shape and dtype, ours first (then freed), then PyTorch's when installed, with
    full steps of ``optimizers``."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocabulary_size, size=token_count, dtype=np.int64)
    upstream = rng.standard_normal((token_count, width)).astype(dtype)
    result = _measure_ours(vocabulary_size, ids, upstream, repeats, optimizers)
    gc.collect()
    _measure_torch(result, ids, upstream, repeats, optimizers)
    return result


def _normal(shape: tuple[int, int], dtype: str) -> np.ndarray[Any, Any]:
    # not Xavier: sampling a 128256x4096 table that way takes longer than the measurement
    return np.random.default_rng(1).standard_normal(shape, dtype=cast(Any, dtype))


def _copied(source: np.ndarray[Any, Any]) -> object:
    out = np.empty_like(source)
    np.copyto(out, source)
    return out


def _measure_ours(
    vocabulary_size: int,
    ids: np.ndarray[Any, Any],
    upstream: np.ndarray[Any, Any],
    repeats: int,
    optimizers: Sequence[str],
) -> CaseResult:
    (count, width), dtype = upstream.shape, str(upstream.dtype)
    leaf = parameter_from_owned_array(_normal((vocabulary_size, width), dtype))
    layer = Embedding.from_parameter(NamedParameter.from_value("token_embedding.weight", leaf))
    forward = partial(layer.forward, ids, (count,))
    steps = {
        (f"{name} step", f"{name} fused"): OPTIMIZERS[name](layer.parameters(), LEARNING_RATE)
        for name in optimizers
    }
    copy = rounds.Timed(partial(_copied, np.array(upstream, copy=True)))
    actions = {
        "copy": copy,
        **rounds.our_steps(forward, upstream, leaf, ("forward", "fwd+bwd"), steps),
    }
    medians = rounds.round_robin_medians(actions, repeats)
    peak = _backward_peak_bytes(leaf, forward, upstream)
    return CaseResult(vocabulary_size, width, count, dtype, medians, peak, leaf.numpy().nbytes)


def _backward_peak_bytes(leaf: Any, forward: Callable[[], Any], upstream: Any) -> int:
    """Peak bytes NumPy allocates during one backward, beyond what existed before it (the
    gradient of an earlier backward is held, so that a large one's copy of the upstream cannot
    go into a buffer kept from before and is counted)."""
    forward().backward_with_seed(upstream)
    held = leaf.sparse_gradient
    leaf.zero_grad()
    out = forward()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out.backward_with_seed(upstream)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del held
    return peak - before


def _measure_torch(
    result: CaseResult,
    ids: np.ndarray[Any, Any],
    upstream: Any,
    repeats: int,
    optimizers: Sequence[str],
) -> None:
    torch = rounds.imported_torch(result.notes)
    if torch is None:
        return
    warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)
    shape = (result.vocabulary_size, result.embedding_width)
    weights = torch.from_numpy(_normal(shape, result.dtype)).requires_grad_(True)
    lookup = partial(torch.nn.functional.embedding, torch.from_numpy(ids), weights)
    upstream_t = torch.from_numpy(upstream)

    def reset() -> None:
        weights.grad = None

    def forward() -> object:
        with torch.no_grad():
            return lookup()

    def backward(sparse: bool) -> Callable[[], object]:
        return lambda: lookup(sparse=sparse).backward(upstream_t)

    def steps(name: str) -> Mapping[str, rounds.Timed]:
        dense, sparse = torch_names(name)
        tables, actions = TORCH_DENSE_TABLES[name], {}
        if tables * result.table_bytes <= default_memory_budget() << 20:
            optimizer = getattr(torch.optim, OPTIMIZERS[name].__name__)([weights], lr=LEARNING_RATE)
            actions[dense] = rounds.step(backward(False), optimizer, reset)
        else:
            size = result.table_bytes / 2**30
            result.notes.append(
                f"{dense} left out: it needs about {tables} tables of {size:.1f} GiB"
            )
        kind = "SparseAdam" if name == "adam" else OPTIMIZERS[name].__name__
        optimizer = getattr(torch.optim, kind)([weights], lr=LEARNING_RATE)
        actions[sparse] = rounds.step(backward(True), optimizer, reset)
        return actions

    lookups = {
        "torch forward": rounds.Timed(forward),
        "torch fwd+bwd dense": rounds.Timed(backward(False), reset),
        "torch fwd+bwd sparse": rounds.Timed(backward(True), reset),
    }
    groups: list[Callable[[], Mapping[str, rounds.Timed]]] = [lambda: lookups]
    groups += [partial(steps, name) for name in optimizers]
    result.medians.update(rounds.grouped_medians(groups, repeats))
    gc.collect()
    reset()


def format_results(results: list[CaseResult]) -> str:
    """A plain-text table: medians in milliseconds, then ratios side by side."""
    rows = []
    for case in results:
        share = case.backward_peak_bytes / case.table_bytes
        rows += [
            f"V={case.vocabulary_size} d={case.embedding_width} N={case.token_count} {case.dtype}",
            *rounds.median_rows(case.medians, "ms", "copy"),
            *rounds.ratio_rows(case.medians, COMPARISONS),
            f"  backward peak extra memory {case.backward_peak_bytes / 2**20:.1f} MiB "
            f"= {share:.2%} of the {case.table_bytes / 2**20:.0f} MiB table",
            *(f"  note: {note}" for note in case.notes),
        ]
    return rounds.lines([*rows, *target_rows(results)])


def target_rows(results: list[CaseResult]) -> list[str]:
    """Each :data:`TARGETS` ratio measured, per case, and whether it is met."""
    measured = [
        (
            f"{case.vocabulary_size}x{case.embedding_width} {case.dtype}: {theirs} / our {ours}",
            case.medians[theirs] / case.medians[ours],
            least,
        )
        for case in results
        for (theirs, ours), least in TARGETS.items()
        if theirs in case.medians and ours in case.medians
    ]
    return rounds.target_rows("targets (PyTorch's time over ours, side by side above):", measured)
