"""Modules talk through package-internal functions: no private imports, no reach-ins, no cycles.

Every module of ``src/llm_from_scratch`` is parsed with :mod:`ast`, so a new module or package is
checked without being listed here. The rules:

- no module imports a name that starts with ``_`` from another module of the package;
- an attribute access ``x._name`` names something the same module defines (``self._x`` inside the
  defining module is fine, ``other_module_object._x`` is not);
- the import graph (every import, including those inside functions and ``TYPE_CHECKING``
  blocks) has no cycle. ``import a.b.c`` is an edge to ``a.b.c`` alone, not to the packages
  ``a`` and ``a.b`` that Python initializes first, so a package ``__init__`` that re-exports its
  submodules is not a cycle with them; ``from a.b import name`` is an edge to the submodule
  ``a.b.name`` if there is one, else to ``a.b``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "llm_from_scratch"
SOURCE_ROOT = Path(__file__).resolve().parents[1] / "src"


@dataclass(frozen=True)
class Module:
    """One parsed module: its dotted name, whether it is a package ``__init__``, and its tree."""

    name: str
    is_package: bool
    tree: ast.Module


def package_modules(root: Path = SOURCE_ROOT, package: str = PACKAGE) -> dict[str, Module]:
    """Every module below ``root / package``, by dotted name."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, is_package, ast.parse(path.read_text(encoding="utf-8")))
    return modules


def is_private(name: str) -> bool:
    """``_x`` is private; ``__x__`` (a dunder) is not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def imported_module(module: Module, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_targets(module: Module, known: Mapping[str, Module]) -> Iterator[tuple[str, str]]:
    """Each ``(target module, imported name)`` this module imports from the package.

    ``from pkg import name`` targets the submodule ``pkg.name`` when there is one, else ``pkg``;
    ``import pkg.sub`` imports the name ``sub``.
    """
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, alias.name.rsplit(".", 1)[-1]
        elif isinstance(node, ast.ImportFrom):
            source = imported_module(module, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    yield submodule, alias.name
                elif source in known:
                    yield source, alias.name


def private_imports(modules: Mapping[str, Module]) -> list[str]:
    """``module: imports target.name`` for every private name imported from another module."""
    found = []
    for module in modules.values():
        for target, name in import_targets(module, modules):
            if target != module.name and is_private(name):
                dotted = target if target.endswith(f".{name}") else f"{target}.{name}"
                found.append(f"{module.name}: imports {dotted}")
    return found


def defined_names(tree: ast.Module) -> set[str]:
    """Every name a module binds: definitions, assignments, attribute stores and ``__slots__``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            names.update(
                item.value
                for item in ast.walk(node.value)
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return names


def private_reach_ins(modules: Mapping[str, Module]) -> list[str]:
    """``module:line: expression`` for every ``x._name`` whose ``_name`` the module does not
    define."""
    found = []
    for module in modules.values():
        own = defined_names(module.tree)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and is_private(node.attr) and node.attr not in own:
                found.append(f"{module.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def import_graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """Each module's imported package modules (itself excluded)."""
    return {
        name: {target for target, _ in import_targets(module, modules) if target != name}
        for name, module in modules.items()
    }


def import_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle ``[a, b, ..., a]`` through each strongly connected group of two or more modules
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            successor = next(successors, None)
            if successor is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif successor not in index:
                index[successor] = low[successor] = len(index)
                stack.append(successor)
                on_stack.add(successor)
                work.append((successor, iter(sorted(graph.get(successor, ())))))
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
    return [cycle_within(graph, set(group)) for group in groups]


def cycle_within(graph: Mapping[str, set[str]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & group):
                if successor == start:
                    return [*paths[node], start]
                if successor not in paths:
                    paths[successor] = [*paths[node], successor]
                    following.append(successor)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group has one


# The rules on the package ----------------------------------------------------------------------


def test_the_package_has_modules_to_check() -> None:
    modules = package_modules()
    assert {PACKAGE, f"{PACKAGE}.tensor.storage", f"{PACKAGE}.nn.embedding"} <= set(modules)


def test_no_module_imports_a_private_name_from_another_module() -> None:
    assert private_imports(package_modules()) == []


def test_no_module_reaches_into_private_attributes_it_does_not_define() -> None:
    assert private_reach_ins(package_modules()) == []


def test_the_package_import_graph_has_no_cycle() -> None:
    cycles = import_cycles(import_graph(package_modules()))
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


# The checks themselves catch each kind of defect --------------------------------------------------


def fake_package(tmp_path: Path, sources: Mapping[str, str]) -> dict[str, Module]:
    for relative, text in sources.items():
        path = tmp_path / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package_modules(tmp_path, "pkg")


def test_a_private_name_imported_from_a_sibling_module_is_reported(tmp_path: Path) -> None:
    modules = fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "_hidden = 1\n__version__ = '1'\n",
            "_helpers.py": "",
            "b.py": "from pkg.a import __version__\nfrom .a import _hidden\nimport pkg._helpers\n",
        },
    )
    expected = ["pkg.b: imports pkg.a._hidden", "pkg.b: imports pkg._helpers"]
    assert private_imports(modules) == expected


def test_a_private_attribute_defined_in_another_module_is_reported(tmp_path: Path) -> None:
    modules = fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": (
                "class A:\n    __slots__ = ('_slot',)\n    _field: int\n"
                "    def f(self):\n        self._own = 1\n        return self._slot, self._own\n"
            ),
            "b.py": "def g(a):\n    return a._slot, a.__class__, a._own\n",
        },
    )
    assert private_reach_ins(modules) == ["pkg.b:2: a._slot", "pkg.b:2: a._own"]


def test_an_import_cycle_through_a_function_level_import_is_reported(tmp_path: Path) -> None:
    modules = fake_package(
        tmp_path,
        {
            "__init__.py": "from pkg import a\n",
            "a.py": "from pkg.sub.b import f\n",
            "sub/__init__.py": "",
            "sub/b.py": "def f():\n    from ..c import g\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n",
            "d.py": "from pkg import c\n",
        },
    )
    assert import_cycles(import_graph(modules)) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]
