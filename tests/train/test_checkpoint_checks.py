"""A checkpoint is checked whole before a run uses it: each field the issue's fault runs edited is
refused as ``resume.unreadable`` naming it (its digest computed again, as a forger would, so
that the field's own check answers), an edit that keeps the digest is refused by the digest, and
a corpus file edited without changing its size is ``resume.corpus`` naming the file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from crafted_files import Stored

from llm_from_scratch.errors import MismatchError
from llm_from_scratch.training.checkpoint import (
    DIGEST_KEY,
    content_digest,
    load_checkpoint,
    saved_options,
)
from llm_from_scratch.training.corpus import corpus_files
from llm_from_scratch.training.options import CHECKPOINT_FILE, TrainOptions

from checks import raises_rule
from cli_support import run_main
from train_support import interrupt_at_piece, run_train, write_corpus


@dataclass(frozen=True)
class Saved:
    corpus: Path
    stored: Stored


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Saved:
    """A checkpoint in the second epoch of a run on a corpus of two files."""
    root = tmp_path_factory.mktemp("saved")
    corpus = root / "corpus"
    corpus.mkdir()
    for index in range(2):
        write_corpus(root, lines=150, seed=index).rename(corpus / f"part{index}.txt")
    with pytest.MonkeyPatch.context() as patch:
        interrupt_at_piece(patch, 4)
        options = ("--epochs", "2", "--threads", "1", "--checkpoint-minutes", "0.000001")
        assert run_train(corpus, root / "cut", *options)[0] == 130
    return Saved(corpus, Stored.read(root / "cut" / CHECKPOINT_FILE))


def resumed(folder: Path, stored: Stored, forge: bool = True) -> object:
    """Load ``stored`` as the checkpoint of ``folder`` (its digest computed again if
    ``forge``), as ``ch18 train --resume`` does."""
    metadata = stored.metadata
    if forge:
        digest = content_digest(metadata, list(stored.tensors.items()))
        metadata = {**metadata, DIGEST_KEY: digest}
    folder.mkdir(exist_ok=True)
    Stored(stored.tensors, metadata).write(folder / CHECKPOINT_FILE)
    options = TrainOptions(**{**saved_options(folder), "output": folder}).checked(2)
    assert options.corpus is not None
    return load_checkpoint(folder, options, corpus_files(options.corpus))


def with_json(stored: Stored, key: str, edit: object) -> Stored:
    """``stored`` with the JSON of metadata entry ``key`` changed by ``edit`` (a function of
    the value, or the new value)."""
    value = json.loads(stored.metadata[key])
    changed = edit(value) if callable(edit) else edit
    return Stored(stored.tensors, {**stored.metadata, key: json.dumps(changed)})


def with_tensor(stored: Stored, name: str, array: np.ndarray) -> Stored:  # type: ignore[type-arg]
    return Stored({**stored.tensors, name: array}, stored.metadata)


EDITS = {
    "position.file": ("position", lambda p: {**p, "file": 99}),
    "position.epoch": ("position", lambda p: {**p, "epoch": 99}),
    "position.offset": ("position", lambda p: {**p, "offset": 10**9}),
    "position.words": ("position", lambda p: {**p, "words": 1.5}),
    "position.block": ("position", lambda p: {**p, "block": "2"}),
    "position.totals.pairs": (
        "position",
        lambda p: {**p, "totals": {**p["totals"], "pairs": True}},
    ),
    "position": ("position", 5),
    "corpus": ("corpus", None),
    "corpus_words": ("corpus_words", 10**23),
    "options.epochs": ("options", lambda o: {**o, "epochs": 0}),
    "options.seed": ("options", lambda o: {**o, "seed": "5"}),
    "options.sample": ("options", lambda o: {**o, "sample": -1.0}),
    "options.max_vocab_size": ("options", lambda o: {**o, "max_vocab_size": 1.5}),
    "options.max_final_vocab": ("options", lambda o: {**o, "max_final_vocab": 0}),
    "options.keep_model": ("options", lambda o: {**o, "keep_model": 1}),
    "options.tokenized": ("options", lambda o: {**o, "tokenized": "yes"}),
    "origin.first_epoch": ("origin", lambda o: {**o, "first_epoch": -1}),
    "origin.outside_words": ("origin", lambda o: {**o, "outside_words": 10**23}),
    "origin.outside_distinct": ("origin", lambda o: {**o, "outside_distinct": 1}),
    "origin.folder": ("origin", lambda o: {**o, "folder": 5}),
    "origin": ("origin", lambda o: {**o, "first_epoch": 3}),
}


@pytest.mark.parametrize("field", sorted(EDITS))
def test_a_field_of_the_wrong_type_or_range_is_refused_naming_it(
    saved: Saved, tmp_path: Path, field: str
) -> None:
    key, edit = EDITS[field]
    with raises_rule(MismatchError, "resume.unreadable") as caught:
        resumed(tmp_path, with_json(saved.stored, key, edit))
    assert f"({field}: " in str(caught.value)


def test_options_dim_that_is_not_the_tables_width_names_the_table(
    saved: Saved, tmp_path: Path
) -> None:
    with raises_rule(MismatchError, "resume.unreadable") as caught:
        resumed(tmp_path, with_json(saved.stored, "options", lambda o: {**o, "dim": 32}))
    assert "token_embedding.weight: of shape [" in str(caught.value)
    assert ", 8], not [" in str(caught.value) and ", 32]" in str(caught.value)


@pytest.mark.parametrize("name", ["token_embedding.weight", "context_embedding.weight"])
def test_a_table_of_fewer_rows_or_another_width_than_the_vocabulary_is_refused(
    saved: Saved, tmp_path: Path, name: str
) -> None:
    table = saved.stored.tensors[name]
    for changed in (table[:-1], np.ascontiguousarray(table[:, :-1])):
        with raises_rule(MismatchError, "resume.unreadable") as caught:
            resumed(tmp_path, with_tensor(saved.stored, name, changed))
        assert f"({name}: of shape {list(changed.shape)}" in str(caught.value)


def test_a_vocabulary_of_one_line_feed_more_or_a_negative_count_is_refused(
    saved: Saved, tmp_path: Path
) -> None:
    words = saved.stored.tensors["vocabulary.words"]
    longer = np.frombuffer(words.tobytes() + b"\n", dtype=np.uint8)
    with raises_rule(MismatchError, "resume.unreadable", match="vocabulary.words: holds"):
        resumed(tmp_path, with_tensor(saved.stored, "vocabulary.words", longer))
    counts = saved.stored.tensors["vocabulary.counts"].copy()
    counts[1] = -5
    with raises_rule(MismatchError, "resume.unreadable", match="vocabulary.counts: ID 1 has -5"):
        resumed(tmp_path, with_tensor(saved.stored, "vocabulary.counts", counts))
    with raises_rule(MismatchError, "resume.unreadable", match="vocabulary.counts: ID 0 has 0"):
        resumed(tmp_path, with_tensor(saved.stored, "vocabulary.counts", counts * 0))


def test_an_edit_within_every_range_is_refused_by_the_digest(saved: Saved, tmp_path: Path) -> None:
    table = saved.stored.tensors["token_embedding.weight"] + np.float32(0.5)
    edits = [
        with_tensor(saved.stored, "token_embedding.weight", table),
        with_json(saved.stored, "position", lambda p: {**p, "block": p["block"] + 1}),
    ]
    for edited in edits:
        with raises_rule(MismatchError, "resume.unreadable", match=r"\(digest: differs"):
            resumed(tmp_path, edited, forge=False)


def test_a_corpus_file_edited_without_changing_its_size_is_refused_naming_it(
    saved: Saved, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for path in saved.corpus.iterdir():
        (corpus / path.name).write_bytes(path.read_bytes())
    edited = corpus / "part1.txt"
    text = edited.read_bytes()
    edited.write_bytes(text[:10] + text[10:20][::-1] + text[20:])
    stored = with_json(saved.stored, "options", lambda o: {**o, "corpus": str(corpus)})
    with raises_rule(MismatchError, "resume.corpus") as caught:
        resumed(tmp_path / "out", stored)
    assert f"{edited} holds other bytes than the checkpoint's (the same size)" in str(caught.value)


def test_a_pre_tokenized_runs_checkpoint_of_tokens_that_are_no_words_resumes_to_its_bytes(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    tokens = ["new_york", "2024", "U.S.", "Café", "e=mc^2", "ОТЕЦ", "--", "rock'n'roll"]
    lines = [" ".join(rng.choice(tokens, size=8)) for _ in range(300)]
    corpus = tmp_path / "tokens.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = ("--tokenized", "--threads", "1", "--checkpoint-minutes", "0.000001")
    assert run_train(corpus, tmp_path / "whole", *options)[0] == 0
    with pytest.MonkeyPatch.context() as patch:
        interrupt_at_piece(patch, 2)  # the second epoch's first piece
        assert run_train(corpus, tmp_path / "cut", *options)[0] == 130
    words = Stored.read(tmp_path / "cut" / CHECKPOINT_FILE).tensors["vocabulary.words"]
    assert "e=mc^2" in words.tobytes().decode("utf-8").split("\n")
    assert run_main(["ch18", "train", "--resume", str(tmp_path / "cut")])[0] == 0
    table = (tmp_path / "cut" / "table.safetensors").read_bytes()
    assert table == (tmp_path / "whole" / "table.safetensors").read_bytes()
