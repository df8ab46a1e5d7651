"""A small corpus with the report's word groups in it, and ``ch18 train`` run in process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.training.kernels import SENTENCE_END, UNKNOWN_WORD
from llm_from_scratch.training.sources import KeptBlocks

from cli_support import run_main

GROUPS = {
    "family": ["father", "mother", "brother", "sister", "son", "daughter"],
    "numbers": ["one", "two", "three", "four", "five", "six"],
    "royalty": ["king", "queen", "prince", "princess", "duke"],
    "time": ["morning", "night", "evening", "noon", "day"],
}
FRAMES = {
    "family": "my {} is kind and loves me well",
    "numbers": "he counted {} coins upon the table",
    "royalty": "long live the {} of this land",
    "time": "we met at {} by the old gate",
}


def random_block(rng: np.random.Generator, rows: int, size: int) -> np.ndarray[Any, Any]:
    """Tokens of ``rows - 1`` words (the last row is the unknown token), with some unknown
    words and line ends."""
    tokens = rng.integers(0, rows - 1, size=size).astype(np.int32)
    tokens[rng.random(size) < 0.1] = UNKNOWN_WORD
    tokens[rng.random(size) < 0.15] = SENTENCE_END
    return tokens


def sentences_of(tokens: np.ndarray[Any, Any]) -> list[list[tuple[int, int]]]:
    """Each sentence's known words with their positions among the words read."""
    found: list[list[tuple[int, int]]] = [[]]
    read = 0
    for token in tokens.tolist():
        if token == SENTENCE_END:
            found.append([])
            continue
        if token >= 0:
            found[-1].append((token, read))
        read += 1
    return found


def write_corpus(folder: Path, lines: int = 400, seed: int = 0) -> Path:
    """A corpus file: each line one group's frame with one of its words."""
    rng = np.random.default_rng(seed)
    names = sorted(GROUPS)
    text = []
    for _ in range(lines):
        group = names[int(rng.integers(len(names)))]
        word = GROUPS[group][int(rng.integers(len(GROUPS[group])))]
        text.append(FRAMES[group].format(word).capitalize() + ".")
    path = folder / "corpus.txt"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def run_train(corpus: Path, output: Path, *options: str) -> tuple[int, str, str]:
    """``llm-from-scratch ch18 train`` in this process: the exit status, stdout and stderr."""
    argv = ["ch18", "train", "--corpus", str(corpus), "--output", str(output)]
    argv += ["--dim", "8", "--window", "2", "--epochs", "2", "--min-count", "2"]
    return run_main([*argv, *options])


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` (hidden ones too) by name, with its bytes."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def interrupt_at_piece(monkeypatch: pytest.MonkeyPatch, number: int) -> None:
    """Ctrl-C in the main thread when it takes the ``number``-th block of the corpus (a piece of
    a file, read or kept from an earlier epoch)."""
    calls = []
    real_blocks = KeptBlocks.blocks_from

    def interrupted(self: KeptBlocks, *arguments: Any) -> Iterator[Any]:
        for block in real_blocks(self, *arguments):
            calls.append(1)
            if len(calls) == number:
                raise KeyboardInterrupt
            yield block

    monkeypatch.setattr(KeptBlocks, "blocks_from", interrupted)


# Public calls that raise the training's rules, for tests/errors/test_error_catalogue.py --------


def _kept_model(folder: Path) -> Path:
    """A tiny run of token lists whose model is kept in ``folder/kept``."""
    from llm_from_scratch.training import Run, TrainOptions

    sentences = [["to", "be", "or", "not", "to", "be"]] * 5
    options = TrainOptions(sentences, folder / "o", dim=4, min_count=1, epochs=1, keep_model=True)
    Run.start(options, 1).train().save(folder / "kept")
    return folder / "kept"


def _trained_twice() -> object:
    from llm_from_scratch.training import Run, TrainOptions

    run = Run.start(TrainOptions([["to", "be"]] * 3, dim=4, min_count=1, epochs=1), 1)
    run.train()
    return run.train()


def _changing_corpus() -> object:
    from llm_from_scratch.training import Run, TrainOptions

    class Growing:
        passes = 0

        def __iter__(self) -> Any:
            self.passes += 1
            return iter([["to", "be"]] * (3 + self.passes))

    return Run.start(TrainOptions(Growing(), dim=4, min_count=1, epochs=1), 1).train()


def _in_folder(call: Any) -> Any:
    def run() -> object:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            return call(Path(folder))

    return run


def _continued(folder: Path, corpus: Any = (("to", "be"),), **options: Any) -> object:
    from llm_from_scratch.training import Run

    return Run.continue_from(folder, 1, corpus=[list(s) for s in corpus], **options)


def _unreadable_model(folder: Path) -> object:
    for name in ("table.safetensors", "tokenizer.json", "model.safetensors"):
        (folder / name).write_bytes(b"not a file of the pair")
    return _continued(folder)


def _source_count(sentences: Any) -> Any:
    from llm_from_scratch.training.sources import SentenceSource

    return lambda: SentenceSource(sentences).count()


TRAIN_TRIGGERS: dict[str, Any] = {
    "train.one-shot-corpus": lambda: _continued_options_of(iter([["to", "be"]])),
    "train.finished": _trained_twice,
    "gensim.name": lambda: _continued_options_of([["to"]], vector_size=5),
    "corpus.sentence": _source_count([["to", "be"], "or not"]),
    "corpus.token": _source_count([["to", 5]]),
    "corpus.changed": _changing_corpus,
    "corpus.no-known-words": _in_folder(
        lambda folder: _continued(_kept_model(folder), corpus=[["zebra"]])
    ),
    "continue.missing": _in_folder(_continued),
    "continue.unreadable": _in_folder(_unreadable_model),
    "continue.options": _in_folder(lambda folder: _continued(_kept_model(folder), dim=9)),
}
"""One public call per rule of the training's corpus, options and continued runs."""


def _continued_options_of(corpus: Any, **options: Any) -> object:
    from llm_from_scratch.training import TrainOptions

    return TrainOptions(corpus, **options).checked(1)
