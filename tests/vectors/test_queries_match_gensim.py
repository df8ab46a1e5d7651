"""Every query of ``WordVectors`` answers as gensim's ``KeyedVectors`` does on the same vectors
(gensim's own word2vec files): the same words in the same order, scores within 1e-5."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import OptionError, WordError
from llm_from_scratch.vectors import WordVectors
from llm_from_scratch.vectors.kernels import top_columns

from checks import raises_rule
from conftest import import_optional
from vectors_support import GENSIM_FILES, gensim_pair, small_vectors

TOLERANCE = 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated:DeprecationWarning")


@pytest.fixture(params=GENSIM_FILES, ids=[name for name, _ in GENSIM_FILES], scope="module")
def pair(request: pytest.FixtureRequest) -> tuple[Any, WordVectors]:
    name, binary = request.param
    return gensim_pair(name, binary)


def same_answers(ours: list[tuple[str, float]], theirs: list[tuple[str, float]]) -> None:
    assert [word for word, _ in ours] == [word for word, _ in theirs]
    assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=TOLERANCE, rtol=0)


def queries(words: list[str], vectors: np.ndarray) -> list[dict[str, Any]]:
    """Analogies, single words, weighted pairs, vectors, restrict_vocab and topn variants."""
    return [
        {"positive": [words[5]]},
        {"positive": words[3]},
        {"positive": [words[3], words[7]], "negative": [words[9]]},
        {"positive": [words[20], words[30]], "negative": [words[40]], "topn": 3},
        {"positive": [words[3]], "topn": 4, "restrict_vocab": 100},
        {"positive": [(words[3], 2.0), vectors[10]], "negative": [(words[1], -0.5)]},
        {"positive": [vectors[12]], "topn": 25},
        {"positive": [12, words[4]], "negative": words[11]},
    ]


def test_most_similar_gives_gensims_words_and_cosines(pair: tuple[Any, WordVectors]) -> None:
    theirs, ours = pair
    for query in queries(theirs.index_to_key, theirs.vectors):
        same_answers(ours.most_similar(**query), theirs.most_similar(**query))


def test_most_similar_with_topn_none_gives_every_cosine(pair: tuple[Any, WordVectors]) -> None:
    theirs, ours = pair
    word = theirs.index_to_key[2]
    assert np.allclose(
        ours.most_similar(word, topn=None), theirs.most_similar(word, topn=None), atol=TOLERANCE
    )
    assert ours.most_similar(word, topn=0) == theirs.most_similar(word, topn=0) == []


def test_most_similar_cosmul_gives_gensims_answers(pair: tuple[Any, WordVectors]) -> None:
    theirs, ours = pair
    words = theirs.index_to_key
    for query in (
        {"positive": [words[5]]},
        {"positive": [words[3], words[7]], "negative": [words[9]]},
        {"positive": [words[3], theirs.vectors[8]], "negative": [words[1]], "topn": 20},
    ):
        same_answers(ours.most_similar_cosmul(**query), theirs.most_similar_cosmul(**query))


def test_similar_by_vector_and_by_word_give_gensims_answers(pair: tuple[Any, WordVectors]) -> None:
    theirs, ours = pair
    vector = theirs.vectors[17] - theirs.vectors[3]
    same_answers(ours.similar_by_vector(vector, topn=7), theirs.similar_by_vector(vector, topn=7))
    word = theirs.index_to_key[6]
    same_answers(ours.similar_by_word(word), theirs.similar_by_word(word))
    same_answers(
        ours.similar_by_key(word, restrict_vocab=50), theirs.similar_by_key(word, restrict_vocab=50)
    )


def test_pairwise_queries_give_gensims_numbers(pair: tuple[Any, WordVectors]) -> None:
    theirs, ours = pair
    words = theirs.index_to_key
    for first, second in [(1, 2), (3, 400), (10, 11), (0, 0)]:
        a, b = words[first], words[second]
        assert abs(ours.similarity(a, b) - theirs.similarity(a, b)) <= TOLERANCE
        assert abs(ours.distance(a, b) - theirs.distance(a, b)) <= TOLERANCE
        assert ours.rank(a, b) == theirs.rank(a, b)
    assert (
        abs(ours.n_similarity(words[1:4], words[5:7]) - theirs.n_similarity(words[1:4], words[5:7]))
        <= TOLERANCE
    )
    for group in (words[1:6], [*words[100:104], words[900]], [words[3], words[3], words[70]]):
        assert ours.doesnt_match(group) == theirs.doesnt_match(group)
    assert np.allclose(ours.distances(words[4]), theirs.distances(words[4]), atol=TOLERANCE)
    assert np.allclose(
        ours.distances(words[4], words[:9]), theirs.distances(words[4], words[:9]), atol=TOLERANCE
    )
    assert ours.closer_than(words[8], words[30]) == theirs.closer_than(words[8], words[30])


def test_accessors_give_gensims_values(pair: tuple[Any, WordVectors]) -> None:
    theirs, ours = pair
    assert ours.index_to_key == theirs.index_to_key
    assert dict(ours.key_to_index) == theirs.key_to_index
    assert (len(ours), ours.vector_size) == (len(theirs), theirs.vector_size)
    word = theirs.index_to_key[9]
    assert word in ours and "no-such-word" not in ours
    assert np.array_equal(ours[word], theirs[word])
    assert np.array_equal(ours.get_vector(word, norm=True), theirs.get_vector(word, norm=True))
    assert np.array_equal(
        ours[[word, theirs.index_to_key[0]]], theirs[[word, theirs.index_to_key[0]]]
    )
    assert np.array_equal(ours.vectors, theirs.vectors) and ours.vectors.dtype == np.float32


def test_an_unknown_word_is_a_word_error_and_a_key_error_naming_it() -> None:
    wv = small_vectors()
    for call in (
        lambda: wv["kng"],
        lambda: wv.get_vector("kng"),
        lambda: wv.most_similar(positive=["king", "kng"]),
        lambda: wv.most_similar_cosmul(positive=["king"], negative=["kng"]),
        lambda: wv.similarity("king", "kng"),
        lambda: wv.doesnt_match(["king", "kng", "queen"]),
        lambda: wv.rank("kng", "king"),
    ):
        with raises_rule(WordError, "word.not-in-vocabulary") as caught:
            call()
        assert isinstance(caught.value, KeyError)
        assert caught.value.word == "kng" and caught.value.count == 4
        assert (
            str(caught.value) == "the word 'kng' is not in the vocabulary of these 4 word vectors"
        )


def test_input_words_are_left_out_of_the_answers() -> None:
    wv = small_vectors()
    answer = wv.most_similar(positive=["king", "queen"], negative=["man"], topn=10)
    assert {word for word, _ in answer} == {"apple"}


def test_bad_arguments_are_option_errors_before_any_work() -> None:
    wv = small_vectors()
    for call in (
        lambda: wv.most_similar(),
        lambda: wv.most_similar("king", topn=2.5),
        lambda: wv.most_similar("king", restrict_vocab=-1),
        lambda: wv.most_similar(positive=[np.ones(3)]),
        lambda: wv.most_similar(positive=[np.array([np.nan, 1.0])]),
        lambda: wv.most_similar_cosmul(negative=["king"]),
        lambda: wv.n_similarity([], ["king"]),
        lambda: wv.doesnt_match("king"),
    ):
        with raises_rule(OptionError, "vectors.argument"):
            call()


def test_the_table_handed_out_is_read_only() -> None:
    wv = small_vectors()
    with pytest.raises(ValueError):
        wv.vectors[0, 0] = 1.0
    with pytest.raises(ValueError):
        wv["king"][0] = 1.0
    with pytest.raises(TypeError):
        wv.key_to_index["pear"] = 9  # type: ignore[index]


def test_a_long_table_scanned_by_the_compiled_kernel_answers_as_gensim() -> None:
    keyed = import_optional("gensim.models.keyedvectors", "gensim").KeyedVectors
    rows = 300_000  # runs_compiled: the row of cosines is scanned by the compiled kernel
    table = np.random.default_rng(5).standard_normal((rows, 4), dtype=np.float32)
    words = [f"w{index}" for index in range(rows)]
    theirs = keyed(4)
    theirs.add_vectors(words, table)
    ours = WordVectors(words, table)
    for query in ({"positive": ["w1"]}, {"positive": ["w7", "w9"], "negative": ["w2"], "topn": 30}):
        same_answers(ours.most_similar(**query), theirs.most_similar(**query))


@pytest.mark.parametrize("shape", [(1, 300_000), (40, 5_000), (3, 7)])
def test_the_best_columns_are_those_of_a_stable_sort(shape: tuple[int, int]) -> None:
    scores = np.round(np.random.default_rng(6).standard_normal(shape), 2).astype(np.float32)
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :9]
    assert np.array_equal(top_columns(scores, 9), expected)
