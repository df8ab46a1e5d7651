"""An optimizer state file saved, or loaded and stepped with the compiled row kernels, as a
command of its own (``python -m state_runner save|load FILE``, for
``tests/files/test_crafted_files.py``): a refused file ends in one ``error:`` line and
status 2, as the package's commands end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import LlmError
from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.optim import Adam, Optimizer, load_state, save_state

STATE_FILE = "adam.safetensors"
ROWS, WIDTH, TOKENS = 1200, 64, 2400
"""Large enough for the compiled row kernels (``tests/optim/state_file_support.py``)."""


def new_optimizer() -> tuple[Embedding, Optimizer]:
    """Adam over a seeded ``ROWS x WIDTH`` table, before any step."""
    layer = Embedding.new("token_embedding.weight", ROWS, WIDTH, SplitMix64.from_seed(18))
    return layer, Adam(layer.parameters(), learning_rate=0.01)


def step(layer: Embedding, optimizer: Optimizer) -> None:
    ids = np.random.default_rng(5).integers(0, ROWS, size=TOKENS)
    optimizer.backward_step(layer([ids.tolist()]).sum())


def state_arrays(optimizer: Optimizer) -> dict[str, npt.NDArray[Any]]:
    """The optimizer's state as the file names it."""
    return {name: np.asarray(value) for name, value in optimizer.state_dict().items()}


def main(action: str, path: Path) -> int:
    layer, optimizer = new_optimizer()
    if action == "save":
        step(layer, optimizer)
        save_state(path, optimizer)
        return 0
    try:
        load_state(path, optimizer)
        step(layer, optimizer)
    except LlmError as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
