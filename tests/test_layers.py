"""The import graph: no cycle, and every arrow points down the layers.

Every import counts, wherever it stands (module top, inside a function, under
TYPE_CHECKING): a cycle hidden in a function is still a cycle for a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "harness", "workloads", "faults", "checker", "compose")

# Bottom to top. A module's layer is that of the longest prefix listed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),  # the history model, errors, endpoints, connections, the clock shim
    ("harness.cluster", "compose"),  # cluster backends (Jepsen's db)
    ("workloads",),  # lock clients and the worker
    ("faults",),  # the nemesis
    ("checker",),  # pure: the history model only (see below)
    ("harness.expectation", "harness.limits", "harness.store", "harness.scenario"),
    ("harness",),  # run, suite, reports, console, CLI
)
CHECKER_MAY_IMPORT = ("checker", "core.history")


def layer(module: str) -> int:
    best, found = -1, -1
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), number
    assert found >= 0, f"{module} is in no layer: add it to LAYERS"
    return found


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules ``path`` imports (``from a import b`` counts a.b if a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) - {name} for name, path in known.items()}


def test_no_import_goes_up_a_layer() -> None:
    upward = [
        f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"
        for source, targets in graph().items()
        for target in sorted(targets)
        if layer(target) > layer(source)
    ]
    assert upward == []


def test_the_checker_imports_only_the_history_model() -> None:
    outside = [
        f"{source} imports {target}"
        for source, targets in graph().items()
        if source.startswith("checker")
        for target in sorted(targets)
        if not any(target == p or target.startswith(p + ".") for p in CHECKER_MAY_IMPORT)
    ]
    assert outside == []


def test_no_import_cycle() -> None:
    edges = graph()
    # Tarjan's strongly connected components; any with two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_layer_test_sees_an_upward_import() -> None:
    # The checks above must be able to fail: a core module importing the harness is caught.
    assert layer("core.history") < layer("harness.runner")
    assert layer("harness.cluster.local") < layer("workloads.worker") < layer("faults.nemesis")
    assert layer("harness.scenario") < layer("harness.suite")
