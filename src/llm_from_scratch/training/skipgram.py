"""Skip-gram with negative sampling (Mikolov et al., 2013) on the tape: the samples, the loss and
the step (``docs/training.md``, "The model" and "The samples").

The input table is the chapter's :class:`~llm_from_scratch.nn.Embedding`, the vectors a run
keeps; the context table holds one vector per word. :meth:`SkipGram.loss` writes a pair's loss
``-log sigmoid(u_o . v_c) - sum over k of log sigmoid(-u_k . v_c)`` with the tape's operations;
:func:`reference_block` steps after every pair, as word2vec does, on the samples of
:func:`block_pairs` (subsampling, a dynamic window, negatives from :class:`NoiseTable`), drawn
from one :class:`~llm_from_scratch.nn.SplitMix64` stream per block (:func:`block_state`). The
compiled :func:`~llm_from_scratch.training.kernels.train_block` fuses the same arithmetic.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.value import parameter_from_owned_array
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.nn.init import xavier_uniform_array
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor
from llm_from_scratch.training.kernels import SENTENCE_END
from llm_from_scratch.training.options import NOISE_POWER, SAMPLE

INPUT_TABLE: Final = "token_embedding.weight"
"""The name of the input table, the vectors a run keeps."""
CONTEXT_TABLE: Final = "context_embedding.weight"
"""The name of the output (context) table."""

IdArray = npt.NDArray[np.intp]


def keep_probabilities(counts: npt.NDArray[Any], sample: float = SAMPLE) -> npt.NDArray[np.float64]:
    """Each word's probability of being kept at an occurrence (a word of count 0: never), with
    gensim's meanings of ``sample``: below 1 a share of the words (the threshold ``sample * T``),
    0 no subsampling (the threshold ``T``: every word kept), 1 or more a count (the threshold
    ``int(sample * (3 + sqrt(5)) / 2)``).

    Example:
        >>> keep_probabilities(np.array([1000, 10, 0]), sample=1e-3).round(4).tolist()
        [0.0328, 0.4188, 0.0]
        >>> keep_probabilities(np.array([1000, 10, 0]), sample=0).tolist()
        [1.0, 1.0, 0.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    if sample >= 1.0:
        threshold = float(int(sample * (3 + np.sqrt(5)) / 2))
    else:
        threshold = (sample if sample > 0 else 1.0) * counts.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = (np.sqrt(counts / threshold) + 1.0) * threshold / counts
    return np.where(counts > 0, np.minimum(keep, 1.0), 0.0)


@dataclass(frozen=True, eq=False)
class NoiseTable:
    """The noise distribution ``P(w) ~ count(w) ** 0.75`` as Walker's alias table: a uniform
    ``x`` in ``[0, V)`` draws its slot ``int(x)`` when the fraction is below ``accept[slot]``,
    else ``alias[slot]``.

    Example:
        >>> table = NoiseTable.of(np.array([16, 1, 0]))
        >>> (table.probabilities * 10).round(3).tolist()
        [8.889, 1.111, 0.0]
    """

    accept: npt.NDArray[np.float64]
    alias: IdArray
    probabilities: npt.NDArray[np.float64]

    @classmethod
    def of(cls, counts: npt.NDArray[Any], power: float = NOISE_POWER) -> NoiseTable:
        """The alias table of ``counts ** power``, normalized (a count of 0 is never drawn)."""
        found = np.asarray(counts, dtype=np.float64)
        with np.errstate(divide="ignore"):
            weights = np.where(found > 0, found**power, 0.0)
        probabilities = weights / weights.sum()
        size = probabilities.size
        scaled = probabilities * size
        accept = np.ones(size, dtype=np.float64)
        alias = np.arange(size, dtype=np.intp)
        small = [int(i) for i in np.flatnonzero(scaled < 1.0)]
        large = [int(i) for i in np.flatnonzero(scaled >= 1.0)]
        while small and large:
            low, high = small.pop(), large.pop()
            accept[low] = scaled[low]
            alias[low] = high
            scaled[high] = (scaled[high] + scaled[low]) - 1.0
            (small if scaled[high] < 1.0 else large).append(high)
        return cls(accept, alias, probabilities)

    def draw(self, unit: float) -> int:
        """The word drawn by a uniform number ``unit`` in ``[0, 1)``."""
        size = self.accept.size
        scaled = unit * size
        slot = min(int(scaled), size - 1)
        return slot if scaled - slot < self.accept[slot] else int(self.alias[slot])

    def draws(self, rng: SplitMix64, count: int) -> tuple[int, ...]:
        """``count`` words drawn from ``rng``, one uniform number each."""
        return tuple(self.draw(rng.next_unit_f64()) for _ in range(count))


def block_state(seed: int, epoch: int, block: int) -> int:
    """The SplitMix64 state block ``block`` of epoch ``epoch`` draws from: ``seed``, then the
    epoch, then the block, each mixed in by one step of the generator."""
    state = SplitMix64.from_seed(seed).next_u64()
    state = SplitMix64.from_seed(state ^ epoch).next_u64()
    return SplitMix64.from_seed(state ^ block).next_u64()


def learning_rate(position: int, words_total: int, rates: tuple[float, float]) -> float:
    """The learning rate at the word ``position`` of a run of ``words_total`` words, falling
    linearly from ``rates[0]`` to ``rates[1]``."""
    first, last = rates
    return max(last, first - (first - last) / max(words_total, 1) * position)


def initial_tables(
    vocabulary_size: int, width: int, seed: int, dtype: Any = np.float32
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """New arrays of the two tables before training: the input table drawn Xavier-uniform from
    ``SplitMix64.from_seed(seed)`` as the chapter's layer draws it, the context table zeros
    (pages the system maps only once training writes them).

    Example:
        >>> inputs, contexts = initial_tables(3, 2, seed=1)
        >>> layer = Embedding.new("t", 3, 2, SplitMix64.from_seed(1), dtype=np.float32)
        >>> bool((inputs == layer.table.tensor.numpy()).all()), contexts.any()
        (True, np.False_)
    """
    inputs = xavier_uniform_array(vocabulary_size, width, SplitMix64.from_seed(seed), dtype)
    return inputs, np.zeros((vocabulary_size, width), dtype=dtype)


@dataclass(frozen=True)
class Pair:
    """One sample: a centre word, its context word followed by the negatives (``targets``),
    and the centre's position among the words of the run (its learning rate's)."""

    centre: int
    targets: tuple[int, ...]
    position: int


def kept_sentences(
    tokens: npt.NDArray[Any], keep: npt.NDArray[np.float64], rng: SplitMix64, words_before: int
) -> Iterator[list[tuple[int, int]]]:
    """Each sentence of a block subsampled: its kept words with their positions among the words
    of the run (``words_before`` words come before the block), one draw from ``rng`` per word
    of the vocabulary; the list is reused, so read each before the next."""
    sentence: list[tuple[int, int]] = []
    read = words_before
    for token in [*tokens.tolist(), SENTENCE_END]:
        if token != SENTENCE_END:
            read += 1
            if token >= 0 and rng.next_unit_f64() < keep[token]:
                sentence.append((token, read - 1))
            continue
        yield sentence
        sentence.clear()


def block_reaches(
    tokens: npt.NDArray[Any],
    keep: npt.NDArray[np.float64],
    window: int,
    state: int,
    words_before: int,
) -> Iterator[tuple[SplitMix64, list[tuple[int, int]], int, range]]:
    """Each kept word of a block in turn, from a SplitMix64 whose state is ``state``: the
    stream, its sentence, its place there, and the places its window reaches (``window - b``
    each side, ``b`` drawn; its own place included)."""
    rng = SplitMix64(state)
    for sentence in kept_sentences(tokens, keep, rng, words_before):
        for at in range(len(sentence)):
            reach = window - rng.next_u64() % window
            yield rng, sentence, at, range(max(0, at - reach), min(len(sentence), at + reach + 1))


def block_pairs(
    tokens: npt.NDArray[Any],
    keep: npt.NDArray[np.float64],
    noise: NoiseTable,
    window: int,
    negatives: int,
    state: int,
    words_before: int,
) -> Iterator[Pair]:
    """The pairs of one block of tokens (see the module docstring), drawn from a SplitMix64
    whose state is ``state``; ``words_before`` words of the run come before the block."""
    for rng, sentence, at, reached in block_reaches(tokens, keep, window, state, words_before):
        centre, position = sentence[at]
        for context_at in reached:
            if context_at != at:
                targets = (sentence[context_at][0], *noise.draws(rng, negatives))
                yield Pair(centre, targets, position)


@dataclass(frozen=True)
class PairBatch:
    """``B`` pairs for :meth:`SkipGram.loss`: the centres ``[B]``, for each pair its context
    word followed by ``K`` negatives (``targets``, ``[B, 1 + K]``), and their labels (``+1``,
    ``-1``, or ``0`` for a negative equal to the context word)."""

    centres: IdArray
    targets: IdArray
    labels: npt.NDArray[Any]

    @classmethod
    def of(cls, pairs: list[Pair], dtype: Any = np.float32) -> PairBatch:
        """The batch of ``pairs``, labels in ``dtype``."""
        centres = np.array([pair.centre for pair in pairs], dtype=np.intp)
        targets = np.array([pair.targets for pair in pairs], dtype=np.intp)
        labels = np.where(targets == targets[:, :1], 0, -1).astype(dtype)
        labels[:, 0] = 1
        return cls(centres, targets, labels)

    @property
    def size(self) -> int:
        """``B``, the number of pairs."""
        return int(self.centres.size)


@dataclass(frozen=True, eq=False)
class SkipGram:
    """The two tables of skip-gram and its loss on a batch."""

    inputs: Embedding
    contexts: Embedding

    @classmethod
    def new(cls, vocabulary_size: int, width: int, seed: int, dtype: Any = np.float32) -> SkipGram:
        """An input table drawn Xavier-uniform from ``SplitMix64.from_seed(seed)`` (as the
        chapter's layer draws it), and a context table of zeros (as word2vec starts)."""
        return cls.adopt(*initial_tables(vocabulary_size, width, seed, dtype))

    @classmethod
    def from_arrays(cls, inputs: npt.NDArray[Any], contexts: npt.NDArray[Any]) -> SkipGram:
        """The model whose tables hold copies of ``inputs`` and ``contexts`` (``[V, d]``)."""
        return cls(_table(INPUT_TABLE, inputs), _table(CONTEXT_TABLE, contexts))

    @classmethod
    def adopt(cls, inputs: npt.NDArray[Any], contexts: npt.NDArray[Any]) -> SkipGram:
        """The model whose tables are ``inputs`` and ``contexts`` themselves, taken over without
        a copy (package-internal: the caller made them and keeps no writeable view)."""
        return cls(_adopted(INPUT_TABLE, inputs), _adopted(CONTEXT_TABLE, contexts))

    def arrays(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """Writable copies of the two tables' values, the input table first."""
        return tuple(  # type: ignore[return-value]
            np.array(parameter.tensor.numpy(), copy=True) for parameter in self.parameters
        )

    @property
    def parameters(self) -> list[NamedParameter]:
        """Both tables, the input table first."""
        return [*self.inputs.parameters(), *self.contexts.parameters()]

    def loss(self, batch: PairBatch) -> TensorValue:
        """The batch's summed loss, a scalar on the tape (see the module docstring)."""
        centre_vectors = self.inputs(batch.centres)  # [B, d]
        target_vectors = self.contexts(batch.targets)  # [B, 1 + K, d]
        scores = target_vectors.matvec(centre_vectors)  # [B, 1 + K]
        labels = Tensor.from_numpy(batch.labels)
        total = scores.mul(labels).log_sigmoid().sum()
        return total.mul(_minus_one(total.dtype))


def _table(name: str, values: npt.NDArray[Any]) -> Embedding:
    return Embedding.from_parameter(NamedParameter.from_tensor(name, Tensor.from_numpy(values)))


def _adopted(name: str, values: npt.NDArray[Any]) -> Embedding:
    return Embedding.from_parameter(
        NamedParameter.from_value(name, parameter_from_owned_array(values))
    )


@functools.cache
def _minus_one(dtype: np.dtype[Any]) -> TensorValue:
    """The constant ``-1`` of a dtype, one leaf for every batch (a constant never changes)."""
    return TensorValue.constant(Tensor.from_numpy(np.array(-1, dtype=dtype)))


def reference_block(
    model: SkipGram,
    optimizer: SGD,
    pairs: Iterator[Pair],
    words_total: int,
    rates: tuple[float, float],
) -> tuple[float, int]:
    """Train on ``pairs`` one at a time with the tape: the loss of one pair, its backward and
    an SGD step at the pair's learning rate (none at a rate of 0). Returns the summed loss and
    the pairs."""
    dtype = model.parameters[0].tensor.dtype
    steps = ((model.loss(PairBatch.of([pair], dtype)), pair.position, 1) for pair in pairs)
    return step_each(optimizer, steps, words_total, rates)


def step_each(
    optimizer: SGD,
    steps: Iterator[tuple[TensorValue, int, int]],
    words_total: int,
    rates: tuple[float, float],
) -> tuple[float, int]:
    """For each sample's loss, position and pairs in turn: a backward and an SGD step at the
    position's learning rate (none at 0); the summed loss and pairs."""
    total, count = 0.0, 0
    for loss, position, pairs in steps:  # each loss is made once the step before is taken
        rate = learning_rate(position, words_total, rates)
        total += float(loss.numpy())
        if rate > 0:
            optimizer.learning_rate = rate
            optimizer.backward_step(loss)
        count += pairs
    return total, count
