"""The command ``llm-from-scratch ch18 figure``."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest

from llm_from_scratch.cli import build_parser, main
from llm_from_scratch.errors import OptionError
from llm_from_scratch.figures.cli import language, run

from checks import raises_rule
from conftest import GOLDEN, unavailable

#: The trace of spec section 7, byte for byte (LF endings kept: read as bytes).
SPEC_TRACE = (GOLDEN / "ch18_trace.txt").read_bytes().decode("utf-8")


@pytest.fixture(scope="module")
def trace_text() -> str:
    """The 15-line trace of spec section 7."""
    return SPEC_TRACE


@pytest.fixture
def trace_file(tmp_path: Path, trace_text: str) -> Path:
    path = tmp_path / "trace.txt"
    path.write_bytes(trace_text.encode("utf-8"))
    return path


def test_a_saved_trace_is_drawn_to_standard_output_in_english_by_default(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["ch18", "figure", "--trace", str(trace_file)])

    out, err = capsys.readouterr()
    assert status == 0
    assert err == ""
    assert out.startswith("<!DOCTYPE html>")
    assert '<html lang="en"' in out


def test_a_saved_trace_is_written_in_russian_to_the_output_path(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "figure.html"

    status = main(
        ["ch18", "figure", "--lang", "ru", "--trace", str(trace_file), "--output", str(output)]
    )

    assert status == 0
    assert capsys.readouterr() == ("", "")
    page = output.read_text(encoding="utf-8")
    assert '<html lang="ru"' in page
    assert "Эмбеддинги токенов" in page


def test_a_bad_trace_file_exits_non_zero_with_the_parser_message(
    tmp_path: Path, trace_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(trace_text.replace("state=unused", "state=selected-once", 1), "utf-8")

    status = main(["ch18", "figure", "--trace", str(path)])

    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert err == ("error: TABLE 0 state: expected unused for uses=0, found selected-once\n")


def test_a_crlf_trace_file_is_rejected_because_its_bytes_are_read_untouched(
    tmp_path: Path, trace_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(trace_text.replace("\n", "\r\n").encode("utf-8"))

    status = main(["ch18", "figure", "--trace", str(path)])

    assert status == 2
    assert capsys.readouterr().err == (
        "error: TRACE BEGIN line ending: expected LF line endings, found CR\n"
    )


def test_a_missing_trace_file_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.txt"

    status = main(["ch18", "figure", "--trace", str(path)])

    assert status == 2
    assert capsys.readouterr().err == f"error: {path}: No such file or directory\n"


def test_a_trace_file_that_is_not_utf8_is_refused_as_the_grammar_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.txt"
    path.write_bytes(b"\xff\xfe not UTF-8")

    status = main(["ch18", "figure", "--trace", str(path)])

    assert status == 2
    assert capsys.readouterr().err.startswith(f"error: TRACE encoding: {path} is not UTF-8: ")


def test_an_output_whose_folder_is_missing_is_refused_naming_it(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "missing-folder" / "figure.html"

    status = main(["ch18", "figure", "--trace", str(trace_file), "--output", str(output)])

    assert status == 2
    assert capsys.readouterr().err == f"error: {output}: no folder {str(output.parent)!r}\n"


def test_an_output_the_system_fails_to_write_is_a_failed_run_naming_the_file(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not os.path.exists("/dev/full"):
        unavailable("needs a /dev/full device", ci_provides=True)

    status = main(["ch18", "figure", "--trace", str(trace_file), "--output", "/dev/full"])

    assert status == 1
    assert capsys.readouterr().err == "error: /dev/full: No space left on device\n"


def test_a_dash_reads_the_trace_from_standard_input(
    trace_text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(trace_text.encode("utf-8")), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)

    assert main(["ch18", "figure", "--trace", "-"]) == 0
    assert capsys.readouterr().out.startswith("<!DOCTYPE html>")


def figure_arguments(*words: str) -> argparse.Namespace:
    """``ch18 figure WORDS`` parsed by the one parser of the command line."""
    return build_parser().parse_args(["ch18", "figure", *words])


def test_the_options_are_documented_and_the_language_is_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["ch18", "figure", "--help"])

    help_text = capsys.readouterr().out
    for option in ("--lang {en,ru}", "--output PATH", "--trace FILE"):
        assert option in help_text
    assert language(figure_arguments()) == "en"
    assert language(figure_arguments("--lang", "ru")) == "ru"
    with pytest.raises(SystemExit):
        figure_arguments("--lang", "de")
    assert "invalid choice: 'de'" in capsys.readouterr().err


def test_run_takes_the_namespace_the_parser_builds(trace_file: Path, tmp_path: Path) -> None:
    output = tmp_path / "figure.html"

    status = run(figure_arguments("--trace", str(trace_file), "--output", str(output)))

    assert status == 0
    assert output.read_text(encoding="utf-8").endswith("</html>\n")


def test_a_fresh_trace_from_the_chapter_demo_is_drawn(
    trace_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_from_scratch.demos.ch18_token_embeddings import render_trace

    assert render_trace() == trace_text
    assert main(["ch18", "figure", "--lang", "ru"]) == 0
    assert "[4, 4]" in capsys.readouterr().out


def test_run_draws_a_trace_handed_in_as_text_and_needs_one(
    trace_text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "figure.html"
    args = figure_arguments("--output", str(output))

    assert run(args, trace_text) == 0
    assert "[4, 4]" in output.read_text(encoding="utf-8")
    with raises_rule(OptionError, "figure.no-trace"):
        run(args)
