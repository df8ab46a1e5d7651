"""Every file kind the package reads, crafted at every tensor, shape, dtype and metadata field
(``tests/crafted_files.py``), then read by its reader in this process and by its command in a
process of its own under ``NUMBA_BOUNDSCHECK=1`` (a compiled loop indexing outside a table
raises there instead of writing memory):

- a training checkpoint, by ``load_checkpoint`` and ``ch18 train --resume``;
- a table, by ``load_parameters`` (of every tensor, and as ``load_pretrained_embedding`` calls
  it) and ``ch18 neighbours --table``;
- an optimizer state, by ``load_state`` and a step of the compiled row kernels after it.

Never a crash (a signal), a traceback, an escaped warning or an error of another family: the
reader returns or raises one of the package's errors, and the command either ends in one
``error:`` line with status 2 (1 for a failed read) or succeeds. An edited checkpoint that is
not refused trains to the uninterrupted run's bytes; a forged one (its digest computed again)
is still checked field by field, and a run from it ends as any other. A table or a state that
is accepted loads as the file holds it. The quick tier crafts a few of each kind; the slow tier
every mutation (of a checkpoint the reader refuses, one in :data:`SAMPLE` also runs as a
command: its command runs the same checks).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from crafted_files import Mutation, Stored, mutations
from state_runner import STATE_FILE, new_optimizer, state_arrays

from llm_from_scratch.demos.ch18_token_embeddings.pretrained import load_pretrained_embedding
from llm_from_scratch.errors import LlmError
from llm_from_scratch.nn import Embedding, NamedParameter, load_parameters
from llm_from_scratch.optim import load_state
from llm_from_scratch.training.checkpoint import (
    DIGEST_KEY,
    content_digest,
    load_checkpoint,
    saved_options,
)
from llm_from_scratch.training.corpus import corpus_files
from llm_from_scratch.training.options import CHECKPOINT_FILE, TrainOptions
from llm_from_scratch.vectors.table_pair import FINGERPRINT_KEY, VOCABULARY_SIZE_KEY

from train_support import interrupt_at_piece, run_train, write_corpus

TESTS = Path(__file__).resolve().parents[1]
SOURCE = TESTS.parent / "src"
RUN = ("--seed", "5", "--threads", "1", "--epochs", "2", "--checkpoint-minutes", "0.000001")
GENSIM = ("--sample", "0.01", "--alpha", "0.03", "--min-alpha", "0.001", "--ns-exponent", "0.5")
GENSIM += ("--max-vocab-size", "100000", "--max-final-vocab", "5000", "--keep-model")
"""gensim's options away from their defaults, so that each is a value of its type to edit."""
SAMPLE = 8
"""The slow tier runs one in this many refused checkpoints as a command too."""
QUICK = {
    "checkpoint": (
        "token_embedding.weight one row fewer",
        "context_embedding.weight as float64",
        "vocabulary.words an extra line feed",
        "vocabulary.counts one value -5",
        "position.file = 99",
        "position = 5",
        "corpus = null",
        "options.dim = 32",
        "options.max_vocab_size = 1.5",
        "options.sample = -1.0",
        "options.keep_model = 1",
        'options.method = "x"',
        "options.method = +x",
        "options.method = 5",
        "origin = null",
    ),
    "continued": (
        "origin.first_epoch = -1",
        "origin.first_epoch = +1",
        "origin.outside_words = 10**23",
        "origin.outside_distinct = +1",
        "origin.folder = null",
        "origin.folder = 5",
        "vocabulary.counts one value 0",
        "options.ns_exponent = 1e308",
    ),
    "table": ("token_embedding.weight one row fewer", "token_embedding.weight one value NaN"),
    "state": (
        "token_embedding.weight.exp_avg one row fewer",
        "step one value -5",
        "optimizer dropped",
    ),
}


@dataclass(frozen=True)
class Ending:
    """How a process ended: its status and its two streams."""

    status: int
    out: str
    err: str

    def check_one_way(self) -> None:
        """A status of ours, no traceback or warning, and on failure one ``error:`` line, the
        last."""
        assert self.status in (0, 1, 2), (self.status, self.err[-2000:])
        for sign in ("Traceback", "unexpected", "Warning"):
            assert sign not in self.err, self.err[-2000:]
        if self.status:
            lines = self.err.splitlines()
            errors = [line for line in lines if line.startswith("error: ")]
            assert len(errors) == 1 and lines[-1] == errors[0], self.err[-2000:]


def command(*argv: str, cwd: Path) -> Ending:
    """``python -m llm_from_scratch ARGV`` under ``NUMBA_BOUNDSCHECK=1``."""
    environment = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "PYTHONPATH": f"{SOURCE}:{TESTS}"}
    completed = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=environment, cwd=cwd
    )
    return Ending(completed.returncode, completed.stdout, completed.stderr)


def read_quietly(read: Callable[[], Any]) -> LlmError | None:
    """Run a reader with every warning an error: the error of ours it raised, or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            read()
        except LlmError as error:
            return error
    return None


def chosen(kind: str, every: list[Mutation], quick: bool) -> Iterator[Mutation]:
    labels = [mutation.label for mutation in every]
    assert len(set(labels)) == len(labels), "two mutations of one label"
    if not quick:
        yield from every
        return
    wanted = QUICK[kind]
    assert set(wanted) <= set(labels), set(wanted) - set(labels)
    yield from (mutation for mutation in every if mutation.label in wanted)


# A training checkpoint --------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A corpus of three files, its uninterrupted run's table, and a checkpoint in epoch 2."""

    corpus: Path
    whole: Path
    table: bytes
    checkpoint: Stored


def cut_run(corpus: Path, root: Path, *options: str) -> Run:
    """A run of ``options`` whole in ``root/whole``, and cut in its second epoch in
    ``root/cut``."""
    assert run_train(corpus, root / "whole", *options)[0] == 0
    with pytest.MonkeyPatch.context() as patch:
        interrupt_at_piece(patch, 5)  # the second file of the second epoch
        assert run_train(corpus, root / "cut", *options)[0] == 130
    table = (root / "whole" / "table.safetensors").read_bytes()
    return Run(corpus, root / "whole", table, Stored.read(root / "cut" / CHECKPOINT_FILE))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("run")
    corpus = root / "corpus"
    corpus.mkdir()
    for index in range(3):
        write_corpus(root, lines=200, seed=index).rename(corpus / f"part{index}.txt")
    return cut_run(corpus, root, *RUN, *GENSIM)


@pytest.fixture(scope="module")
def continued(run: Run, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A run that continues ``run``'s kept model (``--continue``) on a corpus of other words
    (some outside the model's vocabulary), whole and cut: its checkpoint records its origin."""
    root = tmp_path_factory.mktemp("continued")
    corpus = root / "corpus"
    corpus.mkdir()
    for index in range(3):
        write_corpus(root, lines=150, seed=10 + index).rename(corpus / f"part{index}.txt")
    with (corpus / "part1.txt").open("a", encoding="utf-8") as extra:
        extra.write("Zebras graze beside quiet quagga herds.\n" * 3)
    return cut_run(corpus, root, "--continue", str(run.whole), *RUN)


def forged(stored: Stored) -> Stored:
    """``stored`` with its digest computed again, as a forger would."""
    if DIGEST_KEY not in stored.metadata:
        return stored
    digest = content_digest(stored.metadata, list(stored.tensors.items()))
    return Stored(stored.tensors, {**stored.metadata, DIGEST_KEY: digest})


def load_from(folder: Path) -> None:
    options = TrainOptions(**{**saved_options(folder), "output": folder}).checked(2)
    assert options.corpus is not None
    load_checkpoint(folder, options, corpus_files(options.corpus))


def resume(run: Run, stored: Stored, folder: Path, edited: bool, always: bool) -> None:
    """Read ``stored`` as a checkpoint, then resume from it as a command: always when the
    reader accepts it, and when it refuses only if ``always`` (the command runs the same
    checks: the slow tier runs one refused file in :data:`SAMPLE` as a command)."""
    folder.mkdir()
    try:
        stored.write(folder / CHECKPOINT_FILE)
    except Exception:  # a file the package itself cannot write: nothing to read
        shutil.rmtree(folder)
        return
    refused = read_quietly(lambda: load_from(folder))
    if refused is not None and not always:
        shutil.rmtree(folder)
        return
    ending = command("-m", "llm_from_scratch", "ch18", "train", "--resume", str(folder), cwd=folder)
    ending.check_one_way()
    if refused is not None:
        assert ending.status == 2, (refused, ending)
    elif ending.status == 0:
        table = (folder / "table.safetensors").read_bytes()
        assert not edited or table == run.table, "an edited checkpoint trained another table"
        assert (folder / "tokenizer.json").is_file()
    shutil.rmtree(folder)


def check_checkpoints(run: Run, tmp_path: Path, quick: bool, kind: str = "checkpoint") -> None:
    every = mutations(run.checkpoint)
    for index, mutation in enumerate(chosen(kind, every, quick)):
        always = quick or index % SAMPLE == 0
        resume(run, mutation.stored, tmp_path / f"edited{index}", True, always)
        resume(run, forged(mutation.stored), tmp_path / f"forged{index}", False, always)


def test_the_checkpoint_itself_resumes_to_the_uninterrupted_runs_bytes(
    run: Run, tmp_path: Path
) -> None:
    folder = tmp_path / "as-saved"
    folder.mkdir()
    run.checkpoint.write(folder / CHECKPOINT_FILE)
    ending = command("-m", "llm_from_scratch", "ch18", "train", "--resume", str(folder), cwd=folder)
    assert ending.status == 0, ending.err
    assert (folder / "table.safetensors").read_bytes() == run.table


def test_a_few_crafted_checkpoints_are_refused_in_one_line_or_train_the_runs_bytes(
    run: Run, tmp_path: Path
) -> None:
    check_checkpoints(run, tmp_path, quick=True)


@pytest.mark.slow
def test_every_crafted_checkpoint_is_refused_in_one_line_or_trains_the_runs_bytes(
    run: Run, tmp_path: Path
) -> None:
    check_checkpoints(run, tmp_path, quick=False)


def test_a_continued_runs_checkpoint_resumes_to_the_uninterrupted_runs_bytes(
    continued: Run, tmp_path: Path
) -> None:
    assert json.loads(continued.checkpoint.metadata["origin"])["folder"] is not None
    folder = tmp_path / "as-saved"
    folder.mkdir()
    continued.checkpoint.write(folder / CHECKPOINT_FILE)
    ending = command("-m", "llm_from_scratch", "ch18", "train", "--resume", str(folder), cwd=folder)
    assert ending.status == 0, ending.err
    assert (folder / "table.safetensors").read_bytes() == continued.table


def test_a_few_crafted_checkpoints_of_a_continued_run_are_refused_or_train_the_runs_bytes(
    continued: Run, tmp_path: Path
) -> None:
    check_checkpoints(continued, tmp_path, quick=True, kind="continued")


@pytest.mark.slow
def test_every_crafted_checkpoint_of_a_continued_run_is_refused_or_trains_the_runs_bytes(
    continued: Run, tmp_path: Path
) -> None:
    check_checkpoints(continued, tmp_path, quick=False, kind="continued")


# A table and its tokenizer ---------------------------------------------------------------------


def check_tables(run: Run, tmp_path: Path, quick: bool) -> None:
    tokenizer = run.whole / "tokenizer.json"
    original = Stored.read(run.whole / "table.safetensors")
    for index, mutation in enumerate(chosen("table", mutations(original), quick)):
        path = tmp_path / f"table{index}.safetensors"
        try:
            mutation.stored.write(path)
        except Exception:
            continue
        loaded: list[Embedding] = []
        refused = read_quietly(
            lambda: loaded.append(load_pretrained_embedding(path, None))  # noqa: B023
        )
        for embedding in loaded:  # accepted: as the file holds it, as float32
            held = mutation.stored.tensors[embedding.table.name].astype(np.float32)
            assert np.array_equal(embedding.table.tensor.numpy(), held), mutation.label
        parameters: list[NamedParameter] = []
        read_quietly(lambda: parameters.extend(load_parameters(path)))  # noqa: B023
        for parameter in parameters:  # every tensor, as the file holds it
            held = mutation.stored.tensors[parameter.name]
            assert np.array_equal(parameter.tensor.numpy(), held), mutation.label
        ending = command(
            "-m", "llm_from_scratch", "ch18", "neighbours", "--table", str(path),
            "--tokenizer", str(tokenizer), "father", cwd=tmp_path,
        )  # fmt: skip
        ending.check_one_way()
        if ending.status == 0:
            assert refused is None, (mutation.label, refused)
            for key in (VOCABULARY_SIZE_KEY, FINGERPRINT_KEY):  # what pairs it, as it was
                recorded = mutation.stored.metadata.get(key)
                assert recorded in (None, original.metadata[key]), mutation.label
        path.unlink()


def test_a_few_crafted_tables_are_refused_in_one_line_or_read_as_they_are(
    run: Run, tmp_path: Path
) -> None:
    check_tables(run, tmp_path, quick=True)


@pytest.mark.slow
def test_every_crafted_table_is_refused_in_one_line_or_read_as_it_is(
    run: Run, tmp_path: Path
) -> None:
    check_tables(run, tmp_path, quick=False)


# An optimizer state ----------------------------------------------------------------------------


def check_states(tmp_path: Path, quick: bool) -> None:
    original_path = tmp_path / STATE_FILE
    ending = command("-m", "state_runner", "save", str(original_path), cwd=tmp_path)
    assert ending.status == 0, ending.err
    original = Stored.read(original_path)
    for index, mutation in enumerate(chosen("state", mutations(original), quick)):
        path = tmp_path / f"state{index}.safetensors"
        try:
            mutation.stored.write(path)
        except Exception:
            continue
        optimizer = new_optimizer()[1]
        refused = read_quietly(lambda: load_state(path, optimizer))  # noqa: B023
        if refused is None:  # accepted: as the file holds it
            for name, array in state_arrays(optimizer).items():
                assert np.array_equal(array, mutation.stored.tensors[name]), mutation.label
        ending = command("-m", "state_runner", "load", str(path), cwd=tmp_path)
        ending.check_one_way()
        assert refused is None or ending.status == 2, (mutation.label, refused, ending)
        path.unlink()


def test_a_few_crafted_optimizer_states_are_refused_in_one_line_or_read_as_they_are(
    tmp_path: Path,
) -> None:
    check_states(tmp_path, quick=True)


@pytest.mark.slow
def test_every_crafted_optimizer_state_is_refused_in_one_line_or_read_as_it_is(
    tmp_path: Path,
) -> None:
    check_states(tmp_path, quick=False)
