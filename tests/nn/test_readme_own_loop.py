"""The README's "Use the layer in your own loop" comes within its first 60 lines, runs as written
and does what its comments say; the table of PyTorch names (docs/library.md) lists every name
the package answers with a pointer."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import llm_from_scratch.nn
import llm_from_scratch.optim
from llm_from_scratch.pytorch_names import DECLARED

README = Path(__file__).resolve().parents[2] / "README.md"
LIBRARY = README.parent / "docs" / "library.md"  # the table of names, moved from the README
HEADING = "## Use the layer in your own loop"
assert llm_from_scratch.nn and llm_from_scratch.optim  # every PyTorch name is declared


def section() -> str:
    return README.read_text(encoding="utf-8").split(HEADING, 1)[1].split("\n## ", 1)[0]


def example_code() -> str:
    match = re.search(r"```python\n(.*?)```", section(), re.DOTALL)
    assert match is not None, "the section has no python example"
    return match.group(1)


def test_the_section_and_its_first_lookup_are_within_the_first_60_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert HEADING in lines[:60]
    lookups = [number for number, line in enumerate(lines) if "layer(ids)" in line]
    assert lookups and lookups[0] < 60
    loop = example_code().splitlines()
    start = next(number for number, line in enumerate(loop) if line.startswith("layer ="))
    end = next(number for number, line in enumerate(loop) if "load_parameters(" in line)
    assert end - start + 1 <= 12  # the loop itself: table to load in about ten lines


def run(code: str) -> tuple[dict[str, object], str]:
    """The names ``code`` leaves and what it printed."""
    names: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), names)
    return names, printed.getvalue()


def test_the_example_runs_and_does_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    names, printed = run(example_code())
    loss, layer, table = names["loss"], names["layer"], names["table"]
    assert re.fullmatch(r"loss -?\d+\.\d{4}\n", printed)
    assert printed == f"loss {loss.item():.4f}\n"  # type: ignore[attr-defined]
    assert loss.item() == float(loss)  # type: ignore[arg-type, attr-defined]
    assert [path.name for path in tmp_path.iterdir()] == ["model.safetensors"]
    leaf = layer.table.tensor  # type: ignore[attr-defined]
    assert leaf.value_revision == 101  # 100 steps, then the load in place
    assert not leaf.gradient.numpy().any()  # zero_grad() cleared the last step's
    assert not np.array_equal(leaf.numpy(), table)


def test_one_step_of_the_example_changes_only_the_rows_its_ids_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = example_code()
    assert "range(100)" in code
    names, _ = run(code.replace("range(100)", "range(1)"))
    named = np.unique(names["ids"])  # type: ignore[call-overload]
    never = np.setdiff1d(np.arange(1000), named)
    values, table = names["layer"].table.tensor.numpy(), names["table"]  # type: ignore[attr-defined]
    assert never.size > 0 and (values[never] == table[never]).all()  # type: ignore[index]
    assert (values[named] != table[named]).any(axis=1).all()  # type: ignore[index]


def test_the_table_of_names_lists_every_pytorch_name_the_package_answers() -> None:
    names = LIBRARY.read_text(encoding="utf-8").split("## PyTorch's names", 1)[1].split("\n## ")[0]
    rows = [line for line in names.splitlines() if line.startswith("| `")]
    pytorch_column = " ".join(row.split(" | ")[0] for row in rows)
    spelled = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", pytorch_column))
    missing = sorted({pointer.pytorch_name for pointer in DECLARED} - spelled)
    assert missing == []
