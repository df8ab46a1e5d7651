"""The ``llm-from-scratch`` command line: the chapter demo and trace byte for byte, and
``ch18 [trace|figure] --ids JSON [--upstream JSON]``, the chapter's table on a learner's IDs,
whose bad input is the layer's and the tape's own error as one line with exit status 2."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings import KNOWN_FIXTURE
from llm_from_scratch.figures.trace_parser import parse_trace
from llm_from_scratch.tensor import Tensor

from cli_support import run_cli
from conftest import GOLDEN

SPEC = Path(__file__).resolve().parents[2] / "docs" / "spec" / "ch18-token-embeddings.md"


def test_ch18_prints_the_demo_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "ch18")
    assert status == 0
    assert out == (GOLDEN / "ch18_demo.txt").read_text()
    assert len(out.splitlines()) == 13


def test_ch18_trace_prints_the_trace_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "ch18", "trace")
    assert status == 0
    assert out == (GOLDEN / "ch18_trace.txt").read_text()
    assert len(out.splitlines()) == 15


def test_golden_files_are_the_contract_text() -> None:
    blocks = re.findall(r"```\n(.*?)```", SPEC.read_text(), re.S)
    assert (GOLDEN / "ch18_demo.txt").read_text() in blocks
    assert (GOLDEN / "ch18_trace.txt").read_text() in blocks


@pytest.mark.parametrize("args", [[], ["ch18"], ["ch18", "trace"], ["ch18", "figure"]])
def test_help_works_at_every_level(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    status, out, _ = run_cli(capsys, *args, "--help")
    assert status == 0 and "usage:" in out


def test_a_bad_subcommand_exits_2_with_usage(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "ch99")
    assert status == 2 and "usage:" in err
    status, _, err = run_cli(capsys, "ch18", "tracee")
    assert status == 2 and "usage:" in err


def test_python_dash_m_runs_the_same_demo() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "llm_from_scratch", "ch18"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == (GOLDEN / "ch18_demo.txt").read_text()


#: The IDs a learner types, and the token shape and flat IDs they mean.
LEARNER_IDS = [
    pytest.param("2", "none", ("2",), id="scalar"),
    pytest.param("[]", "0", (), id="empty"),
    pytest.param("[[0,0,0]]", "1x3", ("0", "0", "0"), id="one-row-thrice"),
    pytest.param("[[3,2],[1,0]]", "2x2", ("3", "2", "1", "0"), id="two-by-two"),
]


def raised_by(call: Callable[[], object]) -> Exception:
    """The exception ``call`` raises (the reference error a CLI message must repeat)."""
    with pytest.raises(Exception) as caught:
        call()
    assert isinstance(caught.value, Exception)
    return caught.value


@pytest.mark.parametrize(("ids", "shape", "flat"), LEARNER_IDS)
def test_ch18_trace_with_ids_prints_a_trace_that_parses_to_those_ids(
    capsys: pytest.CaptureFixture[str], ids: str, shape: str, flat: tuple[str, ...]
) -> None:
    status, out, err = run_cli(capsys, "ch18", "trace", "--ids", ids)

    assert (status, err) == (0, "")
    trace = parse_trace(out)
    assert (trace.fixture.id_shape, trace.ids.values) == (shape, flat)
    assert trace.fixture.name == "known-table-learner-input"


@pytest.mark.parametrize(("ids", "shape", "flat"), LEARNER_IDS)
def test_ch18_with_ids_prints_the_demo_of_those_ids(
    capsys: pytest.CaptureFixture[str], ids: str, shape: str, flat: tuple[str, ...]
) -> None:
    status, out, _ = run_cli(capsys, "ch18", "--ids", ids)

    lines = out.splitlines()
    assert status == 0
    assert lines[1] == f"ids: shape={shape} values={','.join(flat) or 'none'}"
    assert "one-hot multiplication equals lookup: true" in lines
    assert "unused rows stay zero: true" in lines


@pytest.mark.parametrize(("ids", "shape", "flat"), LEARNER_IDS)
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_ch18_figure_with_ids_draws_the_trace_of_those_ids(
    capsys: pytest.CaptureFixture[str], ids: str, shape: str, flat: tuple[str, ...], lang: str
) -> None:
    status, out, err = run_cli(capsys, "ch18", "figure", "--lang", lang, "--ids", ids)

    assert (status, err) == (0, "")
    assert out.startswith("<!DOCTYPE html>")
    assert f'<html lang="{lang}"' in out
    assert f'<dd><span class="num" dir="ltr">{shape}</span></dd>' in out


def test_the_ids_may_come_before_or_after_the_view(capsys: pytest.CaptureFixture[str]) -> None:
    before = run_cli(capsys, "ch18", "--ids", "[[1,3]]", "trace")
    after = run_cli(capsys, "ch18", "trace", "--ids", "[[1,3]]")

    assert before == after
    assert before[0] == 0


def test_the_default_upstream_with_ids_counts_1_2_3_over_the_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run_cli(capsys, "ch18", "--ids", "[[3,3],[0,3]]")

    assert "upstream: shape=2x2x2 values=1.000000000000,2.000000000000,3.000000000000," in out
    assert (
        "repeated row 3: [1.000000000000,2.000000000000] + [3.000000000000,4.000000000000]"
        " + [7.000000000000,8.000000000000] = [11.000000000000,14.000000000000]\n"
    ) in out


@pytest.mark.parametrize("upstream", ["[[[0.5,1],[2,3]]]", "[0.5,1,2,3]"], ids=["nested", "flat"])
def test_an_upstream_may_be_nested_in_the_output_shape_or_flat(
    capsys: pytest.CaptureFixture[str], upstream: str
) -> None:
    status, out, _ = run_cli(capsys, "ch18", "--ids", "[[0,0]]", "--upstream", upstream)

    assert status == 0
    assert (
        "repeated row 0: [0.500000000000,1.000000000000] + [2.000000000000,3.000000000000]" in out
    )


def test_an_upstream_alone_applies_to_the_chapter_ids(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "ch18", "--upstream", "[[[1,1],[1,1],[1,1]]]")

    assert status == 0
    assert "ids: shape=1x3 values=2,1,2\n" in out
    assert "= [2.000000000000,2.000000000000]\n" in out


BAD_IDS = [
    pytest.param("[[1,4]]", id="out of bounds"),
    pytest.param("[-1]", id="negative"),
    pytest.param("[0, true]", id="bool"),
    pytest.param("1.5", id="float"),
    pytest.param("null", id="null"),
    pytest.param('["a"]', id="string"),
    pytest.param("[[1,2],[3]]", id="ragged"),
    pytest.param("[99999999999999999999999]", id="beyond 64 bits"),
]


@pytest.mark.parametrize("ids", BAD_IDS)
@pytest.mark.parametrize("view", [[], ["trace"], ["figure"]], ids=["demo", "trace", "figure"])
def test_bad_ids_print_the_layers_own_error_as_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], ids: str, view: list[str]
) -> None:
    expected = raised_by(lambda: KNOWN_FIXTURE.layer()(json.loads(ids)))

    status, out, err = run_cli(capsys, "ch18", *view, "--ids", ids)

    assert (status, out, err) == (2, "", f"error: {expected}\n")


@pytest.mark.parametrize("ids", [[[1, 4]], [0, True], [[1, 2], [3]]], ids=str)
def test_the_fixture_raises_the_layers_error_class_and_fields(ids: object) -> None:
    expected = raised_by(lambda: KNOWN_FIXTURE.layer()(ids))

    error = raised_by(lambda: KNOWN_FIXTURE.with_ids(ids))

    assert (type(error), vars(error)) == (type(expected), vars(expected))


def seed_error(ids: object, seed: Any) -> Exception:
    """What the tape (or the tensor) says about this seed for the layer's output on ``ids``."""
    output = KNOWN_FIXTURE.layer()(ids)
    return raised_by(lambda: output.backward_with_seed(seed))


BAD_UPSTREAMS = [
    pytest.param("[[1],[2]]", lambda: seed_error([1], np.ones((2, 1))), id="other shape"),
    pytest.param(
        "[1,2,3]", lambda: raised_by(lambda: Tensor((1, 2), [1, 2, 3])), id="flat, wrong length"
    ),
    pytest.param(
        '[[1,"a"]]', lambda: raised_by(lambda: Tensor((1, 2), [1, "a"])), id="not a number"
    ),
]


@pytest.mark.parametrize(("upstream", "reference"), BAD_UPSTREAMS)
def test_a_bad_upstream_prints_the_tape_or_tensor_error_as_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], upstream: str, reference: Callable[[], Exception]
) -> None:
    status, out, err = run_cli(capsys, "ch18", "trace", "--ids", "[1]", "--upstream", upstream)

    assert (status, out, err) == (2, "", f"error: {reference()}\n")


@pytest.mark.parametrize("upstream", ["[[1,NaN]]", "[[1,1e400]]", "[[1,-Infinity]]"])
def test_an_upstream_that_is_not_finite_is_a_refused_input_exit_2(
    capsys: pytest.CaptureFixture[str], upstream: str
) -> None:
    given = json.loads(upstream)
    reference = seed_error([1], np.array(given))  # a NonFiniteError of the caller's own value

    status, out, err = run_cli(capsys, "ch18", "trace", "--ids", "[1]", "--upstream", upstream)

    assert (status, out, err) == (2, "", f"error: {reference}\n")


@pytest.mark.parametrize("view", [[], ["trace"], ["figure"]])
def test_an_upstream_number_that_overflows_is_a_refused_input_exit_2(
    capsys: pytest.CaptureFixture[str], view: list[str]
) -> None:
    digits = "9" * 4000
    status, out, err = run_cli(
        capsys, "ch18", *view, "--ids", "[1]", "--upstream", f"[[1,{digits}]]"
    )
    assert (status, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"error: tensor value {digits}") and err.endswith("overflows float64\n")
    status, _, err = run_cli(capsys, "ch18", *view, "--upstream", f"[[[{digits},0],[0,2],[3,4]]]")
    assert status == 2 and err.endswith("overflows float64\n")
    status, _, err = run_cli(capsys, "ch18", *view, "--ids", digits)
    assert status == 2 and err.endswith("is out of bounds for vocabulary size 4\n")


def test_a_ragged_upstream_is_refused_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "ch18", "--ids", "[[1,2]]", "--upstream", "[[[1,2],[3]]]")

    assert (status, out) == (2, "")
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("option", ["--ids", "--upstream"])
@pytest.mark.parametrize("text", ["[1,", "'2'", "", "[" * 100_000])
def test_text_that_is_not_json_is_one_line_naming_the_option_and_exit_2(
    capsys: pytest.CaptureFixture[str], option: str, text: str
) -> None:
    status, out, err = run_cli(capsys, "ch18", option, text)

    assert (status, out) == (2, "")
    assert err.startswith(f"error: {option} is not valid JSON: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("view", [["trace"], ["figure"]])
def test_two_repeated_ids_are_a_trace_v1_cannot_express_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], view: list[str]
) -> None:
    status, out, err = run_cli(capsys, "ch18", *view, "--ids", "[[0,0,1,1]]")

    assert (status, out) == (2, "")
    assert err == (
        "error: IDS repeated-id: expected at most one repeated ID (v1 names one), found IDs 0, 1\n"
    )


def test_the_demo_of_two_repeated_ids_prints_both_sums(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "ch18", "--ids", "[[0,0,1,1]]")

    assert status == 0
    assert [line[:14] for line in out.splitlines() if line.startswith("repeated")] == [
        "repeated row 0",
        "repeated row 1",
    ]


def test_ids_and_a_saved_trace_cannot_be_combined(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    path = tmp_path / "trace.txt"
    path.write_bytes((GOLDEN / "ch18_trace.txt").read_bytes())

    status, out, err = run_cli(capsys, "ch18", "figure", "--trace", str(path), "--ids", "2")

    assert (status, out) == (2, "")
    assert err == "error: --ids and --upstream compute a fresh trace; leave them out with --trace\n"


@pytest.mark.parametrize("view", [[], ["trace"], ["figure"]])
def test_help_documents_ids_and_the_default_upstream(
    capsys: pytest.CaptureFixture[str], view: list[str]
) -> None:
    status, out, _ = run_cli(capsys, "ch18", *view, "--help")

    text = " ".join(out.split())
    assert status == 0
    assert "--ids JSON" in text and "--upstream JSON" in text
    assert "Default with --ids: 1, 2, 3, ... in row-major order over the output shape" in text


def test_the_readme_shows_what_the_commands_print(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (SPEC.parents[2] / "docs" / "lesson.md").read_text(encoding="utf-8")
    examples = re.findall(r"^\$ llm-from-scratch (.*)\n(error: .*\n)", readme, re.M)

    assert len(examples) == 2
    for command, printed in examples:
        assert run_cli(capsys, *shlex.split(command)) == (2, "", printed)
    _, out, _ = run_cli(capsys, "ch18", "--ids", "[[3,3],[0,3]]")
    assert next(line for line in out.splitlines(True) if line.startswith("repeated")) in readme


def test_the_command_line_is_built_without_numpy_the_chapter_or_the_figure() -> None:
    code = (
        "import sys; from llm_from_scratch.cli import build_parser; build_parser().format_help();"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'jinja2')"
        " or m.startswith(('llm_from_scratch.demos', 'llm_from_scratch.nn',"
        " 'llm_from_scratch.figures.trace_parser'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"
