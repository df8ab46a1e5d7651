"""A training step a learner can read in one sitting (issue 36): the chapter's 4x2 table, one
default lookup, one backward and one SGD step, each counted in package functions and files.

Counted with ``sys.setprofile`` around one call, after a first lookup, backward and step have
loaded everything lazily loaded: every distinct function of ``src/llm_from_scratch`` entered (a
comprehension or a closure counts as one), and the files that hold them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import numpy as np

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from conftest import KNOWN_TABLE

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "llm_from_scratch"
SEED = np.array([[[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]])


def functions_run(call: Callable[[], object]) -> tuple[list[tuple[str, str]], set[str]]:
    """The package functions (file, name) ``call`` enters, in order, and their files."""
    seen: list[tuple[str, str]] = []
    identities: set[tuple[str, int]] = set()

    def profile(frame: FrameType, event: str, _: object) -> None:
        code = frame.f_code
        if event != "call" or not Path(code.co_filename).resolve().is_relative_to(PACKAGE):
            return
        if (code.co_filename, code.co_firstlineno) not in identities:
            identities.add((code.co_filename, code.co_firstlineno))
            seen.append((code.co_filename, code.co_name))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen, {file for file, _ in seen}


def known_layer_and_sgd() -> tuple[Embedding, SGD]:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    optimizer = SGD(layer.parameters(), learning_rate=0.1)
    layer([[2, 1, 2]]).backward_with_seed(SEED)  # the first step loads what loads lazily
    optimizer.step()
    optimizer.zero_grad()
    return layer, optimizer


def test_a_default_lookup_runs_at_most_15_package_functions_in_at_most_5_files() -> None:
    layer, _ = known_layer_and_sgd()
    functions, files = functions_run(lambda: layer([[2, 1, 2]]))
    assert len(functions) <= 15, functions
    assert len(files) <= 5, sorted(files)


def test_the_backward_of_a_lookup_runs_at_most_12_package_functions() -> None:
    layer, _ = known_layer_and_sgd()
    output = layer([[2, 1, 2]])
    functions, _ = functions_run(lambda: output.backward_with_seed(SEED))
    assert len(functions) <= 12, functions


def test_an_sgd_step_runs_at_most_12_package_functions_in_at_most_4_files() -> None:
    layer, optimizer = known_layer_and_sgd()
    layer([[2, 1, 2]]).backward_with_seed(SEED)
    before = layer.table.tensor.numpy().copy()
    functions, files = functions_run(optimizer.step)
    assert len(functions) <= 12, functions
    assert len(files) <= 4, sorted(files)
    expected = before.copy()  # row 1 gets 0.1 * [0, 2]; row 2 gets 0.1 * ([1, 0] + [3, 4])
    expected[1] = before[1] - np.float64(0.1) * np.array([0.0, 2.0])
    expected[2] = before[2] - np.float64(0.1) * np.array([4.0, 4.0])
    assert layer.table.tensor.numpy().tolist() == expected.tolist()


def test_the_sgd_rule_itself_runs_in_sgd_py_and_the_plain_step_keeps_no_undo_log() -> None:
    layer, optimizer = known_layer_and_sgd()
    layer([[2, 1, 2]]).backward_with_seed(SEED)
    functions, _ = functions_run(optimizer.step)
    assert ("sgd.py", "updated") in {(Path(file).name, name) for file, name in functions}
    assert not any(name in {"_one_pass", "all_or_nothing", "restore"} for _, name in functions)
