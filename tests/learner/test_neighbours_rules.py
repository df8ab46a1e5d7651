"""The neighbour rules on small tables whose answers are worked out by hand or by plain NumPy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
    CHUNK_VALUES,
    CosineTable,
    group_cosines,
    id_neighbour_ids,
    neighbours_report,
    project_groups,
    vector_neighbour_ids,
    word_neighbours,
    word_piece,
)
from llm_from_scratch.errors import OptionError, WordError

from checks import raises_rule
from neighbours_support import WholeWords, layer_of

TOKENS = ("[UNK]", "king", "queen", "one", "two", "red", "blue", "dog")
ROWS = [
    [0.1, 0.1, 0.1],
    [1.0, 0.2, 0.0],
    [0.9, 0.3, 0.1],
    [0.0, 1.0, 0.2],
    [0.1, 0.9, 0.0],
    [0.0, 0.1, 1.0],
    [0.2, 0.0, 0.8],
    [0.5, 0.5, 0.5],
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture
def table() -> CosineTable:
    return CosineTable.of(layer_of(ROWS))


@pytest.mark.parametrize(
    ("token_id", "count", "size", "expected"),
    [
        (5, 4, 10, (4, 6, 3, 7)),
        (0, 3, 10, (1, 2, 3)),
        (9, 3, 10, (8, 7, 6)),
        (1, 4, 10, (0, 2, 3, 4)),
        (2, 2, 3, (1, 0)),
    ],
)
def test_id_neighbours_are_the_nearest_numbers_below_first_inside_the_table(
    token_id: int, count: int, size: int, expected: tuple[int, ...]
) -> None:
    assert id_neighbour_ids(token_id, count, size) == expected


def test_id_neighbours_by_brute_force_for_every_id_and_count() -> None:
    size = 7
    for token_id, count in itertools.product(range(size), range(1, size)):
        others = sorted((abs(j - token_id), j) for j in range(size) if j != token_id)
        assert id_neighbour_ids(token_id, count, size) == tuple(j for _, j in others[:count])


@pytest.mark.parametrize("count", [0, -1, 8, 100])
def test_a_count_outside_1_to_v_minus_1_is_refused_with_its_bound(count: int) -> None:
    with raises_rule(OptionError, "neighbours.count") as caught:
        id_neighbour_ids(3, count, 8)
    assert (caught.value.count, caught.value.maximum) == (count, 7)


def test_vector_neighbours_are_the_highest_cosines_without_the_word_lower_id_first_on_ties() -> (
    None
):
    cosines = np.array([0.5, 0.9, 0.5, 1.0, 0.9, -0.2])
    assert vector_neighbour_ids(cosines, 3, 3) == (1, 4, 0)
    assert vector_neighbour_ids(cosines, 1, 5) == (3, 4, 0, 2, 5)


def test_word_neighbours_match_a_plain_numpy_computation(table: CosineTable) -> None:
    words = WholeWords(TOKENS)
    report = word_neighbours(table, words, "king", 3)
    rows = np.array(ROWS)
    cosines = [cosine(rows[1], row) for row in rows]
    order = sorted((j for j in range(len(rows)) if j != 1), key=lambda j: (-cosines[j], j))

    assert [piece.id for piece in report.pieces] == [1]
    assert [n.id for n in report.vector_neighbours] == order[:3]
    assert [n.id for n in report.id_neighbours] == [0, 2, 3]
    assert [n.token for n in report.id_neighbours] == ["[UNK]", "queen", "one"]
    for neighbour in (*report.id_neighbours, *report.vector_neighbours):
        assert neighbour.cosine == pytest.approx(cosines[neighbour.id], abs=1e-12)
    assert report.vector_mean_cosine == pytest.approx(np.mean([cosines[j] for j in order[:3]]))
    assert report.id_mean_cosine == pytest.approx(np.mean([cosines[j] for j in (0, 2, 3)]))


def test_an_id_the_tokenizer_does_not_have_has_no_token() -> None:
    table = CosineTable.of(layer_of([*ROWS, [1.0, 0.2, 0.01]]))
    report = word_neighbours(table, WholeWords(TOKENS), "king", 1)
    assert (report.vector_neighbours[0].id, report.vector_neighbours[0].token) == (8, None)


@pytest.mark.parametrize(
    ("word", "error", "fields"),
    [
        ("", "word.empty", {"word": ""}),
        ("   ", "word.empty", {"word": "   "}),
        ("cat", "word.unknown", {"word": "cat", "unknown_token": "[UNK]"}),
        ("king cat", "word.unknown", {"word": "king cat", "unknown_token": "[UNK]"}),
        ("king queen", "word.pieces", {"count": 2, "pieces": "king 1, queen 2"}),
    ],
)
def test_a_word_that_is_not_one_known_piece_is_refused_by_rule_and_fields(
    word: str, error: str, fields: dict[str, object]
) -> None:
    with raises_rule(WordError, error) as caught:
        word_piece(WholeWords(TOKENS), word)
    assert {name: getattr(caught.value, name) for name in fields} == fields


def test_the_count_is_checked_before_the_word(table: CosineTable) -> None:
    with raises_rule(OptionError, "neighbours.count"):
        word_neighbours(table, WholeWords(TOKENS), "", 0)
    with raises_rule(OptionError, "neighbours.count"):
        neighbours_report(table, WholeWords(TOKENS), ["cat"], 8, "t")


def test_a_word_whose_row_is_zero_is_refused_and_zero_rows_elsewhere_have_cosine_zero() -> None:
    rows = [[1.0, 0.0], [0.0, 0.0], [0.5, 0.5]]
    table = CosineTable.of(layer_of(rows))
    words = WholeWords(("a", "b", "c"))
    with raises_rule(WordError, "word.zero-vector") as caught:
        word_neighbours(table, words, "b", 1)
    assert (caught.value.word, caught.value.id) == ("b", 1)

    report = word_neighbours(table, words, "a", 2)
    assert [(n.id, n.cosine) for n in report.id_neighbours] == [
        (1, 0.0),
        (2, pytest.approx(0.5**0.5)),
    ]


def test_group_cosines_are_pair_means_inside_and_across_groups(table: CosineTable) -> None:
    groups = (
        ("royalty", ("king", "queen")),
        ("numbers", ("one", "two")),
        ("colours", ("red", "blue")),
    )
    found = group_cosines(table, WholeWords(TOKENS), groups)
    rows = np.array(ROWS)
    ids = {"king": 1, "queen": 2, "one": 3, "two": 4, "red": 5, "blue": 6}
    for result, (name, words) in zip(found, groups, strict=True):
        others = [w for g, ws in groups if g != name for w in ws]
        within = cosine(rows[ids[words[0]]], rows[ids[words[1]]])
        between = np.mean([cosine(rows[ids[a]], rows[ids[b]]) for a in words for b in others])
        assert (result.group, result.words) == (name, words)
        assert result.within == pytest.approx(within)
        assert result.between == pytest.approx(between)
        assert result.within > result.between


def test_the_projection_is_the_svd_of_the_centred_unit_vectors(table: CosineTable) -> None:
    groups = (
        ("royalty", ("king", "queen")),
        ("numbers", ("one", "two")),
        ("colours", ("red", "blue")),
    )
    projection = project_groups(table, WholeWords(TOKENS), groups)
    rows = np.array(ROWS)[[1, 2, 3, 4, 5, 6]]
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    centred = unit - unit.mean(axis=0)
    _, singular, right = np.linalg.svd(centred)
    coordinates = centred @ right[:2].T

    found = np.array([[word.x, word.y] for word in projection.words])
    # Each component is fixed up to its sign; the projection chose the sign of its largest value.
    for axis in range(2):
        column = coordinates[:, axis]
        sign = np.sign(column[np.argmax(np.abs(column))])
        np.testing.assert_allclose(found[:, axis], sign * column, atol=1e-12)
        assert found[np.argmax(np.abs(found[:, axis])), axis] > 0
    shares = singular**2 / np.sum(singular**2)
    assert projection.explained == pytest.approx(tuple(shares[:2]))
    assert [word.word for word in projection.words] == [
        "king",
        "queen",
        "one",
        "two",
        "red",
        "blue",
    ]


def test_a_cosine_table_keeps_only_read_only_norms_and_its_cosines_stay_put() -> None:
    table = CosineTable.of(layer_of(ROWS))
    before = table.cosines_to_row(1).tolist()
    with pytest.raises(ValueError, match="read-only"):
        table.norms[1] = 0.0
    assert table.norms.shape == (len(ROWS),)
    assert table.cosines_to_row(1).tolist() == before


def test_cosines_read_in_chunks_are_the_cosines_of_the_whole_table_scaled_at_once() -> None:
    rows_per_chunk = CHUNK_VALUES // 4
    rows = np.random.default_rng(5).normal(size=(2 * rows_per_chunk + 3, 4)).astype(np.float32)
    rows[rows_per_chunk + 1] = 0.0
    table = CosineTable.of(layer_of(rows.tolist()))
    whole = rows.astype(np.float64)
    norms = np.linalg.norm(whole, axis=1, keepdims=True)
    unit = np.divide(whole, norms, out=np.zeros_like(whole), where=norms > 0)
    direction = whole[7] / np.linalg.norm(whole[7])
    assert table.cosines_to_row(7).tolist() == (unit @ direction).tolist()
    assert table.norms.tolist() == norms[:, 0].tolist()
