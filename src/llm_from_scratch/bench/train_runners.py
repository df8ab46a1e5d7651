"""The other two trainers of ``llm-from-scratch bench train``, each run as a fresh process:
gensim's ``Word2Vec`` and the same skip-gram model written with PyTorch.

``python -m llm_from_scratch.bench.train_runners gensim|torch --corpus PATH --output DIR
--epochs E --threads T --seed S`` trains on the corpus as ``ch18 train`` reads it (the same
sentences, words and vocabulary rule), writes ``DIR/vectors.npy`` (the input table, float32) and
``DIR/words.json`` (the word of each row) and prints its training seconds as JSON.

- **gensim**: ``Word2Vec(sentences, sg=1, vector_size=100, window=5, negative=5, min_count=5,
  epochs=E, workers=T, seed=S)``, its defaults otherwise (``sample=1e-3``, ``alpha`` 0.025 falling
  to ``0.0001``). Its sentences are the corpus's lines as lists of words.
- **torch**: the model of ``ch18 train`` on PyTorch's own operations: two
  ``nn.Embedding(V, d, sparse=True)`` tables (the input table Xavier-uniform, the context table
  zeros), scores by ``torch.bmm``, ``F.logsigmoid``, a summed loss and ``torch.optim.SGD`` with
  the same linearly falling learning rate, on the very pairs and negatives our sampler draws
  (:mod:`~llm_from_scratch.demos.ch18_token_embeddings.skipgram`) in batches of the same size,
  ``torch.set_num_threads(T)``.

gensim and PyTorch are imported here only, by these processes: the package never needs them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_from_scratch.demos.ch18_token_embeddings.corpus import (
    DEFAULT_MIN_COUNT,
    corpus_files,
    load_corpus,
    sentences,
)
from llm_from_scratch.demos.ch18_token_embeddings.skipgram import (
    NoiseTable,
    epoch_pairs,
    keep_probabilities,
    pair_batches,
)
from llm_from_scratch.demos.ch18_token_embeddings.train import (
    BATCH_PAIRS,
    LEARNING_RATE,
    MIN_LEARNING_RATE,
)

RUNNERS = ("gensim", "torch")


def run_gensim(
    corpus: Path, epochs: int, threads: int, seed: int, dim: int
) -> tuple[Any, list[str]]:
    """Train gensim's skip-gram; the input vectors and the word of each row."""
    from gensim.models import Word2Vec

    lines = list(sentences(corpus_files(corpus)))
    model = Word2Vec(
        lines,
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


def run_torch(
    corpus: Path, epochs: int, threads: int, seed: int, dim: int
) -> tuple[Any, list[str]]:
    """Train the skip-gram model of ``ch18 train`` written with PyTorch."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    encoded = load_corpus(corpus, DEFAULT_MIN_COUNT)
    vocabulary = encoded.vocabulary
    rows = vocabulary.vocabulary_size
    inputs = torch.nn.Embedding(rows, dim, sparse=True)
    torch.nn.init.xavier_uniform_(inputs.weight)
    contexts = torch.nn.Embedding(rows, dim, sparse=True)
    torch.nn.init.zeros_(contexts.weight)
    optimizer = torch.optim.SGD([inputs.weight, contexts.weight], lr=LEARNING_RATE)
    counts = np.asarray(vocabulary.counts)
    keep, noise = keep_probabilities(counts), NoiseTable.of(counts)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        centres, pairs_contexts = epoch_pairs(encoded.ids, encoded.starts, keep, 5, rng)
        done = 0
        for batch in pair_batches(centres, pairs_contexts, noise, 5, BATCH_PAIRS, rng):
            fraction = (epoch + done / centres.size) / epochs
            for group in optimizer.param_groups:
                group["lr"] = LEARNING_RATE - (LEARNING_RATE - MIN_LEARNING_RATE) * fraction
            centre_vectors = inputs(torch.from_numpy(batch.centres))
            target_vectors = contexts(torch.from_numpy(batch.targets))
            scores = torch.bmm(target_vectors, centre_vectors.unsqueeze(2)).squeeze(2)
            labels = torch.from_numpy(batch.labels)
            loss = -torch.nn.functional.logsigmoid(scores * labels).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += batch.size
    vectors = inputs.weight.detach().numpy()[: rows - 1]  # the unknown token's row left out
    return np.ascontiguousarray(vectors, dtype=np.float32), list(vocabulary.words[:-1])


def main(argv: Sequence[str] | None = None) -> int:
    """The runner process: train, write the vectors and words, print the training seconds."""
    parser = argparse.ArgumentParser(prog="python -m llm_from_scratch.bench.train_runners")
    parser.add_argument("runner", choices=RUNNERS)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dim", type=int, default=100)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    trainer = run_gensim if args.runner == "gensim" else run_torch
    vectors, words = trainer(args.corpus, args.epochs, args.threads, args.seed, args.dim)
    seconds = time.perf_counter() - start
    args.output.mkdir(parents=True, exist_ok=True)
    np.save(args.output / "vectors.npy", vectors)
    (args.output / "words.json").write_text(json.dumps(words), encoding="utf-8")
    print(json.dumps({"seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
