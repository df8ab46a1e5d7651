"""``llm-from-scratch bench embedding``: the embedding layer against the copy-once limit and
PyTorch.

For each shape ``(V, d, N)`` and dtype it times, with the same IDs and upstream gradient:

- ``copy``: allocating a fresh ``[N, d]`` array and copying the output bytes into it once;
- ``forward``: our lookup;
- ``fwd+bwd``: our lookup and backward until the row-sparse gradient is stored;
- ``sgd step``: lookup, backward and an SGD step on the touched rows;
- with PyTorch installed, ``F.embedding`` forward, forward+backward with a dense gradient, and
  with ``sparse=True``.

Measuring code builds a :class:`CaseResult`; :func:`format_results` only formats it.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, cast

import numpy as np

from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD

FULL_SHAPES: Final = ((50257, 768, 8192), (128256, 4096, 4096), (1000, 64, 65536))
QUICK_SHAPES: Final = ((5000, 256, 2048),)
DTYPES: Final = ("float64", "float32")


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


@dataclass(frozen=True)
class Timed:
    """One measured action, and an untimed preparation run before each repetition."""

    action: Callable[[], object]
    prepare: Callable[[], object] | None = None


def round_robin_medians(actions: dict[str, Timed], repeats: int) -> dict[str, float]:
    """Median wall seconds of each action, the actions taking turns in every round.

    Interleaving spreads slow drifts of the machine (other processes, memory compaction) over
    all actions alike; one untimed warm-up round comes first. Each result is freed outside the
    timed region.
    """
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for round_index in range(repeats + 1):
        for name, timed in actions.items():
            if timed.prepare is not None:
                timed.prepare()
            start = time.perf_counter()
            result = timed.action()
            elapsed = time.perf_counter() - start
            del result
            if round_index:
                samples[name].append(elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}


def _normal(shape: tuple[int, int], dtype: str, seed: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(seed).standard_normal(shape, dtype=cast(Any, dtype))


def _layer(vocabulary_size: int, width: int, dtype: str, seed: int) -> Embedding:
    # A table of random normals: building it is not what is measured, and Xavier sampling of a
    # 128256x4096 table would take longer than the measurement itself.
    values = _normal((vocabulary_size, width), dtype, seed)
    leaf = parameter_from_owned_array(values)
    return Embedding.from_parameter(NamedParameter.from_value("token_embedding.weight", leaf))


def measure_case(
    vocabulary_size: int, width: int, token_count: int, dtype: str, repeats: int
) -> CaseResult:
    """Time one shape and dtype, ours first (then freed), PyTorch second when installed."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocabulary_size, size=token_count, dtype=np.int64)
    upstream = rng.standard_normal((token_count, width)).astype(dtype)
    result = _measure_ours(vocabulary_size, width, ids, upstream, repeats)
    gc.collect()
    _measure_torch(result, ids, upstream, repeats)
    return result


def _measure_ours(
    vocabulary_size: int,
    width: int,
    ids: np.ndarray[Any, Any],
    upstream: np.ndarray[Any, Any],
    repeats: int,
) -> CaseResult:
    token_count, dtype = ids.size, str(upstream.dtype)
    layer = _layer(vocabulary_size, width, dtype, seed=1)
    leaf = layer.table.tensor
    values_bytes = leaf.numpy().nbytes
    source = np.array(upstream, copy=True)

    def copy_once() -> object:
        out = np.empty_like(source)
        np.copyto(out, source)
        return out

    def forward() -> object:
        return layer.forward(ids, (token_count,))

    def forward_backward() -> object:
        out = layer.forward(ids, (token_count,))
        out.backward_with_seed(upstream)
        return leaf.sparse_gradient

    optimizer = SGD(layer.parameters(), learning_rate=1e-3)

    def sgd_step() -> object:
        forward_backward()
        optimizer.step()
        return None

    medians = round_robin_medians(
        {
            "copy": Timed(copy_once),
            "forward": Timed(forward),
            "fwd+bwd": Timed(forward_backward, leaf.zero_grad),
            "sgd step": Timed(sgd_step, leaf.zero_grad),
        },
        repeats,
    )
    peak = _backward_peak_bytes(layer, ids, upstream)
    return CaseResult(vocabulary_size, width, token_count, dtype, medians, peak, values_bytes)


def _backward_peak_bytes(layer: Embedding, ids: np.ndarray[Any, Any], upstream: Any) -> int:
    """Peak bytes NumPy and SciPy allocate during one backward, beyond what existed before."""
    layer.table.tensor.zero_grad()
    out = layer.forward(ids, (ids.size,))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out.backward_with_seed(upstream)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - before


def _measure_torch(
    result: CaseResult, ids: np.ndarray[Any, Any], upstream: Any, repeats: int
) -> None:
    try:
        import torch
        import torch.nn.functional as functional
    except ImportError:
        result.notes.append("PyTorch is not installed: pip install 'llm-from-scratch[torch]'")
        return
    table = _normal((result.vocabulary_size, result.embedding_width), result.dtype, seed=1)
    weights = torch.from_numpy(table).requires_grad_(True)
    ids_t = torch.from_numpy(ids)
    upstream_t = torch.from_numpy(upstream)

    def reset() -> None:
        weights.grad = None

    def forward() -> object:
        with torch.no_grad():
            return functional.embedding(ids_t, weights)

    def step(sparse: bool) -> Callable[[], object]:
        def run() -> object:
            functional.embedding(ids_t, weights, sparse=sparse).backward(upstream_t)
            return weights.grad

        return run

    result.medians.update(
        round_robin_medians(
            {
                "torch forward": Timed(forward),
                "torch fwd+bwd dense": Timed(step(False), reset),
                "torch fwd+bwd sparse": Timed(step(True), reset),
            },
            repeats,
        )
    )
    reset()
    result.notes.append(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")


def format_results(results: list[CaseResult]) -> str:
    """A plain-text table: medians in milliseconds, then ratios side by side."""
    lines = []
    for case in results:
        lines.append(
            f"V={case.vocabulary_size} d={case.embedding_width} N={case.token_count} {case.dtype}"
        )
        for name, seconds in case.medians.items():
            lines.append(f"  {name:<22}{seconds * 1e3:>11.3f} ms  {case.ratio(name):>7.2f}x copy")
        lines.extend(_torch_ratios(case))
        share = case.backward_peak_bytes / case.table_bytes
        lines.append(
            f"  backward peak extra memory {case.backward_peak_bytes / 2**20:.1f} MiB "
            f"= {share:.2%} of the {case.table_bytes / 2**20:.0f} MiB table"
        )
        lines.extend(f"  note: {note}" for note in case.notes)
    return "\n".join(lines) + "\n"


def _torch_ratios(case: CaseResult) -> list[str]:
    lines = []
    for name in ("torch fwd+bwd dense", "torch fwd+bwd sparse"):
        if name in case.medians:
            lines.append(
                f"  {name} / our fwd+bwd = {case.ratio(name, 'fwd+bwd'):.2f} "
                "(above 1: ours is faster)"
            )
    return lines


def run(quick: bool = False, repeats: int | None = None) -> int:
    """Measure every shape and dtype, print progress to stderr and the table to stdout."""
    shapes = QUICK_SHAPES if quick else FULL_SHAPES
    count = repeats if repeats is not None else (5 if quick else 15)
    if count < 1:
        print("error: --repeats must be at least 1", file=sys.stderr)
        return 2
    results = []
    for vocabulary_size, width, token_count in shapes:
        for dtype in DTYPES:
            print(
                f"measuring V={vocabulary_size} d={width} N={token_count} {dtype} "
                f"({count} repeats)...",
                file=sys.stderr,
                flush=True,
            )
            results.append(measure_case(vocabulary_size, width, token_count, dtype, count))
    sys.stdout.write(format_results(results))
    return 0
