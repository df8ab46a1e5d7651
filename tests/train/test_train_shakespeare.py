"""The default run of ``ch18 train`` on Shakespeare (5 epochs, all kernel threads), as a process
of its own, against gensim's word2vec on the same corpus in the same run: the groups of the
report separate at least 0.9 times as well as gensim's, the random table's do not separate,
and the neighbours of the reference words are the expected ones. Slow: about 40 s on two idle
cores (the default run itself about 25 s).

The command runs as its own process, as a user runs it: in this one, PyTorch's tests may have
started OpenMP threads that spin between parallel regions and slow Numba's down
(``docs/performance.md``). Without the corpus this test skips, saying ``make corpus`` fetches
it (under ``CI=true`` it fails); without gensim (the test extra) it skips as well.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.numpy import load_file

from llm_from_scratch.bench.train import group_measure, tokenized_corpus, word_list
from llm_from_scratch.bench.train_runners import run_gensim
from llm_from_scratch.demos.ch18_token_embeddings.shakespeare import (
    default_corpus_folder,
    fetched_texts,
)
from llm_from_scratch.demos.ch18_token_embeddings.train_command import processor_count
from llm_from_scratch.training.skipgram import SkipGram

from conftest import import_optional, unavailable


@pytest.mark.slow
def test_the_default_run_separates_the_groups_as_well_as_gensim(tmp_path: Path) -> None:
    import_optional("gensim")
    folder = default_corpus_folder()
    if fetched_texts(folder) is None:
        unavailable(f"the Shakespeare corpus is not in {folder}: make corpus", ci_provides=True)
    command = [sys.executable, "-m", "llm_from_scratch", "ch18", "train", "--output", str(tmp_path)]
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    assert completed.returncode == 0, completed.stderr
    table = load_file(str(tmp_path / "table.safetensors"))["token_embedding.weight"]
    words = word_list(tmp_path / "tokenizer.json")
    assert table.shape == (9120, 100) and words[-1] == "[UNK]"
    within, between = group_measure(table, words)
    random = SkipGram.new(9120, 100, seed=1).inputs.table.tensor.numpy()
    random_within, random_between = group_measure(random, words)
    lines = tokenized_corpus(folder, tmp_path / "sentences.txt")
    vectors, their_words = run_gensim(lines, epochs=5, threads=processor_count(), seed=1, dim=100)
    their_within, their_between = group_measure(vectors, their_words)
    ours, theirs = within - between, their_within - their_between
    assert abs(random_within - random_between) < 0.1
    assert ours >= 0.9 * theirs, (ours, theirs, seconds)
    report = completed.stdout
    assert "  after   brother" in report or "  after   mother" in report, report
    print(f"default run {seconds:.1f} s; separation {ours:.4f} against gensim's {theirs:.4f}")
