"""``Run.start`` reads the corpus, then loads the compiled loop of the run's method, so that
``Run.train`` trains its first block at once; a run on the tape, or a refused start, loads
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_from_scratch.errors import CorpusError
from llm_from_scratch.training import Run, TrainOptions
from llm_from_scratch.training import run as run_module
from llm_from_scratch.training.options import METHODS

from checks import raises_rule
from train_support import write_corpus


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The methods whose compiled loop a run loads (a record instead of the loading)."""
    found: list[str] = []
    monkeypatch.setattr(run_module, "load_compiled_loop", found.append)
    return found


@pytest.mark.parametrize("method", METHODS)
def test_a_started_run_has_counted_its_corpus_and_loaded_its_methods_loop(
    tmp_path: Path, loaded: list[str], method: str
) -> None:
    options = TrainOptions(write_corpus(tmp_path, lines=20), tmp_path / "out", method=method)
    run = Run.start(options, 1)
    assert loaded == [method]
    assert run.corpus_words > 0


def test_a_run_on_the_tape_loads_no_compiled_loop(tmp_path: Path, loaded: list[str]) -> None:
    corpus = write_corpus(tmp_path, lines=20)
    options = TrainOptions(corpus=corpus, output=tmp_path / "out", epochs=1, reference=True)
    Run.start(options, 1)
    assert loaded == []


def test_a_refused_start_loads_nothing(tmp_path: Path, loaded: list[str]) -> None:
    options = TrainOptions(corpus=write_corpus(tmp_path, lines=20), min_count=10**6)
    with raises_rule(CorpusError, "corpus.empty-vocabulary"):
        Run.start(options, 1)
    assert loaded == []


def test_a_started_run_trains_with_its_loaded_loop(tmp_path: Path) -> None:
    options = TrainOptions(corpus=write_corpus(tmp_path), output=tmp_path / "out", epochs=1)
    assert Run.start(options, 1).train().epochs[0].pairs > 0
