"""Import a plug-in's module by its own name, saying in the user's terms what went wrong.

The harness's own packages all live under ``lockharness``, so a plug-in may have any
module name, ``core`` or ``faults`` included. One thing is refused: a module of that name
already loaded from another file (a library the harness uses, such as ``yaml``, or another
plug-in of the same name from another directory). Its directory, ahead on a worker's
sys.path, would hand the plug-in's file to whatever imports that name later, and the
module already loaded is not the plug-in's.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import traceback
import types
from collections.abc import Sequence
from pathlib import Path


class ImportFailed(Exception):
    """Why the module could not be imported; the message is for a PluginError."""


class NotFound(Exception):
    """The module (or a package in its dotted name) does not exist."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name, self.reason = name, reason


def find_top(top: str, places: Sequence[tuple[str, str]]) -> tuple[str | None, bool]:
    """The first of ``places`` (directory, why) holding module or package ``top``, and
    whether ``top`` exists at all (there, or on sys.path)."""
    importlib.invalidate_caches()  # a module written since the last look must be seen
    for directory, _ in places:
        spec = importlib.machinery.PathFinder.find_spec(top, [directory])
        if spec is not None:
            _refuse_another_file(top, directory, spec)
            return directory, True
    return None, top in sys.modules or importlib.machinery.PathFinder.find_spec(top) is not None


def locate_module(module_name: str, places: Sequence[tuple[str, str]]) -> str | None:
    """Where ``module_name`` ("mod" or "pkg.sub.mod") would be imported from, found without
    running any of its code (no package's __init__ either): the first of ``places``
    holding its top package, or None for sys.path. NotFound when it does not exist."""
    top, _, rest = module_name.partition(".")
    found, exists = find_top(top, places)
    if not exists:
        raise NotFound(top, f"No module named '{top}'")
    if not rest:
        return found
    loaded = sys.modules.get(top)
    if found is None and loaded is not None:
        locations = list(getattr(loaded, "__path__", []))  # already imported: nothing runs
    else:
        spec = importlib.machinery.PathFinder.find_spec(top, [found] if found else None)
        locations = list(spec.submodule_search_locations or []) if spec else []
    name = top
    for part in rest.split("."):
        if not locations:
            raise NotFound(
                name + "." + part, f"No module named '{name}.{part}'; '{name}' is not a package"
            )
        name = f"{name}.{part}"
        spec = importlib.machinery.PathFinder.find_spec(name, locations)
        if spec is None:
            raise NotFound(name, f"No module named '{name}'")
        locations = list(spec.submodule_search_locations or [])
    return found


def _refuse_another_file(top: str, directory: str, spec: importlib.machinery.ModuleSpec) -> None:
    there = getattr(sys.modules.get(top), "__file__", None)
    if not there or _same_file(spec, there):
        return
    raise ImportFailed(
        f"module '{top}' is in {directory}, but a module of that name is already loaded "
        f"from {there} (a library the harness uses, or another plug-in, which the plug-in's "
        "directory would shadow in the workers); expected: a module name no other loaded "
        "module has"
    )


def _same_file(spec: importlib.machinery.ModuleSpec, there: str) -> bool:
    here = spec.origin if spec.origin and spec.has_location else None
    here = here or next(iter(spec.submodule_search_locations or []), None)
    if here is None:
        return False
    a, b = Path(here).resolve(), Path(there).resolve()
    return a == b or a == b.parent  # a package: its directory vs its __init__.py


def import_plugin(module_name: str) -> types.ModuleType:
    """``module_name`` ("mod" or "pkg.mod"), its directory already on sys.path."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing and (module_name + ".").startswith(missing + "."):
            # The module itself (or its package) is missing, not something it imports.
            raise NotFound(missing, f"No module named '{missing}'") from None
        raise ImportFailed(_raised(module_name, e)) from None
    except (Exception, SystemExit) as e:  # user code: anything, even sys.exit()
        raise ImportFailed(_raised(module_name, e)) from None


def _raised(module_name: str, e: BaseException) -> str:
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
    return (
        f"importing module '{module_name}' raised {type(e).__name__}: {e}{where}; "
        "expected: a module that imports without an error"
    )
