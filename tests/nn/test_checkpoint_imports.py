"""The chapter demo imports neither the checkpoint module nor the safetensors package; the
checkpoint names of ``llm_from_scratch.nn`` load both on first use."""

from __future__ import annotations

import ast
import subprocess
import sys


def modules_after(code: str) -> list[str]:
    report = (
        "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'safetensors'"
        " or m.startswith('llm_from_scratch.nn.checkpoint')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"], capture_output=True, text=True, check=True
    )
    names: list[str] = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    return names


def test_the_chapter_demo_imports_no_checkpoint_module_and_not_safetensors() -> None:
    assert modules_after("from llm_from_scratch.cli import main; main(['ch18'])") == []


def test_importing_nn_alone_loads_neither() -> None:
    assert modules_after("import llm_from_scratch.nn") == []


def test_the_checkpoint_names_of_nn_load_the_module_and_the_package_on_first_use() -> None:
    loaded = modules_after("from llm_from_scratch.nn import load_parameters, save_parameters")
    assert "llm_from_scratch.nn.checkpoint" in loaded
    assert "safetensors" in loaded
