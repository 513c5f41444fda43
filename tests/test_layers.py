"""The import graph, by folder: every arrow points down the layers, and nothing circles.

The layers are the repository's top-level folders (each installed as
``lockharness.<folder>``). Every import counts, wherever it stands (module top, inside a
function, under TYPE_CHECKING): a cycle hidden in a function is still a cycle for a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
ROOT = "lockharness"

# Bottom to top: a folder may import from its own layer's folders and those below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),  # the history model, errors, endpoints, connections, the clock shim
    ("cluster",),  # the Cluster protocol, what backends share, the local backend
    ("compose",),  # the Docker Compose backend, beside the local one
    ("workloads",),  # lock clients and the worker
    ("faults",),  # the nemesis
    ("checker",),  # pure: the history model only (see below)
    ("harness",),  # scenarios, run, suite, reports, console, CLI, pytest plug-in
)
FOLDERS = tuple(folder for layer in LAYERS for folder in layer)
CHECKER_MAY_IMPORT = ("lockharness.checker", "lockharness.core.history")


def layer(folder: str) -> int:
    for number, folders in enumerate(LAYERS):
        if folder in folders:
            return number
    raise AssertionError(f"{folder}/ is in no layer: add it to LAYERS")


def modules() -> dict[str, Path]:
    """Every module of the package by its import name, from the folders on disk."""
    found = {ROOT: REPO / ROOT / "__init__.py", f"{ROOT}.__main__": REPO / ROOT / "__main__.py"}
    for folder in FOLDERS:
        for path in (REPO / folder).rglob("*.py"):
            name = ".".join((ROOT, *path.relative_to(REPO).with_suffix("").parts))
            found[name.removesuffix(".__init__")] = path
    return found


def folder_of(path: Path) -> str:
    """The folder a module's file is in, relative to the repository: 'harness/reports'."""
    return path.parent.relative_to(REPO).as_posix()


def top_folder(path: Path) -> str:
    return folder_of(path).split("/")[0]


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


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components; any with two or more members is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def upward(edges: dict[str, set[str]], where: dict[str, Path]) -> list[str]:
    """Imports from a folder into a folder of a higher layer (the package root is above all)."""
    found = []
    for source, targets in edges.items():
        if source.count(".") == 0 or source == f"{ROOT}.__main__":
            continue  # lockharness itself and `python -m lockharness`: the front door, on top
        for target in sorted(targets):
            if target.count(".") == 0 or target == f"{ROOT}.__main__":
                found.append(f"{source} imports {target}, the package's front door")
                continue
            low, high = top_folder(where[source]), top_folder(where[target])
            if layer(high) > layer(low):
                found.append(f"{source} ({low}/) imports {target} ({high}/, a higher layer)")
    return found


def test_no_import_goes_up_a_layer() -> None:
    assert upward(graph(), modules()) == []


def test_the_checker_imports_only_the_history_model() -> None:
    outside = [
        f"{source} imports {target}"
        for source, targets in graph().items()
        if source.startswith(f"{ROOT}.checker")
        for target in sorted(targets)
        if not any(target == p or target.startswith(p + ".") for p in CHECKER_MAY_IMPORT)
    ]
    assert outside == []


def test_no_import_cycle_between_modules() -> None:
    assert cycles(graph()) == []


def test_no_import_cycle_between_folders() -> None:
    # Folders at every depth (harness/reports, harness/scenario, ...): two that import each
    # other are one layer in fact, whatever their names say.
    where = modules()
    edges: dict[str, set[str]] = {}
    for source, targets in graph().items():
        edges.setdefault(folder_of(where[source]), set()).update(
            folder_of(where[t]) for t in targets if folder_of(where[t]) != folder_of(where[source])
        )
    assert cycles(edges) == []


def test_every_folder_is_a_layer_and_installed() -> None:
    # A new top-level package folder must be placed in LAYERS and mapped in setup.py.
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert packages - {"tests", "bench", ROOT} == set(FOLDERS)
    setup = (REPO / "setup.py").read_text()
    assert all(f'"{folder}"' in setup for folder in FOLDERS)


def test_the_layer_test_sees_an_upward_import() -> None:
    # The checks above must be able to fail: a core module importing the harness is caught,
    # as is a circle of two folders.
    where = {
        "lockharness.core.history": REPO / "core" / "history.py",
        "lockharness.harness.runner": REPO / "harness" / "runner.py",
    }
    edges = {"lockharness.core.history": {"lockharness.harness.runner"}}
    assert upward(edges, where) == [
        "lockharness.core.history (core/) imports lockharness.harness.runner "
        "(harness/, a higher layer)"
    ]
    assert upward({"lockharness.harness.runner": {"lockharness.core.history"}}, where) == []
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert layer("cluster") < layer("compose") < layer("workloads") < layer("faults")
