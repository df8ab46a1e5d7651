"""The reference models themselves: they reproduce the chapter's known values, and they never
call the code under test."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from conftest import KNOWN_TABLE, KNOWN_UPSTREAM
from reference import (
    Returns,
    SplitMix64Reference,
    expected_lookup,
    flatten_nested,
    plain_scatter,
    scan_flat_ids,
)

REFERENCE = Path(__file__).with_name("reference.py")


def test_the_reference_models_agree_with_the_chapter_fixture() -> None:
    table = np.array(KNOWN_TABLE).reshape(4, 2)
    expected = expected_lookup(table, [2, 1, 2], (1, 3), "forward")
    assert isinstance(expected, Returns)
    assert expected.value.tolist() == [[[30, 31], [20, 21], [30, 31]]]  # type: ignore[attr-defined]
    upstream = np.array(KNOWN_UPSTREAM).reshape(3, 2)
    assert plain_scatter([2, 1, 2], upstream, 4, 2).tolist() == [[0, 0], [0, 2], [4, 4], [0, 0]]
    assert flatten_nested([[1, 2], [3, 4]]) == ([1, 2, 3, 4], (2, 2))
    assert scan_flat_ids(np.array([0, 9]), 4).bad_position == 1
    assert SplitMix64Reference(0).next_u64() == 0xE220A8397B1DCDAF  # the published first output


def test_the_reference_models_never_call_or_read_what_they_import_from_the_library() -> None:
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llm_from_scratch")
        for alias in node.names
    }
    assert imported, "the reference names the documented errors it expects"
    uses = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call | ast.Attribute)
        and isinstance(target := node.func if isinstance(node, ast.Call) else node.value, ast.Name)
        and target.id in imported
    ]
    assert uses == []
    assert not any(
        isinstance(node, ast.Import) and node.names[0].name.startswith("llm_from_scratch")
        for node in ast.walk(tree)
    )
