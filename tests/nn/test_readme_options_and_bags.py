"""docs/library.md's "Options and bags" example runs as written and its comments hold."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "docs" / "library.md"  # moved from the README


def example_code() -> str:
    section = README.read_text(encoding="utf-8").split("## Options and bags", 1)[1]
    section = section.split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the section has no python example"
    return match.group(1)


def test_the_options_and_bags_example_runs_and_its_comments_hold() -> None:
    names: dict[str, object] = {}
    exec(compile(example_code(), "README.md", "exec"), names)
    layer = names["layer"]
    table = layer.table.tensor  # type: ignore[attr-defined]
    assert table.sparse_gradient.rows.tolist() == [5, 7]
    assert table.sparse_gradient.values.tolist() == [[1.0] * 8, [1.0] * 8]  # 2 / 2, then 1 / 1
    assert table.numpy()[0].tolist() == [0.0] * 8
    norms = np.sqrt((names["out"].numpy() ** 2).sum(axis=-1))  # type: ignore[attr-defined]
    assert (norms <= 1.0).all()
    pooled = names["pooled"].numpy()  # type: ignore[attr-defined]
    rows = names["bags"].table.tensor.numpy()  # type: ignore[attr-defined]
    assert pooled.shape == (3, 8) and pooled[1].tolist() == [0.0] * 8
    assert pooled[0].tobytes() == (0.0 + rows[3] + rows[9] + rows[9]).tobytes()
    assert pooled[2].tobytes() == (0.0 + rows[4] + rows[1]).tobytes()
