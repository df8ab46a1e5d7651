"""A lookup a learner can read in one sitting: how many of the package's functions, in how many
files, one small forward and one backward run.

Counted with ``sys.setprofile`` around one call on the chapter's 4x2 table: every distinct
function of ``src/llm_from_scratch`` that is entered (a comprehension or a closure counts as
one), after a first call has loaded everything lazily loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

from conftest import KNOWN_TABLE

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "llm_from_scratch"
SEED = np.array([1.0, 0.0, 0.0, 2.0, 3.0, 4.0]).reshape(1, 3, 2)


def functions_run(call: Callable[[], object]) -> tuple[set[tuple[str, int]], set[str]]:
    """The package functions (file, first line) ``call`` enters, and their files."""
    seen: set[tuple[str, int]] = set()

    def profile(frame: FrameType, event: str, _: object) -> None:
        code = frame.f_code
        if event == "call" and Path(code.co_filename).resolve().is_relative_to(PACKAGE):
            seen.add((code.co_filename, code.co_firstlineno))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen, {file for file, _ in seen}


def known_layer(**options: object) -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table, **options)  # type: ignore[arg-type]
    layer([[2, 1, 2]]).backward_with_seed(SEED)  # the first call loads what loads lazily
    return layer


def test_a_default_lookup_runs_at_most_20_package_functions_in_at_most_5_files() -> None:
    layer = known_layer()
    functions, files = functions_run(lambda: layer([[2, 1, 2]]))
    assert len(functions) <= 20, sorted(functions)
    assert len(files) <= 5, sorted(files)


def test_a_lookup_with_a_padding_row_runs_at_most_22_package_functions() -> None:
    layer = known_layer(padding_idx=0)
    functions, _ = functions_run(lambda: layer([[2, 1, 2]]))
    assert len(functions) <= 22, sorted(functions)


@pytest.mark.parametrize("options", [{}, {"padding_idx": 0}])
def test_the_backward_of_a_lookup_runs_at_most_20_package_functions(
    options: dict[str, object],
) -> None:
    layer = known_layer(**options)
    output = layer([[2, 1, 2]])
    functions, _ = functions_run(lambda: output.backward_with_seed(SEED))
    assert len(functions) <= 20, sorted(functions)
