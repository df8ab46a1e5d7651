"""The corpus digest benchmark measures both actions on the same files and prints their ratio."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llm_from_scratch.cli import main


def test_the_digest_benchmark_prints_the_digests_beside_the_word_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("to be or not to be\n" * 50, encoding="utf-8")
    (tmp_path / "b.txt").write_text("that is the question\n" * 50, encoding="utf-8")
    assert main(["bench", "digest", str(tmp_path), "--repeats", "1", "--no-gib"]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path}: 2 files, {19 * 50 + 21 * 50:,} bytes" in out
    digests, count, ratio = (
        float(re.search(rf"{label} +([\d.]+)", out).group(1))  # type: ignore[union-attr]
        for label in ("SHA-256 of every file", r"word count \(as a run\)", "digests / word count")
    )
    assert digests > 0 and count > 0 and ratio == pytest.approx(digests / count, rel=0.05)
