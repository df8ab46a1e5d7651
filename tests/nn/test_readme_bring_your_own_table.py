"""docs/library.md's "Bring your own table" example runs as written and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

README = Path(__file__).resolve().parents[2] / "docs" / "library.md"  # moved from the README


def example_code() -> str:
    section = README.read_text(encoding="utf-8").split("## Bring your own table", 1)[1]
    section = section.split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the section has no python example"
    return match.group(1)


def test_the_bring_your_own_table_example_runs_and_its_comments_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    names: dict[str, object] = {}
    exec(compile(example_code(), "README.md", "exec"), names)
    table = load_file("model.safetensors")["embeddings.word_embeddings.weight"]
    x = names["x"]
    assert x.shape == (1, 3, 64) and x.dtype == np.float32  # type: ignore[attr-defined]
    assert np.array_equal(x.numpy()[0], table[[5, 17, 5]].astype(np.float32))  # type: ignore[attr-defined]
    frozen = names["frozen"]([[5, 17, 5]])  # type: ignore[operator]
    assert frozen.kind == "constant" and frozen.numpy().tobytes() == x.numpy().tobytes()  # type: ignore[attr-defined]
    embedding = names["embedding"]
    assert embedding.table.tensor.is_same_node(names["table"].tensor)  # type: ignore[attr-defined]
    trained = load_file("trained.safetensors")["embeddings.word_embeddings.weight"]
    leaf = embedding.table.tensor  # type: ignore[attr-defined]
    assert leaf.numpy().tobytes() == trained.tobytes()
    assert leaf.value_revision == 2  # the SGD step, then the load into the layer
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.safetensors",
        "trained.safetensors",
    ]
