"""A lookup a learner can read in one sitting: how many of the package's functions, in how many
files, one small forward and one backward run; in how many of them the IDs stay, and how often
the way through climbs back.

Counted with ``sys.setprofile`` around one call on the chapter's 4x2 table: every distinct
function of ``src/llm_from_scratch`` that is entered (a comprehension or a closure counts as
one), after a first call has loaded everything lazily loaded. A function holds the IDs when one
of its local variables (its arguments and closure variables included), on entry or on return,
is the caller's IDs, a list nested in them, or what they became: the flat IDs, the index buffer,
the plan. A climb is a call from one module into another that imports it, directly or through
others: from a lower layer back into a higher one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd.gather import RowGatherPlan
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


def test_a_default_lookup_runs_at_most_15_package_functions_in_at_most_5_files() -> None:
    layer = known_layer()
    functions, files = functions_run(lambda: layer([[2, 1, 2]]))
    assert len(functions) <= 15, sorted(functions)
    assert len(files) <= 5, sorted(files)


def test_a_lookup_with_a_padding_row_runs_at_most_15_package_functions() -> None:
    layer = known_layer(padding_idx=0)
    functions, _ = functions_run(lambda: layer([[2, 1, 2]]))
    assert len(functions) <= 15, sorted(functions)


def test_the_backward_of_a_lookup_into_a_zero_gradient_runs_at_most_12_functions_in_5_files() -> (
    None
):
    layer = known_layer()
    layer.table.tensor.zero_grad()
    output = layer([[2, 1, 2]])
    functions, files = functions_run(lambda: output.backward_with_seed(SEED))
    assert len(functions) <= 12, sorted(functions)
    assert len(files) <= 5, sorted(files)


@pytest.mark.parametrize("options", [{}, {"padding_idx": 0}])
def test_the_backward_of_a_lookup_adding_to_a_stored_gradient_runs_at_most_14_functions(
    options: dict[str, object],
) -> None:
    layer = known_layer(**options)
    output = layer([[2, 1, 2]])
    functions, _ = functions_run(lambda: output.backward_with_seed(SEED))
    assert len(functions) <= 14, sorted(functions)


# Where the IDs stay, and the climbs back -----------------------------------------------------


def module_of(path: str) -> str:
    parts = Path(path).resolve().relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_above() -> dict[str, set[str]]:
    """For each module of the package, the modules that import it, directly or through others."""
    imports: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
        imports[module_of(str(path))] = targets
    below = {
        name: {target for target in targets if target in imports and target != name}
        for name, targets in imports.items()
    }
    changed = True
    while changed:  # the transitive closure
        changed = False
        for name, lower in below.items():
            reached = set().union(*(below[module] for module in lower)) - lower - {name}
            if reached:
                lower |= reached
                changed = True
    above: dict[str, set[str]] = {name: set() for name in below}
    for name, lower in below.items():
        for module in lower:
            above[module].add(name)
    return above


def holds_ids(value: object, ids: object, flat: list[int]) -> bool:
    """The caller's IDs, a list nested in them, or what they became (flat, buffer, plan)."""
    nested = [ids]
    while nested:  # the caller's containers, by identity (not the ints, which Python shares)
        item = nested.pop()
        if value is item:
            return True
        nested.extend(inner for inner in item if isinstance(inner, list | tuple | np.ndarray))
    if isinstance(value, RowGatherPlan):
        return True
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value.reshape(-1).tolist() == flat
    return isinstance(value, list) and value == flat


def way_through(call: Callable[[], object], ids: object) -> tuple[set[str], list[str]]:
    """The functions that hold the IDs while ``call`` runs, and the calls that climb back."""
    flat = np.asarray(ids).reshape(-1).tolist()
    above = modules_above()
    places: set[str] = set()
    climbs: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if not Path(code.co_filename).resolve().is_relative_to(PACKAGE):
            return
        module = module_of(code.co_filename)
        name = f"{module}.{code.co_qualname}"
        values = [*frame.f_locals.values(), arg] if event == "return" else frame.f_locals.values()
        if event in ("call", "return") and any(holds_ids(v, ids, flat) for v in values):
            places.add(name)
        caller = frame.f_back
        if event != "call" or caller is None:
            return
        from_file = caller.f_code.co_filename
        if Path(from_file).resolve().is_relative_to(PACKAGE) and module in above.get(
            module_of(from_file), set()
        ):
            climbs.append(f"{module_of(from_file)}.{caller.f_code.co_qualname} -> {name}")

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return places, climbs


LOOKUPS: dict[str, Callable[[Embedding], tuple[Callable[[], object], object]]] = {
    "nested lists": lambda layer: (lambda: layer(IDS), IDS),
    "an array": lambda layer: (lambda: layer(IDS_ARRAY), IDS_ARRAY),
    "flat IDs and their shape": lambda layer: (lambda: layer.forward(FLAT_IDS, (1, 3)), FLAT_IDS),
}
IDS = [[2, 1, 2]]
IDS_ARRAY = np.array(IDS)
FLAT_IDS = [2, 1, 2]


@pytest.mark.parametrize("lookup", sorted(LOOKUPS))
def test_a_lookups_ids_stay_in_at_most_10_functions_and_climb_back_at_most_twice(
    lookup: str,
) -> None:
    layer = known_layer()
    call, ids = LOOKUPS[lookup](layer)
    places, climbs = way_through(call, ids)
    assert "llm_from_scratch.autograd.ids.plan_of_ids" in places  # the one ID reader
    assert len(places) <= 10, sorted(places)
    assert len(climbs) <= 2, climbs


def test_the_climbs_back_are_counted() -> None:
    _, climbs = way_through(lambda: known_layer()([[2, 1, 2]]), IDS)
    # The tape's consistent read runs the gather's kernel: a call back into a higher module.
    assert any(climb.endswith("gather_rows_forward.<locals>.gathered") for climb in climbs)
