"""A training step a learner can read in one sitting (issue 36): after the chapter's lookup and
its backward (``tests/test_lookup_depth.py`` counts those), one SGD step on the 4x2 table,
counted in package functions and files by the map's tracer (every distinct function of
``src/llm_from_scratch`` entered, after a first step has loaded everything lazily loaded).
"""

from __future__ import annotations

import numpy as np

from llm_from_scratch.nn import Embedding
from llm_from_scratch.optim import SGD

from test_architecture_map import known_layer_and_sgd, traced_order

SEED = np.array([[[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]])


def stepped_once() -> tuple[Embedding, SGD]:
    layer, optimizer = known_layer_and_sgd()
    layer([[2, 1, 2]]).backward_with_seed(SEED)  # the first step loads what loads lazily
    optimizer.step()
    optimizer.zero_grad()
    layer([[2, 1, 2]]).backward_with_seed(SEED)
    return layer, optimizer


def test_an_sgd_step_runs_at_most_12_package_functions_in_at_most_4_files() -> None:
    layer, optimizer = stepped_once()
    before = layer.table.tensor.numpy().copy()
    functions = traced_order(optimizer.step)
    modules = {".".join(name.split(".")[:2]) for name in functions}
    assert len(functions) <= 12, functions
    assert len(modules) <= 4, sorted(modules)
    expected = before.copy()  # row 1 gets 0.1 * [0, 2]; row 2 gets 0.1 * ([1, 0] + [3, 4])
    expected[1] = before[1] - np.float64(0.1) * np.array([0.0, 2.0])
    expected[2] = before[2] - np.float64(0.1) * np.array([4.0, 4.0])
    assert layer.table.tensor.numpy().tolist() == expected.tolist()


def test_the_sgd_rule_itself_runs_in_sgd_py_and_the_plain_step_keeps_no_undo_log() -> None:
    _, optimizer = stepped_once()
    functions = traced_order(optimizer.step)
    assert "optim.sgd.SGD.updated" in functions
    undoing = {"_one_pass", "all_or_nothing", "restore"}
    assert not any(name.rsplit(".", 1)[-1] in undoing for name in functions)
