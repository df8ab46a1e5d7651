"""The other trainers of ``bench train``, each a fresh process: ``python -m
llm_from_scratch.bench.train_runners gensim|gensim-file|torch --corpus PATH --output DIR ...``
trains, writes ``DIR/vectors.npy`` and ``DIR/words.json`` and prints its seconds."""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from llm_from_scratch.files import replace_file
from llm_from_scratch.training.corpus import corpus_files, count_words, pieces
from llm_from_scratch.training.kernels import SENTENCE_END
from llm_from_scratch.training.options import RATES
from llm_from_scratch.training.skipgram import NoiseTable, keep_probabilities, learning_rate
from llm_from_scratch.training.vocabulary import DEFAULT_MIN_COUNT, Vocabulary

RUNNERS = ("gensim", "gensim-file", "torch")
BATCH_PAIRS: Final = 4096
"""Pairs per PyTorch step."""


def run_gensim(
    corpus: Path, epochs: int, threads: int, seed: int, dim: int, from_file: bool = False
) -> tuple[Any, list[str]]:
    """Train gensim's skip-gram on the sentences of ``corpus`` (one a line), streamed or
    (``from_file``) in its ``corpus_file`` mode; the input vectors and the word of each row."""
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    source = {"corpus_file": str(corpus)} if from_file else {"sentences": LineSentence(corpus)}
    model = Word2Vec(
        **source,
        sg=1,
        vector_size=dim,
        window=5,
        negative=5,
        min_count=DEFAULT_MIN_COUNT,
        epochs=epochs,
        workers=threads,
        seed=seed,
    )
    return np.asarray(model.wv.vectors, dtype=np.float32), list(model.wv.index_to_key)


def block_pairs_numpy(
    tokens: np.ndarray, keep: np.ndarray, window: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A block's (centre, context) pairs, vectorized: the words of the vocabulary subsampled,
    each kept word paired with the kept words of its sentence at most ``window - b`` places
    away (``b`` uniform in ``0..window-1``)."""
    sentence = np.cumsum(tokens == SENTENCE_END)
    known = tokens >= 0
    kept = known.copy()
    kept[known] = rng.random(int(known.sum())) < keep[tokens[known]]
    words, sentence = tokens[kept].astype(np.intp), sentence[kept]
    centres, contexts = [], []
    reach = window - rng.integers(0, window, size=words.size)
    for offset in range(1, window + 1):
        for sign in (-1, 1):
            lo, hi = (offset, words.size) if sign < 0 else (0, words.size - offset)
            if hi <= lo:
                continue
            at = np.arange(lo, hi)
            other = at + sign * offset
            ok = (sentence[at] == sentence[other]) & (reach[at] >= offset)
            centres.append(words[at[ok]])
            contexts.append(words[other[ok]])
    if not centres:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    return np.concatenate(centres), np.concatenate(contexts)


def run_torch(
    corpus: Path, epochs: int, threads: int, seed: int, dim: int
) -> tuple[Any, list[str]]:
    """Train the skip-gram model of ``ch18 train`` written with PyTorch."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    files, counted = count_words(corpus_files(corpus))
    vocabulary = Vocabulary.from_counts(counted, DEFAULT_MIN_COUNT)
    words_total = sum(counted.values()) * epochs
    rows = vocabulary.vocabulary_size
    inputs = torch.nn.Embedding(rows, dim, sparse=True)
    torch.nn.init.xavier_uniform_(inputs.weight)
    contexts = torch.nn.Embedding(rows, dim, sparse=True)
    torch.nn.init.zeros_(contexts.weight)
    optimizer = torch.optim.SGD([inputs.weight, contexts.weight], lr=RATES[0])
    counts = np.asarray(vocabulary.counts)
    keep, noise = keep_probabilities(counts), NoiseTable.of(counts)
    rng = np.random.default_rng(seed)
    model, read = (torch, inputs, contexts, optimizer, noise, rng), 0
    for _ in range(epochs):
        for file in files:
            for piece in pieces(file):
                tokens = vocabulary.tokens(piece.text)
                read += int(np.count_nonzero(tokens != SENTENCE_END))
                for group in optimizer.param_groups:
                    group["lr"] = learning_rate(read, words_total, RATES)
                centres, targets = block_pairs_numpy(tokens, keep, 5, rng)
                for start in range(0, centres.size, BATCH_PAIRS):
                    batch = slice(start, start + BATCH_PAIRS)
                    _torch_step(model, centres[batch], targets[batch])
    vectors = inputs.weight.detach().numpy()[: rows - 1]  # the unknown token's row left out
    return np.ascontiguousarray(vectors, dtype=np.float32), list(vocabulary.words[:-1])


def _torch_step(model: tuple[Any, ...], centres: np.ndarray, context_words: np.ndarray) -> None:
    torch, inputs, contexts, optimizer, noise, rng = model
    size = noise.accept.size
    scaled = rng.random((centres.size, 5)) * size
    slots = np.minimum(scaled.astype(np.intp), size - 1)
    drawn = np.where(scaled - slots < noise.accept[slots], slots, noise.alias[slots])
    targets = np.concatenate([context_words[:, None], drawn], axis=1)
    labels = np.where(drawn == context_words[:, None], 0.0, -1.0).astype(np.float32)
    labels = np.concatenate([np.ones((centres.size, 1), np.float32), labels], axis=1)
    centre_vectors = inputs(torch.from_numpy(centres))
    target_vectors = contexts(torch.from_numpy(targets))
    scores = torch.bmm(target_vectors, centre_vectors.unsqueeze(2)).squeeze(2)
    loss = -torch.nn.functional.logsigmoid(scores * torch.from_numpy(labels)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def main(argv: Sequence[str] | None = None) -> int:
    """The runner process: train, write the vectors and words, print the training seconds."""
    parser = argparse.ArgumentParser(prog="python -m llm_from_scratch.bench.train_runners")
    parser.add_argument("runner", choices=RUNNERS)
    for name in ("--corpus", "--output"):
        parser.add_argument(name, type=Path, required=True)
    for name, default in (("--epochs", 5), ("--threads", 1), ("--seed", 1), ("--dim", 100)):
        parser.add_argument(name, type=int, default=default)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    settings = (args.corpus, args.epochs, args.threads, args.seed, args.dim)
    if args.runner == "torch":
        vectors, words = run_torch(*settings)
    else:
        vectors, words = run_gensim(*settings, from_file=args.runner == "gensim-file")
    seconds = time.perf_counter() - start
    args.output.mkdir(parents=True, exist_ok=True)
    array = io.BytesIO()
    np.save(array, vectors)
    replace_file(str(args.output / "vectors.npy"), [array.getbuffer()])
    replace_file(str(args.output / "words.json"), [memoryview(json.dumps(words).encode())])
    print(json.dumps({"seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
