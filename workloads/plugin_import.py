"""Import a plug-in's module from its file, under a private module name.

A plug-in named "faults:Lock" or "checker:Lock" would, imported by name, collide with the
harness's own top-level packages. So its top-level module (a file, or a package
directory) is loaded from where it was found under ``_lockharness_plugin_<hash of its
path>``, registered in sys.modules under that name only, and a dotted plug-in
("pkg.mod:Class") is then imported as a submodule of that private package, so that its
relative imports work. The same file gets the same private name in every process: a
worker that loads it again agrees with the scenario loader.

Its directory still goes on sys.path (plugins.py), for the siblings it imports by name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
import traceback
import types
from collections.abc import Callable, Sequence
from pathlib import Path

PRIVATE_PREFIX = "_lockharness_plugin_"
# Top-level names of the harness's own packages. A worker imports only core and workloads
# (tests/test_layers.py), both before any plug-in is loaded, so a plug-in file of one of
# these names in a directory on the worker's sys.path shadows nothing there.
HARNESS_PACKAGES = frozenset({"core", "harness", "workloads", "faults", "checker", "compose"})


class ImportFailed(Exception):
    """Why the module could not be imported; the message is for a PluginError."""


def find_top(
    top: str, places: Sequence[tuple[str, str]]
) -> tuple[str | None, importlib.machinery.ModuleSpec | None]:
    """The first of ``places`` (directory, why) holding module or package ``top``, and its
    spec; else (None, its spec on sys.path, or None if it is nowhere)."""
    importlib.invalidate_caches()  # a module written since the last look must be seen
    for directory, _ in places:
        spec = importlib.machinery.PathFinder.find_spec(top, [directory])
        if spec is not None:
            _refuse_shadowing(top, directory, spec)
            return directory, spec
    return None, importlib.machinery.PathFinder.find_spec(top)


def _refuse_shadowing(top: str, directory: str, spec: importlib.machinery.ModuleSpec) -> None:
    """A library the harness has loaded, named like the plug-in: its directory, ahead on a
    worker's sys.path, would hand the plug-in's file to whatever imports that name later
    (a library may import itself piecemeal), and the harness's process would not."""
    there = getattr(sys.modules.get(top), "__file__", None)
    if top in HARNESS_PACKAGES or not there or _same_file(spec, there):
        return
    raise ImportFailed(
        f"module '{top}' is in {directory}, but a module of that name is already loaded "
        f"from {there} (a library the harness uses, which the plug-in's directory would "
        "shadow in the workers); expected: a module name no other loaded library has"
    )


def _origin(spec: importlib.machinery.ModuleSpec) -> str | None:
    """The file or directory a spec stands for (a namespace package: its directory)."""
    if spec.origin and spec.has_location:
        return spec.origin
    return next(iter(spec.submodule_search_locations or []), None)


def _same_file(spec: importlib.machinery.ModuleSpec, there: str) -> bool:
    here = _origin(spec)
    if here is None:
        return False
    a, b = Path(here).resolve(), Path(there).resolve()
    return a == b or a == b.parent  # a package: its directory vs its __init__.py


def import_plugin(module_name: str, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
    """``module_name`` ("mod" or "pkg.mod"), whose top-level module ``spec`` found. The
    module already loaded from that very file (a harness module named as a plug-in) is
    used as it is; anything else is loaded under its private name."""
    top, _, rest = module_name.partition(".")
    loaded = sys.modules.get(top)
    there = getattr(loaded, "__file__", None)
    if loaded is not None and there and _same_file(spec, there):
        # Its own name, no private one: the top name "translates" to itself in messages.
        return _run(module_name, lambda: importlib.import_module(module_name), top)
    private = private_name(spec)
    package = sys.modules.get(private) or _run(module_name, lambda: _load(private, spec), private)
    if not rest:
        return package
    return _run(module_name, lambda: importlib.import_module(f"{private}.{rest}"), private)


def private_name(spec: importlib.machinery.ModuleSpec) -> str:
    where = str(Path(_origin(spec) or spec.name).resolve())
    return PRIVATE_PREFIX + hashlib.sha256(where.encode()).hexdigest()[:16]


def _load(private: str, found: importlib.machinery.ModuleSpec) -> types.ModuleType:
    locations = found.submodule_search_locations
    if found.has_location and found.origin:
        spec = importlib.util.spec_from_file_location(
            private, found.origin, submodule_search_locations=locations
        )
    else:  # a namespace package: a directory without __init__.py
        spec = importlib.machinery.ModuleSpec(private, None, is_package=True)
        spec.submodule_search_locations = list(locations or [])
    assert spec is not None  # a location that PathFinder found has a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[private] = module  # before running it, as import does (for its imports)
    try:
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(private, None)  # a failed load leaves nothing behind, as import does
        raise
    return module


def _run(module_name: str, do: Callable[[], types.ModuleType], private: str) -> types.ModuleType:
    """``do()``, with what went wrong said in the user's names, not the private one."""
    top = module_name.partition(".")[0]
    try:
        return do()
    except ModuleNotFoundError as e:
        missing = (e.name or "").replace(private, top, 1)
        if missing and (module_name + ".").startswith(missing + "."):
            # The module itself (or its package) is missing, not something it imports.
            raise NotFound(missing, f"No module named '{missing}'") from None
        raise ImportFailed(_raised(module_name, e, private)) from None
    except (Exception, SystemExit) as e:  # user code: anything, even sys.exit()
        raise ImportFailed(_raised(module_name, e, private)) from None


class NotFound(Exception):
    """The module (or a package in its dotted name) does not exist."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name, self.reason = name, reason


def _raised(module_name: str, e: BaseException, private: str) -> str:
    """Importing ran the module and it raised: show what and where."""
    machinery = str(Path(importlib.__file__).parent)
    frames = [
        f
        for f in traceback.extract_tb(e.__traceback__)
        if not f.filename.startswith(("<", machinery)) and f.filename != __file__
    ]
    # A SyntaxError names its file and line itself; its traceback has no frame there.
    shown = frames and not isinstance(e, SyntaxError)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if shown else ""
    said = str(e).replace(private, module_name.partition(".")[0])  # the user's name for it
    return (
        f"importing module '{module_name}' raised {type(e).__name__}: {said}{where}; "
        "expected: a module that imports without an error"
    )
