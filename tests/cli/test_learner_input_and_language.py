"""A learner's own IDs get a demo about those IDs only, and every learner command takes
``--lang ru`` (before or after its view) and prints Russian, its numbers those of English."""

from __future__ import annotations

import re

import pytest

from llm_from_scratch.cli import build_parser
from llm_from_scratch.figures.cli import language
from llm_from_scratch.labels import DEMO_LABELS, load_labels

from cli_support import run_cli
from conftest import GOLDEN

#: The demo's lines about the chapter's own fixture, not about a learner's IDs.
CHAPTER_ONLY = ("initialized:", "identity:", "empty ids:", "bounds:", "chapter 19 handoff:")
NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


@pytest.mark.parametrize(
    ("given", "lines"),
    [
        (["--ids", "[[3,3],[0,3]]"], 8),  # six lines, one repeated row, the unused rows
        (["--ids", "2"], 7),
        (["--upstream", "[[[1,1],[1,1],[1,1]]]"], 8),
    ],
)
def test_a_learners_input_prints_only_lines_about_the_ids_typed(
    capsys: pytest.CaptureFixture[str], given: list[str], lines: int
) -> None:
    status, out, err = run_cli(capsys, "ch18", *given)

    assert (status, err) == (0, "")
    assert not [line for line in out.splitlines() if line.startswith(CHAPTER_ONLY)]
    assert len(out.splitlines()) == lines
    assert out.splitlines()[-1] == "unused rows stay zero: true"


def test_the_chapter_demo_keeps_its_thirteen_lines(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "ch18", "--lang", "en")

    assert out == (GOLDEN / "ch18_demo.txt").read_text()
    assert [line for line in out.splitlines() if line.startswith(CHAPTER_ONLY)]


@pytest.mark.parametrize("given", [[], ["--ids", "[[3,3],[0,3]]"]])
def test_the_russian_demo_says_the_english_lines_in_russian_with_the_same_numbers(
    capsys: pytest.CaptureFixture[str], given: list[str]
) -> None:
    _, english, _ = run_cli(capsys, "ch18", *given)
    status, russian, err = run_cli(capsys, "ch18", "--lang", "ru", *given)

    labels = load_labels("ru", DEMO_LABELS)
    assert (status, err) == (0, "")
    assert len(russian.splitlines()) == len(english.splitlines())
    for ours, theirs in zip(russian.splitlines(), english.splitlines(), strict=True):
        assert re.search("[\u0430-\u044f\u0451]", ours), ours  # a Russian letter
        assert NUMBER.findall(ours.replace("19", "")) == NUMBER.findall(theirs.replace("19", ""))
    assert russian.splitlines()[3] == str(labels["one_hot"]).format(equal=labels["true"])
    assert "входящий градиент" in russian and "выбор" in russian


def test_the_trace_keeps_its_grammar_in_every_language(capsys: pytest.CaptureFixture[str]) -> None:
    _, english, _ = run_cli(capsys, "ch18", "trace")

    assert run_cli(capsys, "ch18", "trace", "--lang", "ru")[1] == english
    assert run_cli(capsys, "ch18", "--lang", "ru", "trace")[1] == english


LEARNER_COMMANDS = [
    [],
    ["trace"],
    ["figure"],
    ["exercises"],
    ["neighbours", "king"],
    ["train"],
]


@pytest.mark.parametrize("view", LEARNER_COMMANDS, ids=lambda view: view[0] if view else "demo")
@pytest.mark.parametrize("where", ["before", "after"])
def test_every_learner_command_takes_lang_ru_before_or_after_its_view(
    view: list[str], where: str
) -> None:
    lang = ["--lang", "ru"]
    words = ["ch18", *lang, *view] if where == "before" else ["ch18", *view, *lang]

    assert language(build_parser().parse_args(words)) == "ru"
    assert language(build_parser().parse_args(["ch18", *view])) == "en"


@pytest.mark.parametrize("view", LEARNER_COMMANDS, ids=lambda view: view[0] if view else "demo")
def test_every_learner_commands_help_names_lang(
    capsys: pytest.CaptureFixture[str], view: list[str]
) -> None:
    status, out, _ = run_cli(capsys, "ch18", *view[:1], "--help")

    assert status == 0 and "--lang {en,ru}" in out


def test_a_language_other_than_en_or_ru_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run_cli(capsys, "ch18", "--lang", "de")

    assert status == 2 and "invalid choice: 'de'" in err
