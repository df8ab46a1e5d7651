"""``import llm_from_scratch`` gives every subpackage as an attribute, loaded on first use."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import llm_from_scratch


def loaded_after(code: str) -> list[str]:
    """The package's modules a fresh interpreter holds after running ``code``."""
    report = "import sys; print(sorted(m for m in sys.modules if m.startswith('llm_from_scratch')))"
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"], capture_output=True, text=True, check=True
    )
    names: list[str] = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    return names


def test_importing_the_package_loads_no_subpackage() -> None:
    assert loaded_after("import llm_from_scratch") == ["llm_from_scratch"]


def test_importing_the_package_loads_no_other_module_at_all() -> None:
    code = "import sys; before = set(sys.modules); import llm_from_scratch"
    report = "print(sorted(set(sys.modules) - before))"
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"], capture_output=True, text=True, check=True
    )
    assert ast.literal_eval(result.stdout.strip()) == ["llm_from_scratch"]


def test_reading_nn_after_importing_the_package_loads_it_as_torch_nn_would() -> None:
    loaded = loaded_after("import llm_from_scratch\nllm_from_scratch.nn.Embedding")
    assert "llm_from_scratch.nn" in loaded and "llm_from_scratch.optim" not in loaded


@pytest.mark.parametrize("name", llm_from_scratch.__all__)
def test_each_subpackage_is_an_attribute_and_listed(name: str) -> None:
    module = getattr(llm_from_scratch, name)
    assert module.__name__ == f"llm_from_scratch.{name}"
    assert name in dir(llm_from_scratch)


def test_a_name_that_is_no_subpackage_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'cli_tools'"):
        llm_from_scratch.cli_tools  # noqa: B018
    assert not hasattr(llm_from_scratch, "cli_tools")
