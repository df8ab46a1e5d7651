"""``WordVectors.load`` reads the pairs this package writes and reads: a table ``ch18 train``
writes on a tiny corpus and the MiniLM pair, its words the tokenizer's tokens in row order with
``[UNK]`` left out; on them every query answers as gensim's ``KeyedVectors`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.errors import MismatchError, WordError
from llm_from_scratch.vectors import WordVectors
from llm_from_scratch.vectors.pair import load_word_pieces, read_table

from checks import raises_rule
from conftest import import_optional, require_pretrained, require_tokenizers
from train_support import run_train, write_corpus


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tokenizers()
    folder = tmp_path_factory.mktemp("trained")
    status, _, err = run_train(write_corpus(folder), folder / "out")
    assert status == 0, err
    return folder / "out"


def as_gensim(wv: WordVectors) -> Any:
    keyed = import_optional("gensim.models.keyedvectors", "gensim").KeyedVectors(wv.vector_size)
    keyed.add_vectors(wv.index_to_key, np.array(wv.vectors))
    return keyed


def test_a_trained_pair_loads_its_words_in_row_order_without_unk(trained: Path) -> None:
    wv = WordVectors.load(trained / "table.safetensors", trained / "tokenizer.json")
    pieces = load_word_pieces(trained / "tokenizer.json")
    _, table = read_table(trained / "table.safetensors", None)
    tokens = pieces.tokens()
    assert "[UNK]" in tokens and "[UNK]" not in wv
    assert wv.index_to_key == [token for token in tokens if token != "[UNK]"]
    rows = [tokens.index(word) for word in wv.index_to_key]
    assert np.array_equal(wv.vectors, table[rows])
    with raises_rule(WordError, "word.not-in-vocabulary"):
        wv["[UNK]"]


def test_a_trained_table_answers_as_gensim(trained: Path) -> None:
    wv = WordVectors.load(trained / "table.safetensors", trained / "tokenizer.json")
    keyed = as_gensim(wv)
    for query in ({"positive": ["king"]}, {"positive": ["king", "sister"], "negative": ["queen"]}):
        ours, theirs = wv.most_similar(**query), keyed.most_similar(**query)
        assert [word for word, _ in ours] == [word for word, _ in theirs]
        assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)
    assert wv.doesnt_match(["king", "queen", "two"]) == keyed.doesnt_match(["king", "queen", "two"])


def test_a_table_beside_another_tokenizer_is_refused(trained: Path, tmp_path: Path) -> None:
    tokenizers = require_tokenizers()
    model = tokenizers.models.WordLevel(vocab={"[UNK]": 0, "sun": 1}, unk_token="[UNK]")
    other = tmp_path / "tokenizer.json"
    tokenizers.Tokenizer(model).save(str(other))
    # more rows than tokens is a padded table; the recorded tokenizer size tells them apart
    with raises_rule(MismatchError, "pair.vocabulary-size"):
        WordVectors.load(trained / "table.safetensors", other)


def test_the_minilm_pair_answers_the_analogies_of_the_lesson() -> None:
    require_pretrained()
    from llm_from_scratch.demos.ch18_token_embeddings.pretrained import packaged_files

    files = packaged_files()
    wv = WordVectors.load(files.table, files.tokenizer)
    assert (len(wv), wv.vector_size) == (30521, 384) and "[UNK]" not in wv
    keyed = as_gensim(wv)
    for positive, negative in ((["king", "woman"], ["man"]), (["paris", "japan"], ["france"])):
        ours = wv.most_similar(positive=positive, negative=negative, topn=5)
        theirs = keyed.most_similar(positive=positive, negative=negative, topn=5)
        assert [word for word, _ in ours] == [word for word, _ in theirs]
        assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)
    assert wv.most_similar(positive=["king", "woman"], negative=["man"], topn=1)[0][0] == "queen"
