"""``evaluate_word_pairs`` and ``evaluate_word_analogies`` give gensim's figures on gensim's
test files (WordSim-353, SimLex-999, the Google analogies): the correlations to 1e-6, the
analogy counts and sections exactly, and results that unpack as SciPy's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import FormatError
from llm_from_scratch.vectors import WordVectors

from checks import raises_rule
from vectors_support import GENSIM_FILES, file_with, gensim_data, gensim_pair, small_vectors

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SETTINGS: list[dict[str, Any]] = [
    {},
    {"dummy4unknown": True},
    {"case_insensitive": False},
    {"restrict_vocab": 500},
]


@pytest.fixture(params=GENSIM_FILES, ids=[name for name, _ in GENSIM_FILES], scope="module")
def pair(request: pytest.FixtureRequest) -> tuple[Any, WordVectors]:
    name, binary = request.param
    return gensim_pair(name, binary)


@pytest.mark.parametrize("pairs", ["wordsim353.tsv", "simlex999.txt"])
@pytest.mark.parametrize("settings", SETTINGS)
def test_word_pairs_give_gensims_correlations(
    pair: tuple[Any, WordVectors], pairs: str, settings: dict[str, Any]
) -> None:
    theirs, ours = pair
    path = gensim_data(pairs)
    their_pearson, their_spearman, their_oov = theirs.evaluate_word_pairs(str(path), **settings)
    pearson, spearman, oov = ours.evaluate_word_pairs(path, **settings)
    assert np.allclose(tuple(pearson), tuple(their_pearson), atol=1e-6, rtol=1e-6)
    assert np.allclose(tuple(spearman), tuple(their_spearman), atol=1e-6, rtol=1e-6)
    assert oov == their_oov
    assert pearson[0] == pearson.statistic == pearson.correlation
    assert spearman[1] == spearman.pvalue and len(spearman) == len(their_spearman) == 2


@pytest.mark.parametrize("settings", SETTINGS)
def test_analogies_give_gensims_score_and_sections(
    pair: tuple[Any, WordVectors], settings: dict[str, Any]
) -> None:
    theirs, ours = pair
    path = gensim_data("questions-words.txt")
    their_score, their_sections = theirs.evaluate_word_analogies(str(path), **settings)
    score, sections = ours.evaluate_word_analogies(path, **settings)
    assert score == their_score
    assert sections == their_sections


def test_analogies_on_every_question_of_the_google_file_count_as_gensim() -> None:
    """A table of the Google file's own words in three dimensions: every question is scored,
    and the best candidates are often nearly tied (the close calls gensim's arithmetic decides)."""
    questions = gensim_data("questions-words.txt").read_text(encoding="utf-8").split()
    words = sorted({word.lower() for word in questions if word != ":"})
    rng = np.random.default_rng(3)
    base = rng.standard_normal((len(words), 3)).astype(np.float32)
    keyed = __import__("gensim.models.keyedvectors", fromlist=["KeyedVectors"]).KeyedVectors
    theirs = keyed(3)
    theirs.add_vectors(words, base)
    ours = WordVectors(words, base)
    their_score, their_sections = theirs.evaluate_word_analogies(
        str(gensim_data("questions-words.txt"))
    )
    score, sections = ours.evaluate_word_analogies(gensim_data("questions-words.txt"))
    assert (score, sections) == (their_score, their_sections)
    scored = len(sections[-1]["correct"]) + len(sections[-1]["incorrect"])
    assert scored == 19544 and len(sections[-1]["correct"]) > 0


def test_an_analogy_before_any_section_is_a_format_error() -> None:
    with raises_rule(FormatError, "vectors.evaluation-file") as caught:
        small_vectors().evaluate_word_analogies(file_with(b"king queen man woman\n"))
    assert caught.value.detail == "line 1 comes before the first ': section' line"


def test_a_pairs_file_with_nothing_to_score_is_a_format_error() -> None:
    with raises_rule(FormatError, "vectors.evaluation-file") as caught:
        small_vectors().evaluate_word_pairs(file_with(b"# only a comment\npear\tplum\t3.0\n"))
    assert caught.value.detail == (
        "0 lines hold two words of the vocabulary and a score, not two or more"
    )
