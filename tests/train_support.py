"""A small corpus with the report's word groups in it, and ``ch18 train`` run in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.training.kernels import SENTENCE_END, UNKNOWN_WORD
from llm_from_scratch.training.vocabulary import Vocabulary

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
    """Ctrl-C in the main thread when it reads the ``number``-th piece of the corpus."""
    calls = []
    real_tokens = Vocabulary.tokens

    def interrupted(self: Vocabulary, text: str) -> Any:
        calls.append(1)
        if len(calls) == number:
            raise KeyboardInterrupt
        return real_tokens(self, text)

    monkeypatch.setattr(Vocabulary, "tokens", interrupted)
