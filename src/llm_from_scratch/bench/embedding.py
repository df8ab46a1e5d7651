"""``llm-from-scratch bench embedding``: the embedding layer and full training steps against
the copy-once limit and PyTorch.

For each shape ``(V, d, N)`` and dtype, with the same IDs and upstream gradient: ``copy`` (a
fresh ``[N, d]`` array and one copy into it), ``forward``, ``fwd+bwd`` (until the row-sparse
gradient is stored), and for each chosen optimizer ``<optimizer> step`` (lookup, backward,
``step()``) and ``<optimizer> fused`` (lookup and ``backward_step()``); with PyTorch installed,
``F.embedding`` forward, forward+backward dense and sparse, and each optimizer's full step, dense
and sparse (``SparseAdam`` for Adam); a dense step that would not fit in half of the machine's
memory is left out with a note. Measuring builds a :class:`CaseResult`; :func:`format_results`
formats it.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import numpy as np

from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD, Adagrad, Adam, Optimizer

FULL_SHAPES: Final = ((50257, 768, 8192), (128256, 4096, 4096), (1000, 64, 65536))
QUICK_SHAPES: Final = ((5000, 256, 2048),)
DTYPES: Final = ("float64", "float32")
OPTIMIZERS: Final = ("sgd", "adagrad", "adam")
LEARNING_RATE: Final = 1e-3

COMPARISONS: Final = (
    ("torch fwd+bwd dense", ("fwd+bwd",)),
    ("torch fwd+bwd sparse", ("fwd+bwd",)),
    ("torch sgd dense", ("sgd step", "sgd fused")),
    ("torch sgd sparse", ("sgd step", "sgd fused")),
    ("torch adagrad dense", ("adagrad step", "adagrad fused")),
    ("torch adagrad sparse", ("adagrad step", "adagrad fused")),
    ("torch adam dense", ("adam step", "adam fused")),
    ("torch sparse adam", ("adam step", "adam fused")),
)
"""Which PyTorch measurement is compared with which of ours (PyTorch time / our time)."""


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
    """Median wall seconds of each action, the actions taking turns in every round (a slow
    drift of the machine falls on all alike), after one untimed warm-up round; each result is
    freed outside the timed region."""
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
    # random normals: Xavier sampling of a 128256x4096 table takes longer than the measurement
    values = _normal((vocabulary_size, width), dtype, seed)
    leaf = parameter_from_owned_array(values)
    return Embedding.from_parameter(NamedParameter.from_value("token_embedding.weight", leaf))


def _optimizer(name: str, layer: Embedding) -> Optimizer:
    if name == "sgd":
        return SGD(layer.parameters(), LEARNING_RATE)
    if name == "adagrad":
        return Adagrad(layer.parameters(), LEARNING_RATE)
    return Adam(layer.parameters(), LEARNING_RATE)


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
    result = _measure_ours(vocabulary_size, width, ids, upstream, repeats, optimizers)
    gc.collect()
    _measure_torch(result, ids, upstream, repeats, optimizers)
    return result


def _measure_ours(
    vocabulary_size: int,
    width: int,
    ids: np.ndarray[Any, Any],
    upstream: np.ndarray[Any, Any],
    repeats: int,
    optimizers: Sequence[str],
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

    actions = {
        "copy": Timed(copy_once),
        "forward": Timed(forward),
        "fwd+bwd": Timed(forward_backward, leaf.zero_grad),
    }
    for name in optimizers:
        optimizer = _optimizer(name, layer)  # one per optimizer: both steps share its state
        actions[f"{name} step"] = Timed(_full_step(forward_backward, optimizer), leaf.zero_grad)
        fused = _fused_step(layer, ids, upstream, optimizer)  # from an empty stored gradient
        actions[f"{name} fused"] = Timed(fused, leaf.zero_grad)
    medians = round_robin_medians(actions, repeats)
    peak = _backward_peak_bytes(layer, ids, upstream)
    return CaseResult(vocabulary_size, width, token_count, dtype, medians, peak, values_bytes)


def _full_step(
    forward_backward: Callable[[], object], optimizer: Optimizer
) -> Callable[[], object]:
    def step() -> object:
        forward_backward()
        optimizer.step()
        return None

    return step


def _fused_step(
    layer: Embedding, ids: np.ndarray[Any, Any], upstream: Any, optimizer: Optimizer
) -> Callable[[], object]:
    def step() -> object:
        optimizer.backward_step(layer.forward(ids, (ids.size,)), upstream)
        return None

    return step


def _backward_peak_bytes(layer: Embedding, ids: np.ndarray[Any, Any], upstream: Any) -> int:
    """Peak bytes NumPy allocates during one backward, beyond what existed before it."""
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


def _memory_budget() -> int:
    """Half of the machine's physical memory, in bytes (no limit where it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return sys.maxsize


# Dense PyTorch steps hold the table, its dense gradient, the optimizer's dense state and a
# temporary of the table's size: this many tables in all.
_TORCH_DENSE_TABLES: Final = {"sgd": 2, "adagrad": 4, "adam": 5}


def _measure_torch(
    result: CaseResult,
    ids: np.ndarray[Any, Any],
    upstream: Any,
    repeats: int,
    optimizers: Sequence[str],
) -> None:
    try:
        import torch

        warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)
    except ImportError:
        result.notes.append("PyTorch is not installed: pip install 'llm-from-scratch[torch]'")
        return
    shape = (result.vocabulary_size, result.embedding_width)
    weights = torch.from_numpy(_normal(shape, result.dtype, seed=1)).requires_grad_(True)
    ids_t, upstream_t = torch.from_numpy(ids), torch.from_numpy(upstream)
    lookup = _TorchLookup(torch, weights, ids_t, upstream_t)
    result.medians.update(
        round_robin_medians(
            {
                "torch forward": Timed(lookup.forward),
                "torch fwd+bwd dense": Timed(lookup.backward(False), lookup.reset),
                "torch fwd+bwd sparse": Timed(lookup.backward(True), lookup.reset),
            },
            repeats,
        )
    )
    budget = _memory_budget()
    for name in optimizers:
        actions = {}
        if _TORCH_DENSE_TABLES[name] * result.table_bytes <= budget:
            actions[f"torch {name} dense"] = Timed(
                lookup.step(_torch_optimizer(torch, name, weights, False), False), lookup.reset
            )
        else:
            result.notes.append(
                f"torch {name} dense left out: it needs about {_TORCH_DENSE_TABLES[name]} "
                f"tables of {result.table_bytes / 2**30:.1f} GiB"
            )
        sparse_name = "torch sparse adam" if name == "adam" else f"torch {name} sparse"
        sparse = _torch_optimizer(torch, name, weights, True)
        actions[sparse_name] = Timed(lookup.step(sparse, True), lookup.reset)
        result.medians.update(round_robin_medians(actions, repeats))
        del actions, sparse
        gc.collect()
    lookup.reset()
    result.notes.append(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")


def _torch_optimizer(torch: Any, name: str, weights: Any, sparse: bool) -> Any:
    if name == "sgd":
        return torch.optim.SGD([weights], lr=LEARNING_RATE)
    if name == "adagrad":
        return torch.optim.Adagrad([weights], lr=LEARNING_RATE)
    if sparse:
        return torch.optim.SparseAdam([weights], lr=LEARNING_RATE)
    return torch.optim.Adam([weights], lr=LEARNING_RATE)


@dataclass(frozen=True)
class _TorchLookup:
    """PyTorch's lookup of the same IDs, its backward, and a full step with an optimizer."""

    torch: Any
    weights: Any
    ids: Any
    upstream: Any

    def reset(self) -> None:
        self.weights.grad = None

    def forward(self) -> object:
        with self.torch.no_grad():
            return self.torch.nn.functional.embedding(self.ids, self.weights)

    def backward(self, sparse: bool) -> Callable[[], object]:
        def run() -> object:
            output = self.torch.nn.functional.embedding(self.ids, self.weights, sparse=sparse)
            output.backward(self.upstream)
            return self.weights.grad

        return run

    def step(self, optimizer: Any, sparse: bool) -> Callable[[], object]:
        backward = self.backward(sparse)

        def run() -> object:
            backward()
            optimizer.step()
            return None

        return run


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
    for theirs, ours in COMPARISONS:
        for name in ours:
            if theirs in case.medians and name in case.medians:
                lines.append(
                    f"  {theirs} / our {name} = {case.ratio(theirs, name):.2f} "
                    "(above 1: ours is faster)"
                )
    return lines


def run(
    quick: bool = False, repeats: int | None = None, optimizers: Sequence[str] = ("sgd",)
) -> int:
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
                f"({count} repeats; {', '.join(optimizers) or 'no optimizer'})...",
                file=sys.stderr,
                flush=True,
            )
            results.append(
                measure_case(vocabulary_size, width, token_count, dtype, count, optimizers)
            )
    sys.stdout.write(format_results(results))
    return 0
