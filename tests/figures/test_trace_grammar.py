"""The grammar ``token-embeddings-v1``: one module, shared by the writer and the reader."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import llm_from_scratch
from llm_from_scratch.errors import FormatError
from llm_from_scratch.traces.token_embeddings_v1 import (
    RECORD_FIELDS,
    RULES,
    SHARINGS,
    STATES,
    TRACE_VERSION,
    floats_text,
    ints_text,
    record_line,
    repeated_id_text,
    shape_text,
    vectors_text,
)

from checks import raises_rule
from conftest import GOLDEN

SOURCE = Path(llm_from_scratch.__file__).parent
GRAMMAR = SOURCE / "traces" / "token_embeddings_v1.py"


def loaded_after(code: str) -> list[str]:
    """The modules of the package and NumPy that a fresh interpreter holds after ``code``."""
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return [
        name
        for name in result.stdout.split()
        if name.startswith(("llm_from_scratch.", "numpy", "numba"))
    ]


def test_the_grammar_imports_nothing_from_the_package() -> None:
    assert loaded_after("import llm_from_scratch.traces.token_embeddings_v1") == [
        "llm_from_scratch.traces",
        "llm_from_scratch.traces.token_embeddings_v1",
    ]


def test_the_figure_reads_and_draws_a_trace_without_the_demo_the_layer_or_numpy() -> None:
    code = (
        "from llm_from_scratch.figures.render import render_figure\n"
        "from llm_from_scratch.figures.trace_parser import parse_trace\n"
        f"text = open({str(GOLDEN / 'ch18_trace.txt')!r}, encoding='utf-8', newline='').read()\n"
        "render_figure(parse_trace(text), 'ru')"
    )

    loaded = loaded_after(code)

    own = ("llm_from_scratch.figures", "llm_from_scratch.traces", "llm_from_scratch.files")
    own += ("llm_from_scratch.labels",)  # the label tables, below the figures
    assert all(name.startswith(own) for name in loaded), loaded  # files: the standard library's


def test_the_version_and_every_vocabulary_word_are_written_once_in_the_package() -> None:
    words = {TRACE_VERSION, *STATES, *RULES, *SHARINGS}
    found: dict[str, list[str]] = {word: [] for word in words}
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in words:
                found[node.value].append(path.name)

    assert found == {word: [GRAMMAR.name] for word in words}


def test_a_record_line_names_its_fields_in_the_grammar_order() -> None:
    fields = {"row": "3", "uses": "0", "state": STATES[0], "values": floats_text([1.5, -2.0])}

    assert record_line("TABLE", fields) == (
        "TABLE row=3 uses=0 state=unused values=1.500000000000,-2.000000000000"
    )
    assert tuple(fields) == RECORD_FIELDS["TABLE"]
    with pytest.raises(ValueError, match="row, uses, state, values"):
        record_line("TABLE", dict(reversed(fields.items())))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (shape_text(()), "none"),
        (shape_text((0,)), "0"),
        (shape_text((2, 2, 2)), "2x2x2"),
        (ints_text(()), "none"),
        (ints_text((0, 2)), "0,2"),
        (floats_text(()), "none"),
        (floats_text((0.0, 4.25)), "0.000000000000,4.250000000000"),
        (vectors_text(()), "none"),
        (vectors_text(((1.0,), (3.0,))), "1.000000000000|3.000000000000"),
        (repeated_id_text(()), "none"),
        (repeated_id_text((2,)), "2"),
    ],
)
def test_each_lexeme_is_formatted_as_the_grammar_says(text: str, expected: str) -> None:
    assert text == expected


def test_two_repeated_ids_cannot_be_named_in_v1() -> None:
    with raises_rule(FormatError, "trace.format", record="IDS", field="repeated-id") as caught:
        repeated_id_text((0, 3))

    assert caught.value.detail.endswith("found IDs 0, 3")
