"""``Run.start`` loads the compiled loop in a thread while it reads the corpus; ``Run.train``
waits for it before its first block, and a refused start leaves no thread loading."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from llm_from_scratch.errors import CorpusError
from llm_from_scratch.training import Run, TrainOptions
from llm_from_scratch.training import run as run_module
from llm_from_scratch.training.options import METHODS

from checks import raises_rule
from train_support import write_corpus


def test_a_run_loads_the_compiled_loop_while_it_counts_and_trains_after_it(
    tmp_path: Path,
) -> None:
    options = TrainOptions(corpus=write_corpus(tmp_path), output=tmp_path / "out", epochs=1)
    run = Run.start(options, 1)
    assert isinstance(run.loading, threading.Thread)
    result = run.train()
    assert not run.loading.is_alive() and result.epochs[0].pairs > 0


@pytest.mark.parametrize("method", METHODS)
def test_the_loader_loads_the_compiled_loop_of_the_runs_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    loaded: list[str] = []

    def recording(name: str) -> Any:
        return lambda *_: loaded.append(name)

    steps = {name: (recording(name), *rest) for name, (_, *rest) in run_module.METHOD_STEPS.items()}
    monkeypatch.setattr(run_module, "METHOD_STEPS", steps)
    options = TrainOptions(write_corpus(tmp_path, lines=20), tmp_path / "out", method=method)
    loading = Run.start(options, 1).loading
    assert loading is not None
    loading.join()
    assert loaded == [method]


def test_a_run_on_the_tape_loads_no_compiled_loop(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path, lines=20)
    options = TrainOptions(corpus=corpus, output=tmp_path / "out", epochs=1, reference=True)
    assert Run.start(options, 1).loading is None


def test_a_refused_start_leaves_no_thread_loading(tmp_path: Path) -> None:
    options = TrainOptions(corpus=write_corpus(tmp_path, lines=20), min_count=10**6)
    before = set(threading.enumerate())
    with raises_rule(CorpusError, "corpus.empty-vocabulary"):
        Run.start(options, 1)
    assert set(threading.enumerate()) <= before
