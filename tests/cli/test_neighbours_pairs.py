"""A table and its tokenizer belong together: ``ch18 neighbours --table A --tokenizer B`` refuses
a pair whose table has fewer rows than the tokenizer has tokens (any table; more rows are
padding, rows without a token) or whose vocabulary fingerprint differs (a table that
records one), in one line naming both files and what differs, with exit status 2; the
fingerprint is the SHA-256 of the tokens in ID order, each UTF-8 and followed by a line feed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from llm_from_scratch.demos.ch18_token_embeddings.pretrained import (
    load_word_pieces,
    open_table,
    packaged_files,
)
from llm_from_scratch.errors import MismatchError
from llm_from_scratch.labels import NEIGHBOUR_LABELS, label, load_labels
from llm_from_scratch.training.vocabulary import Vocabulary
from llm_from_scratch.vectors.table_pair import (
    FINGERPRINT_KEY,
    VOCABULARY_SIZE_KEY,
    tokenizer_metadata,
    vocabulary_fingerprint,
)

from checks import raises_rule
from cli_support import run_cli
from conftest import require_pretrained
from neighbours_support import PAIR_TOKENS, pair_files

LANGUAGES = ("en", "ru")


def sha256_of_lines(tokens: list[str]) -> str:
    return hashlib.sha256("".join(f"{token}\n" for token in tokens).encode("utf-8")).hexdigest()


def refusal(lang: str, difference: str, **fields: object) -> str:
    template = label(load_labels(lang, NEIGHBOUR_LABELS), "errors", "pair", difference)
    return f"error: {template.format(**fields)}\n"


def neighbours(
    capsys: pytest.CaptureFixture[str], table: Path, tokenizer: Path, *args: str
) -> tuple[int, str, str]:
    """``ch18 neighbours sun --table TABLE --tokenizer TOKENIZER ARGS``."""
    return run_cli(
        capsys, "ch18", "neighbours", "sun", "--table", str(table), "--tokenizer", str(tokenizer),
        *args,
    )  # fmt: skip


# The fingerprint -------------------------------------------------------------------------------


def test_the_fingerprint_is_the_sha256_of_the_tokens_in_id_order_each_on_its_own_line() -> None:
    tokens = ["[UNK]", "ёж", "two words", "", "☃"]
    expected = sha256_of_lines(tokens)
    assert vocabulary_fingerprint(tokens) == expected
    assert vocabulary_fingerprint(iter(tokens)) == expected
    assert vocabulary_fingerprint(tokens[::-1]) != expected
    assert vocabulary_fingerprint(tokens[:-1]) != expected
    assert tokenizer_metadata(tokens) == {
        "tokenizer_vocabulary_size": "5",
        "tokenizer_fingerprint": expected,
    }
    assert (VOCABULARY_SIZE_KEY, FINGERPRINT_KEY) == (
        "tokenizer_vocabulary_size",
        "tokenizer_fingerprint",
    )


def test_a_vocabulary_and_the_tokenizer_file_it_writes_have_one_fingerprint(
    tmp_path: Path,
) -> None:
    vocabulary = Vocabulary.build([["to", "be", "or", "not", "to", "be"], ["be"]], 1)
    path = tmp_path / "tokenizer.json"
    vocabulary.save_tokenizer(path)
    pieces = load_word_pieces(path)
    assert pieces.tokens() == list(vocabulary.words)
    assert pieces.vocabulary_size == vocabulary.vocabulary_size
    assert vocabulary_fingerprint(pieces.tokens()) == sha256_of_lines(list(vocabulary.words))


def test_the_minilm_tokens_are_its_vocabulary_in_id_order() -> None:
    require_pretrained()
    files = packaged_files()
    document = json.loads(files.tokenizer.read_text(encoding="utf-8"))
    vocabulary = document["model"]["vocab"]
    in_order = sorted(vocabulary, key=vocabulary.__getitem__)
    pieces = load_word_pieces(files.tokenizer)
    assert pieces.tokens() == in_order and pieces.vocabulary_size == len(in_order) == 30522


# Pairs that do not belong together -------------------------------------------------------------


def test_a_table_with_fewer_rows_is_refused_before_any_word_is_looked_up(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = pair_files(tmp_path, 3, PAIR_TOKENS)
    # "star" is ID 3, outside a 3-row table: the pair is refused before the word is looked up.
    status, out, err = run_cli(
        capsys, "ch18", "neighbours", "star", "--table", str(files.table),
        "--tokenizer", str(files.tokenizer),
    )  # fmt: skip
    assert (status, out) == (2, "")
    assert err == refusal(
        "en", "rows", table=files.table, tokenizer=files.tokenizer, table_value=3, tokenizer_value=4
    )


def test_the_figure_refuses_the_pair_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = pair_files(tmp_path, 3, PAIR_TOKENS)
    output = tmp_path / "figure.html"
    status, out, err = run_cli(
        capsys, "ch18", "neighbours", "--figure", str(output),
        "--table", str(files.table), "--tokenizer", str(files.tokenizer),
    )  # fmt: skip
    assert (status, out) == (2, "") and "do not belong together" in err
    assert not output.exists()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_table_that_records_another_vocabulary_of_the_same_size_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lang: str
) -> None:
    other = ("[UNK]", "moon", "sun", "star")  # two IDs swapped
    files = pair_files(tmp_path, 4, PAIR_TOKENS, tokenizer_metadata(other))
    status, out, err = neighbours(capsys, files.table, files.tokenizer, "--lang", lang)
    fields = {
        "table": files.table,
        "tokenizer": files.tokenizer,
        "table_value": sha256_of_lines(list(other)),
        "tokenizer_value": sha256_of_lines(list(PAIR_TOKENS)),
    }
    assert (status, out, err) == (2, "", refusal(lang, "fingerprint", **fields))


def test_a_table_that_records_another_vocabulary_size_is_refused(tmp_path: Path) -> None:
    metadata = {**tokenizer_metadata(PAIR_TOKENS), VOCABULARY_SIZE_KEY: "40"}
    files = pair_files(tmp_path, 4, PAIR_TOKENS, metadata)
    paths = {"table": str(files.table), "tokenizer": str(files.tokenizer)}
    with raises_rule(MismatchError, "pair.vocabulary-size", **paths) as caught:
        open_table(files)
    error = caught.value
    assert (error.table_value, error.tokenizer_value) == ("40", "4")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_small_table_with_the_minilm_tokenizer_is_refused_naming_both_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lang: str
) -> None:
    require_pretrained()
    table = pair_files(tmp_path, 4, PAIR_TOKENS).table
    tokenizer = packaged_files().tokenizer
    status, out, err = neighbours(capsys, table, tokenizer, "--lang", lang)
    fields = {"table": table, "tokenizer": tokenizer, "table_value": 4, "tokenizer_value": 30522}
    assert (status, out, err) == (2, "", refusal(lang, "rows", **fields))
    assert str(table) in err and str(tokenizer) in err


def test_a_padded_table_that_records_another_vocabulary_is_refused_by_its_fingerprint(
    tmp_path: Path,
) -> None:
    other = ("[UNK]", "moon", "sun", "star")
    files = pair_files(tmp_path, 6, PAIR_TOKENS, tokenizer_metadata(other))
    paths = {"table": str(files.table), "tokenizer": str(files.tokenizer)}
    fingerprints = {
        "table_value": sha256_of_lines(list(other)),
        "tokenizer_value": sha256_of_lines(list(PAIR_TOKENS)),
    }
    with raises_rule(MismatchError, "pair.fingerprint", **paths, **fingerprints):
        open_table(files)


# Pairs that do -------------------------------------------------------------------------------


def test_a_table_that_records_its_own_tokenizer_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = pair_files(tmp_path, 4, PAIR_TOKENS, tokenizer_metadata(PAIR_TOKENS))
    status, out, err = neighbours(capsys, files.table, files.tokenizer, "--count", "2")
    assert (status, err) == (0, "")
    assert out.splitlines()[4] == "Word sun: word piece sun (ID 1)"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_padded_table_answers_and_names_its_rows_without_a_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lang: str
) -> None:
    # Six rows for four tokens, as GPT-2's 50,304 rows for 50,257 tokens: rows 4 and 5 pad.
    files = pair_files(tmp_path, 6, PAIR_TOKENS, tokenizer_metadata(PAIR_TOKENS))
    status, out, err = neighbours(
        capsys, files.table, files.tokenizer, "--count", "5", "--lang", lang
    )
    assert (status, err) == (0, "")
    labels = load_labels(lang, NEIGHBOUR_LABELS)
    padding = [f"{row} {label(labels, 'no_token')}" for row in (4, 5)]
    rows = out.splitlines()[6:11]
    # Ranks 4 and 5 by ID, ranks 3 and 4 by vector (rows [1, 5] and [1, 6] near sun's [1, 2]).
    assert [row.split()[:4] for row in rows[3:]] == [
        ["4", *padding[0].split()],
        ["5", *padding[1].split()],
    ]
    assert sum(text in row for row in rows for text in padding) == 4 and "None" not in out


def test_a_table_without_a_record_of_the_same_size_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    files = pair_files(tmp_path, 4, PAIR_TOKENS)
    status, _, err = neighbours(capsys, files.table, files.tokenizer, "--count", "1")
    assert (status, err) == (0, "")


def test_the_readme_shows_the_refusal_as_the_error_words_it() -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "lesson.md").read_text("utf-8")
    paths = {"table": "ch18-train/table.safetensors", "tokenizer": "model/tokenizer.json"}
    error = MismatchError("pair.rows", **paths, table_value="9120", tokenizer_value="30522")
    assert f"  error: {error}\n" in readme
