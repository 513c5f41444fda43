"""Fault kinds from outside the package: a scenario's ``kind: module:Class`` (its module
found as a plug-in lock client's is: the fault's ``path``, the scenario's directory, the
current directory, then sys.path; workloads/plugins.py), or the name of an entry point of
the ``lockharness.faults`` group (an installed package's). Either is checked as a
built-in kind is (faults.registry.check_declaration) and registered under the name the
scenario gives it, which is also its ``kind`` in the history.

Unlike a plug-in lock client, a plug-in kind is imported when the scenario is read: its
Options are what its entry's ``options`` are read against.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import cast

from lockharness.faults.base import Fault
from lockharness.faults.registry import (
    BUILT_IN_KINDS,
    FAULT_KINDS,
    KINDS,
    DeclarationError,
    check_declaration,
    register,
)
from lockharness.workloads.plugins import PluginError, import_attribute, is_plugin_path

ENTRY_POINTS = "lockharness.faults"
_WHAT = "a fault class (a subclass of lockharness.faults.base.Fault)"


class FaultKindError(ValueError):
    """Why a kind cannot be used; the message ends with what is allowed."""


def installed() -> list[str]:
    """The kinds installed packages declare (entry point names), none of them loaded."""
    names = (ep.name for ep in entry_points(group=ENTRY_POINTS))
    return sorted(name for name in names if name not in FAULT_KINDS)


def is_plugin_kind(name: object) -> bool:
    """A kind that is no built-in: module:Class, or an installed entry point's name."""
    if not isinstance(name, str) or name in FAULT_KINDS:
        return False
    return is_plugin_path(name) or name in KINDS or name in installed()


def places(base: Path | None) -> list[tuple[str, str]]:
    """Where a plug-in kind's module is looked for after its own ``path``: beside the
    file that names it (a scenario, an explore model), then the current directory."""
    found = [(str(base.resolve()), "the scenario's directory")] if base is not None else []
    return [*found, (str(Path.cwd().resolve()), "the current directory")]


def load_kind(
    name: str, path: Sequence[str] = (), also: Sequence[tuple[str, str]] = ()
) -> tuple[type[Fault], tuple[str, ...]]:
    """Kind ``name``'s class, registered, and the directories it was imported from (kept in
    the scenario written back, so that a run's copy finds it again). FaultKindError."""
    if name in KINDS:  # loaded already: a module name is one file (plugin_import)
        return KINDS[name], _home(name)
    if is_plugin_path(name):
        try:
            cls, dirs, _ = import_attribute(name, path, also, _WHAT)
        except PluginError as e:
            raise FaultKindError(str(e)) from None
    else:
        found = [ep for ep in entry_points(group=ENTRY_POINTS) if ep.name == name]
        if not found:
            raise FaultKindError(f"{name!r} is not a fault kind; allowed: {allowed()}")
        try:
            cls, dirs = found[0].load(), ()
        except Exception as e:  # an installed package's code: anything
            raise FaultKindError(
                f"entry point {name} ({ENTRY_POINTS}: {found[0].value}) raised "
                f"{type(e).__name__}: {e}; expected: {_WHAT}"
            ) from None
    try:
        check_declaration(cls, name)
    except DeclarationError as e:
        raise FaultKindError(str(e)) from None
    registered = register(name, cast("type[Fault]", cls))  # checked: a Fault subclass
    return registered, tuple(dict.fromkeys([*dirs, *_home(name)]))


def _home(name: str) -> tuple[str, ...]:
    """The directory a module:Class kind's top package was imported from, however it was
    found (a run's copy of the scenario, read in another process, looks there first)."""
    if not is_plugin_path(name):
        return ()  # an entry point: found by name wherever it is installed
    top = sys.modules.get(name.partition(":")[0].partition(".")[0])
    file = getattr(top, "__file__", None)
    if file is None:
        return ()
    where = Path(file).resolve().parent
    return (str(where.parent if Path(file).name == "__init__.py" else where),)


def allowed() -> str:
    """What a kind may be, for messages."""
    kinds = [*BUILT_IN_KINDS, *installed()]
    return f"{', '.join(kinds)}, or a plug-in class as module:Class (docs/faults.md)"
