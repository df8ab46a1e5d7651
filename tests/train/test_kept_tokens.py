"""A run of several epochs keeps its corpus's tokens for the epochs after the first: it reads and
tokenizes the corpus once, keeps at most its limit (the first blocks of a larger corpus, the
rest read again each epoch), plans the memory it keeps, and trains the bytes a run keeping
nothing trains."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import OptionError
from llm_from_scratch.training import sources
from llm_from_scratch.training.options import TrainOptions, planned_megabytes
from llm_from_scratch.training.sources import Block, KeptBlocks, kept_tokens_bytes
from llm_from_scratch.training.vocabulary import Vocabulary

from checks import raises_rule
from train_support import run_train, write_corpus

FILES = 4


def corpus_of_files(folder: Path) -> Path:
    """A folder of :data:`FILES` small files: one block each an epoch."""
    corpus = folder / "corpus"
    corpus.mkdir()
    for index in range(FILES):
        write_corpus(folder, lines=60, seed=index).rename(corpus / f"part{index}.txt")
    return corpus


def counted_tokenizing(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a piece of text is tokenized."""
    calls: list[int] = []
    real_tokens = Vocabulary.tokens

    def counted(self: Vocabulary, text: str) -> Any:
        calls.append(1)
        return real_tokens(self, text)

    monkeypatch.setattr(Vocabulary, "tokens", counted)
    return calls


def test_a_run_tokenizes_its_corpus_once_and_trains_what_a_run_keeping_nothing_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = corpus_of_files(tmp_path)
    calls = counted_tokenizing(monkeypatch)
    options = ("--epochs", "3", "--threads", "1")
    assert run_train(corpus, tmp_path / "kept", *options)[0] == 0
    assert len(calls) == FILES
    monkeypatch.setattr(sources, "KEPT_TOKENS_BYTES", 0)
    assert run_train(corpus, tmp_path / "read", *options)[0] == 0
    assert len(calls) == FILES + 3 * FILES
    kept, read = (tmp_path / name / "table.safetensors" for name in ("kept", "read"))
    assert kept.read_bytes() == read.read_bytes()


class FourFiles:
    """A source of four files of one block each (10 tokens, ending at byte 100), recording
    where each read starts."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, int]] = []

    def blocks(self, vocabulary: object, file: int = 0, offset: int = 0) -> Iterator[Block]:
        self.reads.append((file, offset))
        for index in range(file, FILES):
            if index > file or offset < 100:
                yield Block(np.arange(10, dtype=np.int32) + index - 2, index, 100)


def test_a_corpus_over_the_limit_keeps_its_first_blocks_and_reads_on_after_them() -> None:
    source, kept = FourFiles(), KeptBlocks(limit=25, vocabulary_size=50)
    first = list(kept.blocks_from(source, None, 0, 0))  # type: ignore[arg-type]
    again = list(kept.blocks_from(source, None, 0, 0))  # type: ignore[arg-type]
    assert [block.tokens.dtype for block in kept.blocks] == [np.int8, np.int8]
    assert (kept.size, kept.complete, source.reads) == (20, False, [(0, 0), (1, 100)])
    assert [block.tokens.dtype for block in again] == [np.int32] * FILES
    for ours, read in zip(again, first, strict=True):
        assert (ours.tokens.tolist(), ours.file, ours.end) == (read.tokens.tolist(), read.file, 100)


def test_a_resumed_epoch_reads_from_its_position_and_keeps_nothing() -> None:
    source, kept = FourFiles(), KeptBlocks(limit=1000, vocabulary_size=50)
    assert [block.file for block in kept.blocks_from(source, None, 2, 0)] == [2, 3]  # type: ignore[arg-type]
    assert (kept.blocks, source.reads) == ([], [(2, 0)])
    assert len(list(kept.blocks_from(source, None, 0, 0))) == FILES  # type: ignore[arg-type]
    assert len(list(kept.blocks_from(source, None, 0, 0))) == FILES  # type: ignore[arg-type]
    assert (kept.complete, source.reads) == (True, [(2, 0), (0, 0)])


def test_the_kept_bytes_are_two_narrow_tokens_a_word_after_one_epoch_up_to_the_limit() -> None:
    assert kept_tokens_bytes(1000, 100, 1) == 0
    assert kept_tokens_bytes(1000, 100, 2) == 2 * 1000 * 1
    assert kept_tokens_bytes(1000, 40_000, 3) == 2 * 1000 * 4
    assert kept_tokens_bytes(10**12, 100, 2) == sources.KEPT_TOKENS_BYTES


def test_the_memory_plan_counts_the_kept_tokens_and_a_refusal_names_them() -> None:
    assert planned_megabytes(1000, 8, 2**20) - planned_megabytes(1000, 8) == 1
    options = TrainOptions(dim=8, memory_budget=planned_megabytes(1000, 8))
    options.check_memory(1000)
    with raises_rule(OptionError, "train.option", option="memory-budget") as caught:
        options.check_memory(1000, 3 * 2**20)
    assert "a 1000x8 table and 3 MB of kept tokens" in caught.value.requirement
