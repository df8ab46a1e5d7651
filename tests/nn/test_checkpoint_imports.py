"""The chapter demo never imports the checkpoint modules; checkpoints never import safetensors."""

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


def test_the_chapter_demo_imports_no_checkpoint_module() -> None:
    assert modules_after("from llm_from_scratch.cli import main; main(['ch18'])") == []


def test_the_checkpoint_names_of_nn_load_their_modules_on_first_use() -> None:
    loaded = modules_after("from llm_from_scratch.nn import load_parameters, save_parameters")
    assert "llm_from_scratch.nn.checkpoint.reading" in loaded
    assert not any(name.startswith("safetensors") for name in loaded)


def test_saving_and_loading_do_not_import_the_safetensors_package() -> None:
    code = (
        "import tempfile, pathlib\n"
        "from llm_from_scratch.nn import Embedding, SplitMix64, load_parameters, save_parameters\n"
        "layer = Embedding.new('token_embedding.weight', 4, 2, SplitMix64.from_seed(18))\n"
        "path = pathlib.Path(tempfile.mkdtemp()) / 'table.safetensors'\n"
        "save_parameters(path, layer.parameters())\n"
        "load_parameters(path)\n"
        "path.unlink(); path.parent.rmdir()"
    )
    assert not any(name.startswith("safetensors") for name in modules_after(code))
