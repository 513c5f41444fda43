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

# harness/'s rooms, bottom to top: a room may import from the rooms below it, never from one
# beside it or above it. Every module of harness/ is in a room (none loose at its top).
HARNESS_ROOMS: tuple[tuple[str, ...], ...] = (
    ("scenario",),  # scenarios: the typed model, reading, writing, checks, limits
    ("reports",),  # timeline, plots, analysis: drawn from a run directory
    ("store",),  # the store's layout, writability, gc
    ("run",),  # one run: backends, binaries, the runner, its log, console, replay, recheck
    ("parallel",),  # a run as a job in its own process, job slots, shards
    ("suite", "explore", "conformance"),  # many runs: a suite's plan; a search; client-check
    ("merge",),  # shards' stores into one, the store's index page
    ("pytest_plugin",),  # the plug-in: fixtures over runs and explorations
    ("cli",),  # the command line: the parser and one module per command
)
ROOMS = tuple(room for level in HARNESS_ROOMS for room in level)
# The checker reads only the history model: the events (core.history), their fault
# occurrences, typed and paired once (core.occurrences), and the clients' values, typed
# (core.op_values).
CHECKER_MAY_IMPORT = (
    "lockharness.checker",
    "lockharness.core.history",
    "lockharness.core.occurrences",
    "lockharness.core.op_values",
)


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


def room_level(room: str) -> int:
    for number, rooms in enumerate(HARNESS_ROOMS):
        if room in rooms:
            return number
    raise AssertionError(f"harness/{room}/ is in no room: add it to HARNESS_ROOMS")


def room_of(path: Path) -> str | None:
    """The harness room a module is in ('run' for harness/run/runner.py), None outside."""
    parts = path.relative_to(REPO).parts
    return parts[1] if parts[0] == "harness" and len(parts) > 2 else None


def across_rooms(edges: dict[str, set[str]], where: dict[str, Path]) -> list[str]:
    """Imports inside harness/ from a room into one beside it or above it."""
    found = []
    for source, targets in edges.items():
        low = room_of(where[source])
        for target in sorted(targets):
            high = room_of(where[target])
            if low is None or high is None or low == high:
                continue
            if room_level(high) >= room_level(low):
                found.append(f"{source} (harness/{low}/) imports {target} (harness/{high}/)")
    return found


def test_no_import_goes_up_a_room_in_the_harness() -> None:
    assert across_rooms(graph(), modules()) == []


def test_every_harness_module_is_in_a_placed_room() -> None:
    loose = sorted(p.name for p in (REPO / "harness").glob("*.py") if p.name != "__init__.py")
    assert loose == [], "a module at harness/'s top: put it in a room"
    rooms = {p.parent.name for p in (REPO / "harness").glob("*/__init__.py")}
    assert rooms == set(ROOMS)


def test_the_room_test_sees_a_sideways_and_an_upward_import() -> None:
    where = {
        "a": REPO / "harness" / "run" / "runner.py",
        "b": REPO / "harness" / "suite" / "plan.py",
        "c": REPO / "harness" / "explore" / "trial.py",
        "d": REPO / "harness" / "scenario" / "model.py",
    }
    assert across_rooms({"a": {"b"}}, where) == ["a (harness/run/) imports b (harness/suite/)"]
    assert across_rooms({"b": {"c"}}, where) == ["b (harness/suite/) imports c (harness/explore/)"]
    assert across_rooms({"b": {"a", "d"}, "c": {"a"}}, where) == []


def test_no_import_is_hidden_from_the_layer_test() -> None:
    # An import by a computed name (importlib.import_module(f"...")) is invisible to the
    # checks above. Only the plug-in loaders may do it: they import the user's modules.
    # The package's front door loads its public names lazily; its TYPE_CHECKING imports,
    # which this test reads, name the same modules (tests/test_public_api.py holds that).
    loaders = {
        "lockharness/__init__.py",
        "workloads/registry.py",
        "faults/registry.py",  # the built-in kinds' files, found in faults/kinds/
        "workloads/plugin_import.py",
        "workloads/adapters/common.py",
        "workloads/client_info.py",
    }
    hidden = []
    for name, path in modules().items():
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, (ast.Attribute, ast.Name))
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
                in ("import_module", "__import__")
                and rel not in loaders
            ):
                hidden.append(f"{name}: line {node.lineno}")
    assert hidden == []


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
        "lockharness.harness.run.runner": REPO / "harness" / "run" / "runner.py",
    }
    edges = {"lockharness.core.history": {"lockharness.harness.run.runner"}}
    assert upward(edges, where) == [
        "lockharness.core.history (core/) imports lockharness.harness.run.runner "
        "(harness/, a higher layer)"
    ]
    assert upward({"lockharness.harness.run.runner": {"lockharness.core.history"}}, where) == []
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert layer("cluster") < layer("compose") < layer("workloads") < layer("faults")


def test_the_docs_table_of_rooms_is_the_generated_one() -> None:
    from tests.generated import harness_rooms, section

    stale = "docs/layout.md's table of harness/'s rooms is stale: run `make generated`"
    assert section(REPO / "docs" / "layout.md", "tests/test_layers.py") == harness_rooms(), stale
