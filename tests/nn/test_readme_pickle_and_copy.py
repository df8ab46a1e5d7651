"""docs/library.md's "NumPy arrays, pickle and copy" example runs as written; its comments hold."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "docs" / "library.md"  # moved from the README


def example_code() -> str:
    section = README.read_text(encoding="utf-8").split("## NumPy arrays, pickle and copy", 1)[1]
    section = section.split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the section has no python example"
    return match.group(1)


def commented_results(code: str) -> list[tuple[str, str]]:
    """Each ``expression   # value...`` line: the expression and the value its comment names."""
    found = []
    for line in code.splitlines():
        expression, _, comment = line.partition("#")
        value = comment.strip().split(":")[0].strip()
        if expression.strip() and value in ("True", "False", "[1, 2]"):
            found.append((expression.strip(), value))
    return found


def test_the_example_runs_and_each_commented_result_is_what_it_says() -> None:
    code = example_code()
    names: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), names)
    table = names["table"]
    assert table.dtype == np.float32 and table.shape == (4, 2)  # type: ignore[attr-defined]
    checks = commented_results(code)
    assert [value for _, value in checks] == ["[1, 2]", "True", "False"]
    for expression, value in checks:
        assert repr(eval(expression, names)) == value, expression
