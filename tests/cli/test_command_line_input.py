"""Whatever the command line holds, ``llm-from-scratch`` answers with an exit status and at most
one error line: a word that is not text (bytes that are not UTF-8, which Python hands over as
lone surrogates) is refused before anything runs; every value an error echoes is escaped, so a
line break in a file name cannot split the line; file options that the system cannot take, an
endless file and numbers of any size in an answers file are typed one-line errors or answers."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from llm_from_scratch.files import FILE_BYTE_LIMIT, one_line

from checks import within_seconds
from cli_support import run_cli, run_main
from conftest import require_tokenizers, unavailable
from neighbours_support import layer_of

NO_FILE = "/no/such/folder/file"


def error_lines(err: str) -> list[str]:
    """The lines of standard error, without argparse's usage block (``usage:`` and the lines
    indented under it)."""
    lines = err.splitlines()
    if lines and lines[0].startswith("usage:"):
        lines = lines[1:]
        while lines and lines[0].startswith(" "):
            lines = lines[1:]
    return lines


def not_text(word: str) -> bool:
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


#: A word: bytes as Python decodes them from argv (``os.fsdecode``, so bytes that are not UTF-8
#: become lone surrogates), any text at all, or words with a meaning to argparse.
words = st.one_of(
    st.binary(max_size=16).map(os.fsdecode),
    st.text(st.characters(codec=None, categories=None), max_size=16),
    st.sampled_from(["-", "--", "-x", "[1]", "2", ".", "no\nsuch.json", "\u2028", "\x1b[31m"]),
)

#: Commands whose words come from outside; none writes a file or reads standard input.
TEMPLATES = (
    ("ch18", "neighbours", "{0}", "--table", NO_FILE, "--tokenizer", NO_FILE),
    ("ch18", "neighbours", "king", "--table", "{0}", "--tokenizer", "{1}"),
    ("ch18", "exercises", "--answers", "{0}"),
    ("ch18", "figure", "--trace", "{0}", "--lang", "{1}"),
    ("ch18", "--ids", "{0}"),
    ("ch18", "trace", "--ids", "[1]", "--upstream", "{0}"),
    ("ch18", "{0}"),
    ("{0}", "{1}"),
)


def filled(template: tuple[str, ...], first: str, second: str) -> list[str]:
    return [{"{0}": first, "{1}": second}.get(word, word) for word in template]


@given(st.sampled_from(TEMPLATES), words, words)
@settings(deadline=None)
def test_any_command_line_is_an_exit_status_and_at_most_one_error_line(
    template: tuple[str, ...], first: str, second: str
) -> None:
    argv = filled(template, first, second)
    if argv[0] == "-" or argv[:2] == ["ch18", "-"] or "bench" in argv[:1]:
        return  # standard input and the benchmarks are not this test's business
    status, out, err = run_main(argv)
    bad = [number for number, word in enumerate(argv, start=1) if not_text(word)]
    if bad:
        event("not text")
        assert (status, out) == (2, "")
        assert err.startswith(f"error: command-line word {bad[0]}, ") and err.count("\n") == 1
        return
    lines = error_lines(err)
    event(f"status {status}, {len(lines)} error line(s)")
    assert status in (0, 1, 2)
    assert len(lines) == (0 if status == 0 else 1), err
    assert all(line.isprintable() for line in lines)


def test_a_word_that_is_not_utf8_is_refused_on_one_line_before_the_tokenizer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    word = os.fsdecode(b"\xff")  # what Python makes of `ch18 neighbours $'\xff'`
    assert run_cli(capsys, "ch18", "neighbours", word) == (
        2,
        "",
        "error: command-line word 3, '\\udcff', is not text: '\\udcff' at index 0 is a lone "
        "surrogate, which UTF-8 cannot encode (a byte that is not UTF-8 arrives as one)\n",
    )


@pytest.mark.parametrize("word", [b"not bytes", None, 3])
def test_a_word_that_is_not_a_str_is_refused_on_one_line(
    capsys: pytest.CaptureFixture[str], word: object
) -> None:
    status, out, err = run_cli(capsys, "ch18", "neighbours", word)  # type: ignore[arg-type]
    assert (status, out) == (2, "")
    assert err == f"error: command-line word 3 is not text: {type(word).__name__} {word!r}\n"


def test_a_line_break_in_a_file_name_is_echoed_escaped_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run_cli(
        capsys, "ch18", "neighbours", "king", "--table", "no\nsuch.safetensors",
        "--tokenizer", "tokenizer.json",
    )  # fmt: skip
    assert (status, out) == (2, "")
    assert err.startswith("error: no table file at no\\nsuch.safetensors; ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["ch18", "exercises", "--answers", "no\nsuch\x1b[2J.json"],
        ["ch18", "figure", "--trace", "no\nsuch\u2028trace.txt"],
        ["ch18", "--ids", "[1,\n"],
        ["ch18", "trace", "extra\nword"],
    ],
)
def test_every_error_is_one_printable_line(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    status, out, err = run_cli(capsys, *args)
    assert (status, out) == (2, "")
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].isprintable()


@pytest.mark.parametrize(
    ("option", "path"),
    [
        ("--answers", "a\0b.json"),
        ("--answers", "😀" * 64),
        ("--trace", "a\0b.txt"),
        ("--trace", "😀" * 64),
    ],
)
def test_a_file_option_the_system_cannot_take_is_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str], option: str, path: str
) -> None:
    view = "exercises" if option == "--answers" else "figure"
    status, out, err = run_cli(capsys, "ch18", view, option, path)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert one_line(path) in err


def test_an_output_the_system_cannot_take_is_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from llm_from_scratch.demos.ch18_token_embeddings import render_trace

    trace = tmp_path / "trace.txt"
    trace.write_text(render_trace(), encoding="utf-8")
    for output in ("a\0b.html", str(tmp_path), str(tmp_path / "missing" / "f.html")):
        args = ["ch18", "figure", "--trace", str(trace), "--output", output]
        status, out, err = run_cli(capsys, *args)
        assert (status, out) == (2, "") and err.count("\n") == 1, output
    assert sorted(os.listdir(tmp_path)) == ["trace.txt"]


def test_an_endless_answers_file_fails_at_once_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if not os.path.exists("/dev/zero"):
        unavailable("needs a /dev/zero device", ci_provides=True)
    with within_seconds(2.0):
        status, out, err = run_cli(capsys, "ch18", "exercises", "--answers", "/dev/zero")
    assert (status, out) == (2, "")
    assert err == (
        "error: answers file /dev/zero: is too large for an answers file "
        f"(more than {FILE_BYTE_LIMIT} bytes, the most read from such a file)\n"
    )


# The neighbours of any word, in a table of our own -----------------------------------------------


@pytest.fixture(scope="module")
def own_table() -> Iterator[tuple[str, str]]:
    tokenizers = require_tokenizers()
    from llm_from_scratch.nn import NamedParameters, save_parameters

    with tempfile.TemporaryDirectory() as folder:
        table = Path(folder) / "words.safetensors"
        layer = layer_of([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.5]], "words.weight")
        save_parameters(table, NamedParameters([layer.table]))
        vocabulary = {"[UNK]": 0, "sun": 1, "moon": 2, "star": 3}
        model = tokenizers.models.WordLevel(vocab=vocabulary, unk_token="[UNK]")
        tokenizer = tokenizers.Tokenizer(model)
        tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
        path = Path(folder) / "tokenizer.json"
        tokenizer.save(str(path))
        yield str(table), str(path)


@given(st.lists(st.one_of(words, st.sampled_from(["sun", "moon", "star"])), min_size=1, max_size=3))
@settings(deadline=None)
def test_any_words_are_neighbours_or_one_error_line(
    own_table: tuple[str, str], chosen: list[str]
) -> None:
    table, tokenizer = own_table
    argv = ["ch18", "neighbours", "--table", table, "--tokenizer", tokenizer, "--count", "1"]
    argv += ["--tensor", "words.weight", "--", *chosen]
    status, out, err = run_main(argv)
    if any(not_text(word) for word in chosen):
        event("not text")
        assert (status, out) == (2, "") and err.startswith("error: command-line word ")
        return
    event(f"status {status}")
    assert status in (0, 2)
    if status == 0:
        assert err == "" and out.count("word ") >= len(chosen)
    else:
        assert out == "" and err.count("\n") == 1 and err[:-1].isprintable()


def test_answers_of_any_size_are_right_wrong_or_refused_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"8": false, "1": 1' + "0" * 310 + "}", encoding="utf-8")
    status, out, err = run_cli(capsys, "ch18", "exercises", "--answers", str(path))
    assert (status, err) == (1, "")
    assert "Exercise 1 of 11: wrong, the computed value is [[[30, 31]" in out
    assert "Exercise 8 of 11: right" in out
    path.write_text(json.dumps({"1": [[[30, 31], [20, 21], [30, 31.0]]]}), encoding="utf-8")
    assert run_cli(capsys, "ch18", "exercises", "--answers", str(path))[2] == ""
    path.write_text('{"1": ' + "9" * 5000 + "}", encoding="utf-8")
    status, out, err = run_cli(capsys, "ch18", "exercises", "--answers", str(path))
    assert (status, out) == (2, "")
    assert err == (
        f"error: answers file {path}: is not JSON (an integer of 5000 digits, more than 4300)\n"
    )
