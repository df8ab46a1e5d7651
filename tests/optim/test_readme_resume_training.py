"""docs/library.md's "Resume training" example runs as written, each commented result is what the
comment says at that point, and the files it writes are what its text says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file

README = Path(__file__).resolve().parents[2] / "docs" / "library.md"  # moved from the README


def example_code() -> str:
    section = README.read_text(encoding="utf-8").split("## Resume training", 1)[1]
    section = section.split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the section has no python example"
    return match.group(1)


def run_checking_comments(code: str, names: dict[str, object]) -> list[tuple[str, str]]:
    """Run ``code`` statement by statement; each expression statement with a comment is
    evaluated where it stands and compared with the comment's first word."""
    lines = code.splitlines()
    checked = []
    for statement in ast.parse(code).body:
        source = ast.get_source_segment(code, statement)
        assert source is not None
        if isinstance(statement, ast.Expr) and "#" in lines[statement.lineno - 1]:
            comment = lines[statement.lineno - 1].split("#", 1)[1].split()[0]
            value = eval(compile(ast.Expression(statement.value), "README.md", "eval"), names)
            assert repr(value) == comment, source
            checked.append((source, comment))
        else:
            exec(compile(ast.Module([statement], []), "README.md", "exec"), names)
    return checked


def test_the_resume_training_example_runs_and_its_comments_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    names: dict[str, object] = {}
    checked = run_checking_comments(example_code(), names)
    assert [comment for _, comment in checked] == ["3", "True"]

    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "model.safetensors",
        "optimizer.safetensors",
    ]
    state = load_file("optimizer.safetensors")
    assert sorted(state) == [
        "step",
        "token_embedding.weight.exp_avg",
        "token_embedding.weight.exp_avg_sq",
    ]
    assert state["step"].shape == () and state["step"].dtype == np.int64 and state["step"] == 3
    with safe_open("optimizer.safetensors", framework="np") as opened:
        metadata = opened.metadata()
    assert (metadata["optimizer"], metadata["learning_rate"]) == ("AdamW", "0.001")
    resumed = names["resumed_optimizer"]
    assert resumed.step_count == 6  # type: ignore[attr-defined]


def test_without_load_state_the_example_gives_another_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = example_code()
    for line in ('load_state("optimizer.safetensors", resumed_optimizer)', "# 3"):
        assert line in code
    code = code.replace('load_state("optimizer.safetensors", resumed_optimizer)', "pass")
    code = code.replace("# 3", "# 0").replace("# True", "# False")
    checked = run_checking_comments(code, {})
    assert [comment for _, comment in checked] == ["0", "False"]
