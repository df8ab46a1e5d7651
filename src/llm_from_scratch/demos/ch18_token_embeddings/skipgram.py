"""Skip-gram with negative sampling (Mikolov et al., 2013): the samples and the loss.

The model has two tables. The input table is the chapter's :class:`~llm_from_scratch.nn.Embedding`
named ``token_embedding.weight``, ``[V, d]``: the vectors the run keeps. The output table
``context_embedding.weight`` holds one context vector per word. For a centre word ``c`` and a word
``o`` seen near it, with ``K`` negatives ``k`` drawn from the noise distribution, the loss is

    ``-log sigmoid(u_o . v_c) - sum over k of log sigmoid(-u_k . v_c)``

where ``v`` rows come from the input table and ``u`` rows from the output table. A batch of ``B``
pairs is written with the tape's operations: two row lookups (``[B]`` centres, ``[B, 1 + K]``
targets), :meth:`~llm_from_scratch.autograd.TensorValue.matvec` (the ``B * (1 + K)`` scores), a
product with the labels (``+1`` for the context word, ``-1`` for a negative, ``0`` for a negative
that is the context word itself, which word2vec skips), ``log_sigmoid``, ``sum`` and a product
with ``-1``: the loss is the sum over the batch's pairs, so that a batch updates a row as much
as word2vec's one-pair-at-a-time updates would.

The samples follow word2vec, drawn with NumPy's ``Generator`` (one stream for a run):

- **frequent-word subsampling**: an occurrence of a word of count ``c`` among ``T`` words is
  kept with probability ``(sqrt(c / (s T)) + 1) (s T) / c`` (at most 1; ``s`` is ``sample``,
  ``1e-3``), drawn once per occurrence and epoch; the words that are not in the vocabulary are
  dropped before the windows are cut, as word2vec drops them;
- **a dynamic window**: each kept word ``i`` draws ``b`` uniformly from ``0..window-1`` and
  pairs with the kept words at most ``window - b`` places away in its own sentence, nearer
  words so more often;
- **negatives** from the unigram distribution raised to the power ``3/4`` (:class:`NoiseTable`,
  Walker's alias method: exact probabilities, two draws per negative), ``K`` per pair;
- pairs in corpus order (by centre, then by context position), cut into batches.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.autograd import TensorValue
from llm_from_scratch.autograd.value import constant_from_owned_array
from llm_from_scratch.nn import Embedding, NamedParameter, SplitMix64
from llm_from_scratch.tensor import Tensor

__all__ = [
    "CONTEXT_TABLE",
    "INPUT_TABLE",
    "NOISE_POWER",
    "SAMPLE",
    "NoiseTable",
    "PairBatch",
    "SkipGram",
    "epoch_pairs",
    "keep_probabilities",
    "pair_batches",
    "samples",
]

INPUT_TABLE: Final = "token_embedding.weight"
"""The name of the input table, the vectors a run keeps."""
CONTEXT_TABLE: Final = "context_embedding.weight"
"""The name of the output (context) table."""
SAMPLE: Final = 1e-3
"""word2vec's subsampling threshold ``s``."""
NOISE_POWER: Final = 0.75
"""The power of the unigram counts in the noise distribution."""

CHUNK_BATCHES: Final = 32
"""Batches whose negatives are drawn at once."""

IdArray = npt.NDArray[np.intp]


def keep_probabilities(counts: npt.NDArray[Any], sample: float = SAMPLE) -> npt.NDArray[np.float64]:
    """Each word's probability of being kept at an occurrence: ``(sqrt(c / (s T)) + 1) (s T) /
    c``, at most 1 (``T`` is the sum of ``counts``; a word of count 0 is never kept).

    Example:
        >>> keep_probabilities(np.array([1000, 10, 0]), sample=1e-3).round(4).tolist()
        [0.0328, 0.4188, 0.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    threshold = sample * counts.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = (np.sqrt(counts / threshold) + 1.0) * threshold / counts
    return np.where(counts > 0, np.minimum(keep, 1.0), 0.0)


def epoch_pairs(
    ids: npt.NDArray[Any],
    sentence_starts: npt.NDArray[Any],
    keep: npt.NDArray[np.float64],
    window: int,
    rng: np.random.Generator,
) -> tuple[IdArray, IdArray]:
    """One epoch's (centre, context) pairs: subsampled, in dynamic windows, in corpus order.

    Args:
        ids: the corpus as word IDs, ``[N]``.
        sentence_starts: where each sentence starts in ``ids``, increasing, from 0 (an offset
            ``N`` after the last one, as :meth:`Vocabulary.encode` gives it, is allowed).
        keep: each word's probability of being kept (:func:`keep_probabilities`); a word
            with probability 0 (outside the vocabulary) is always dropped.
        window: the largest distance between a centre and its context.
        rng: draws ``N`` uniform numbers (subsampling), then one window per kept word.

    Returns:
        ``centres`` and ``contexts``, word IDs of the same length: for each kept word in
        order, its context words from the farthest on the left to the farthest on the right.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> centres, contexts = epoch_pairs(
        ...     np.array([0, 1, 2, 3, 4]), np.array([0, 2]), np.ones(5), 5, rng)
        >>> list(zip(centres.tolist(), contexts.tolist()))
        [(0, 1), (1, 0), (2, 3), (2, 4), (3, 2), (3, 4), (4, 3)]
    """
    ids = np.asarray(ids)
    kept = rng.random(ids.size) < keep[ids]
    index: Any = np.int32 if ids.size < 2**31 // (2 * window + 1) else np.intp
    words = ids[kept].astype(index)
    # Each kept word's room to the first and the last kept word of its sentence.
    first_of_sentence = np.zeros(ids.size, dtype=np.int8)
    starts = np.asarray(sentence_starts, dtype=np.intp)
    first_of_sentence[starts[starts < ids.size]] = 1
    sentence = np.cumsum(first_of_sentence, dtype=index)[kept]
    position = np.arange(words.size, dtype=index)
    new_sentence = np.ones(words.size, dtype=bool)
    np.not_equal(sentence[1:], sentence[:-1], out=new_sentence[1:])
    firsts = np.flatnonzero(new_sentence).astype(index)
    lengths = np.diff(np.append(firsts, words.size)).astype(index)
    left_room = position - np.repeat(firsts, lengths)
    right_room = np.repeat(firsts + lengths - 1, lengths) - position
    reach = (window - rng.integers(0, window, size=words.size)).astype(index)
    left = np.minimum(reach, left_room)
    counts = left + np.minimum(reach, right_room)
    # Pair j of word i (its pairs start at s_i) has the offset k = j - s_i - left_i, one more
    # from 0 on: -left_i .. -1, then 1 .. right_i.
    offset = np.arange(int(counts.sum()), dtype=index)
    offset -= np.repeat(np.cumsum(counts, dtype=index) - counts + left, counts)
    offset += offset >= 0
    offset += np.repeat(position, counts)
    return np.repeat(words, counts).astype(np.intp), words[offset].astype(np.intp)


@dataclass(frozen=True, eq=False)
class NoiseTable:
    """The noise distribution ``P(w) ~ count(w) ** 0.75`` as Walker's alias table.

    A draw picks a slot ``i`` uniformly and keeps it with probability ``accept[i]``, else takes
    ``alias[i]``: two uniform draws per sample, exact probabilities (up to rounding).

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
        weights = np.asarray(counts, dtype=np.float64) ** power
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

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> IdArray:
        """Word IDs of ``shape`` drawn from the noise distribution: one uniform number ``x``
        in ``[0, V)`` per draw, whose integer part is the slot and whose fraction is the coin
        (53 bits hold both)."""
        size = self.accept.size
        scaled = rng.random(shape) * size
        slots = np.minimum(scaled.astype(np.intp), size - 1)
        keep = (scaled - slots) < self.accept[slots]
        return np.where(keep, slots, self.alias[slots])


@dataclass(frozen=True)
class PairBatch:
    """One batch: ``B`` centres, and for each pair its context word followed by ``K``
    negatives (``targets``, ``[B, 1 + K]``) with their labels (``+1``, ``-1``, or ``0`` for a
    negative equal to the context word)."""

    centres: IdArray
    targets: IdArray
    labels: npt.NDArray[Any]

    @property
    def size(self) -> int:
        """``B``, the number of pairs."""
        return int(self.centres.size)


def pair_batches(
    centres: IdArray,
    contexts: IdArray,
    noise: NoiseTable,
    negatives: int,
    batch_size: int,
    rng: np.random.Generator,
    dtype: Any = np.float32,
) -> Iterator[PairBatch]:
    """The pairs in order, ``batch_size`` at a time (the last batch may be smaller), each with
    ``negatives`` noise words per pair, drawn from ``rng`` for :data:`CHUNK_BATCHES` batches at
    once."""
    chunk = batch_size * CHUNK_BATCHES
    for begin in range(0, centres.size, chunk):
        chunk_centres = centres[begin : begin + chunk]
        chunk_contexts = contexts[begin : begin + chunk]
        drawn = noise.draw(rng, (chunk_centres.size, negatives))
        targets = np.empty((chunk_centres.size, 1 + negatives), dtype=np.intp)
        targets[:, 0] = chunk_contexts
        targets[:, 1:] = drawn
        labels = np.where(drawn == chunk_contexts[:, None], 0, -1).astype(dtype)
        labels = np.concatenate([np.ones((labels.shape[0], 1), dtype=dtype), labels], axis=1)
        for start in range(0, chunk_centres.size, batch_size):
            stop = start + batch_size
            yield PairBatch(chunk_centres[start:stop], targets[start:stop], labels[start:stop])


Sample = tuple[int, int, "PairBatch | None"]
"""One item of :func:`samples`: the epoch, its number of pairs, and a batch, or None after the
epoch's last batch."""


def samples(
    ids: npt.NDArray[Any],
    sentence_starts: npt.NDArray[Any],
    counts: npt.NDArray[Any],
    window: int,
    negatives: int,
    batch_size: int,
    epochs: int,
    rng: np.random.Generator,
    dtype: Any = np.float32,
) -> Iterator[Sample]:
    """Every batch of a run in order, each epoch closed by ``(epoch, pairs, None)``: the pairs
    of :func:`epoch_pairs` with the vocabulary's ``counts`` (subsampling and the noise
    distribution), cut by :func:`pair_batches`. Every draw of the run comes from ``rng``, in
    this order, so the samples do not depend on who reads them or when."""
    keep = keep_probabilities(counts)
    noise = NoiseTable.of(counts)
    for epoch in range(epochs):
        centres, contexts = epoch_pairs(ids, sentence_starts, keep, window, rng)
        for batch in pair_batches(centres, contexts, noise, negatives, batch_size, rng, dtype):
            yield epoch, centres.size, batch
        yield epoch, centres.size, None


@dataclass(frozen=True, eq=False)
class SkipGram:
    """The two tables of skip-gram and its loss on a batch."""

    inputs: Embedding
    contexts: Embedding

    @classmethod
    def new(cls, vocabulary_size: int, width: int, seed: int, dtype: Any = np.float32) -> SkipGram:
        """An input table drawn Xavier-uniform by the chapter's layer from
        ``SplitMix64.from_seed(seed)``, and a context table of zeros (as word2vec starts)."""
        inputs = Embedding.new(
            INPUT_TABLE, vocabulary_size, width, SplitMix64.from_seed(seed), dtype=dtype
        )
        zeros = Tensor.from_numpy(np.zeros((vocabulary_size, width), dtype=dtype))
        contexts = Embedding.from_parameter(NamedParameter.from_tensor(CONTEXT_TABLE, zeros))
        return cls(inputs, contexts)

    @property
    def parameters(self) -> list[NamedParameter]:
        """Both tables, the input table first."""
        return [*self.inputs.parameters(), *self.contexts.parameters()]

    def loss(self, batch: PairBatch) -> TensorValue:
        """The batch's summed loss, a scalar on the tape (see the module docstring)."""
        centre_vectors = self.inputs(batch.centres)  # [B, d]
        target_vectors = self.contexts(batch.targets)  # [B, 1 + K, d]
        scores = target_vectors.matvec(centre_vectors)  # [B, 1 + K]
        # A constant leaf of a copy of the labels (a Tensor would also check every value, a
        # cost that shows at one batch every millisecond or two).
        labels = constant_from_owned_array(np.array(batch.labels, copy=True))
        total = scores.mul(labels).log_sigmoid().sum()
        return total.mul(_minus_one(total.dtype))


@functools.cache
def _minus_one(dtype: np.dtype[Any]) -> TensorValue:
    """The constant ``-1`` of a dtype, one leaf for every batch (a constant never changes)."""
    return TensorValue.constant(Tensor.from_numpy(np.array(-1, dtype=dtype)))
