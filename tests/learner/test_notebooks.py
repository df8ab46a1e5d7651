"""The chapter's notebooks, English and Russian, run top to bottom in a kernel of this Python
(the project's venv), every cell's assertions holding; their first cell installs nothing here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import import_optional, require_pretrained

NOTEBOOKS = Path(__file__).resolve().parents[2] / "docs" / "notebooks"
NAMES = ("ch18-token-embeddings.ipynb", "ch18-token-embeddings.ru.ipynb")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_notebook_runs_top_to_bottom_with_every_assertion_holding(
    name: str, tmp_path: Path
) -> None:
    require_pretrained()
    nbformat = import_optional("nbformat", "nbformat")
    nbclient = import_optional("nbclient", "nbclient")
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)

    nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()

    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    shown = json.dumps(outputs, ensure_ascii=False)
    assert "queen" in shown and "<iframe srcdoc=" in shown


@pytest.mark.parametrize("name", NAMES)
def test_every_code_cell_after_the_install_asserts_what_it_shows(name: str) -> None:
    cells = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]
    code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]

    assert 'find_spec("llm_from_scratch") is None' in code[0]
    for source in code[1:]:
        assert "assert " in source, source[:80]
    assert all(not cell.get("outputs") for cell in cells if cell["cell_type"] == "code")
