"""docs/architecture.md stays true: what it names exists, its lookup path is the traced one, and
the package keeps the layering it describes."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import numpy as np

from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.optim import SGD
from llm_from_scratch.tensor import Tensor

from conftest import KNOWN_TABLE
from test_architecture import import_targets, package_modules

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "src" / "llm_from_scratch"
PATH = re.compile(r"`((?:src|docs|tests)/[\w/.-]+\.(?:py|md))`")
DOTTED = re.compile(r"`((?:llm_from_scratch\.)?[a-z_]+(?:\.[A-Za-z_]\w*)+)`")
STEP = re.compile(r"^\d+\. `(?P<function>[\w.<>]+)`", re.MULTILINE)

LAYERS = {
    "errors": 0,
    "files": 1,
    "pytorch_names": 2,
    "tensor": 3,
    "autograd": 4,
    "gradcheck": 5,
    "nn": 6,
    "optim": 7,
    "vectors": 8,
    "training": 9,
    "traces": 10,
    "labels": 11,
    "figures": 12,
    "demos": 13,
    "bench": 14,
    "exits": 15,
    "cli": 16,
    "error_catalogue": 17,
    "__main__": 18,
}
"""The rank of each top-level part, its own: a part imports only parts of lower ranks, so a
call that climbs from a lower part into a higher one is caught."""


def map_text() -> str:
    return MAP.read_text(encoding="utf-8")


def test_the_map_is_at_most_about_300_lines() -> None:
    assert len(map_text().splitlines()) <= 300


def test_every_path_the_map_names_exists() -> None:
    paths = PATH.findall(map_text())
    assert paths
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert missing == []


def resolves(dotted: str) -> bool:
    """True when ``dotted`` names a module of the package, or an attribute chain in one."""
    name = dotted if dotted.startswith("llm_from_scratch") else f"llm_from_scratch.{dotted}"
    parts = name.split(".")
    for split in range(len(parts), 1, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if attribute == "<locals>":
                return True  # a closure: its enclosing function resolved
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_module_and_name_the_map_mentions_exists() -> None:
    names = [name for name in DOTTED.findall(map_text()) if not name.endswith((".py", ".md"))]
    assert names
    unknown = [name for name in names if not resolves(name)]
    assert unknown == []


def traced_order(call: Callable[[], object]) -> list[str]:
    """The package functions ``call`` enters, by dotted name, in the order first entered."""
    order: list[str] = []

    def profile(frame: FrameType, event: str, _: object) -> None:
        code = frame.f_code
        file = Path(code.co_filename).resolve()
        if event == "call" and file.is_relative_to(PACKAGE):
            module = ".".join(file.relative_to(PACKAGE).with_suffix("").parts)
            name = f"{module}.{code.co_qualname}"
            if name not in order:
                order.append(name)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return order


def known_layer_and_sgd() -> tuple[Embedding, SGD]:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    return layer, SGD(layer.parameters(), learning_rate=0.1)


def traced_lookup() -> list[str]:
    layer, _ = known_layer_and_sgd()
    layer([[2, 1, 2]])  # the first call loads what loads lazily
    return traced_order(lambda: layer([[2, 1, 2]]))


def traced_training_step() -> list[str]:
    seed = np.array([1.0, 0.0, 0.0, 2.0, 3.0, 4.0]).reshape(1, 3, 2)
    warm, warm_optimizer = known_layer_and_sgd()
    warm([[2, 1, 2]]).backward_with_seed(seed)
    warm_optimizer.step()  # the first step loads what loads lazily
    layer, optimizer = known_layer_and_sgd()
    output = layer([[2, 1, 2]])

    def step() -> None:
        output.backward_with_seed(seed)
        optimizer.step()

    return traced_order(step)


def listed_steps(section: str) -> list[str]:
    return STEP.findall(map_text().split(f"## {section}")[1].split("\n## ")[0])


def assert_listed_in_traced_order(listed: list[str], traced: list[str]) -> None:
    assert listed, "the map lists no numbered step"
    positions = [traced.index(name) if name in traced else -1 for name in listed]
    assert -1 not in positions, [name for name in listed if name not in traced]
    assert positions == sorted(positions), "the map lists the steps out of order"


def test_the_numbered_lookup_path_is_the_traced_one_in_order() -> None:
    assert_listed_in_traced_order(listed_steps("The path of a lookup"), traced_lookup())


def test_the_numbered_training_step_is_the_traced_backward_then_step_in_order() -> None:
    traced = traced_training_step()
    assert_listed_in_traced_order(listed_steps("The path of a training step"), traced)


def test_the_reading_order_names_every_file_a_lookup_and_a_training_step_pass() -> None:
    section = map_text().split("## The path of a training step")[1].split("\n## ")[0]
    listed = re.findall(r"`([a-z_]+/[a-z_]+\.py)`", section.split("\n\n")[1])
    assert all((PACKAGE / file).is_file() for file in listed), listed
    passed = {name.split(".")[0] + "/" + name.split(".")[1] + ".py" for name in traced_lookup()}
    passed |= {
        name.split(".")[0] + "/" + name.split(".")[1] + ".py" for name in traced_training_step()
    }
    assert passed <= set(listed), sorted(passed - set(listed))


def test_each_module_imports_only_from_its_own_part_or_lower_ranks() -> None:
    modules = package_modules()
    upward = []
    for name, module in modules.items():
        part = name.split(".")[1] if "." in name else None
        if part is None:
            continue  # the package's own __init__
        for target, _ in import_targets(module, modules):
            other = target.split(".")[1] if "." in target else part
            if other != part and LAYERS.get(other, 0) >= LAYERS[part]:
                upward.append(f"{name} imports {target}")
    assert upward == []


def test_every_part_has_a_rank_of_its_own() -> None:
    assert len(set(LAYERS.values())) == len(LAYERS)


def test_the_map_lists_the_parts_in_the_order_of_their_ranks() -> None:
    view = map_text().split("## Bird's-eye view")[1].split("\n## ")[0]
    listed = re.findall(r"^\d+\. `(?:llm_from_scratch\.)?(\w+)`", view, re.MULTILINE)
    assert listed == sorted(LAYERS, key=LAYERS.__getitem__)


def test_the_layering_test_sees_every_top_level_part() -> None:
    parts = {name.split(".")[1] for name in package_modules() if "." in name}
    assert parts <= set(LAYERS), parts - set(LAYERS)
