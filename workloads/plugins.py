"""User plug-in lock clients: a class named "package.module:ClassName", checked on load.

Reading a scenario only locates a plug-in's module (``locate_plugin``: nothing of it
runs, so a scenario file from elsewhere runs no code when `check` or `report` reads
it); a run imports and inspects the class (``load_plugin``) after reading and before
anything starts, so that every mistake is bad input naming the class, not a worker dying
mid-run. What it declares (OPTIONS,
needs_masters, reentrant, ...: workloads/declaration.py) becomes a ClientInfo the same way
a built-in client's declaration does, so the scenario's cross-checks treat both alike.

Where its module comes from: the directories given (a scenario's ``client.path``, then
the scenario's directory and the current directory), then the normal sys.path. It is
imported by its own name (workloads/plugin_import.py): the harness's packages are all
under ``lockharness``, so any name works, ``core`` or ``faults`` too. The directory it was
found in is handed on, so a worker (a separate process, started from the run's own cwd) loads the
very same file: the runner puts the directories in LOCKHARNESS_PLUGIN_PATH, which
``load_plugin`` reads in the worker.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from lockharness.workloads.client_info import ClientInfo
from lockharness.workloads.declaration import DeclarationError, declared_info
from lockharness.workloads.plugin_import import (
    ImportFailed,
    NotFound,
    find_top,
    import_plugin,
    locate_module,
)

# How the runner hands a worker its plug-in's directories (os.pathsep-separated).
PLUGIN_PATH_ENV = "LOCKHARNESS_PLUGIN_PATH"

_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_CLASS_PATH = re.compile(rf"({_NAME}):({_NAME})")
CLASS_PATH_PATTERN = rf"^{_NAME}:{_NAME}$"  # the form, for a JSON Schema
_EXPECTED_FORM = '"module:ClassName" (a dotted module name, a colon, a class), e.g. my_lock:MyLock'
# name -> the arguments a call passes after self, for the signature check.
_METHODS: dict[str, tuple[str, ...]] = {
    "acquire": ("key", "ttl_ms"),
    "release": ("lease",),
    "close": (),
}
_OPTIONAL_METHODS: dict[str, tuple[str, ...]] = {"extend": ("lease", "ttl_ms")}
_PROTOCOL = (
    "acquire(key, ttl_ms) -> Lease | None, release(lease) -> bool and close() "
    "(optionally extend(lease, ttl_ms) -> Lease | None)"
)
_CONSTRUCTOR = "__init__(self, nodes, clock, options, discovery=None)"


class PluginError(ValueError):
    """Why a plug-in cannot be used; the message ends with what is expected."""


@dataclass(frozen=True)
class Plugin:
    info: ClientInfo
    # Directories that go ahead of sys.path wherever it is imported: those asked for,
    # plus the one its module was found in (absent when it came from sys.path itself).
    path: tuple[str, ...]


def is_plugin_path(name: object) -> bool:
    """A client name that means a plug-in class rather than a built-in client."""
    return isinstance(name, str) and ":" in name


def env_path() -> tuple[str, ...]:
    return tuple(d for d in os.environ.get(PLUGIN_PATH_ENV, "").split(os.pathsep) if d)


def _split(class_path: str) -> tuple[str, str]:
    match = _CLASS_PATH.fullmatch(class_path) if isinstance(class_path, str) else None
    if match is None:
        raise PluginError(f"{class_path!r} is not a plug-in class; expected: {_EXPECTED_FORM}")
    module_name, attr = match.groups()
    return module_name, attr


def _places(
    path: Sequence[str], inherited: Sequence[str], also: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Where to look, each directory once: (directory, why) for messages."""
    unique: dict[str, tuple[str, str]] = {}
    for directory, why in [
        *((d, "client.path") for d in path),
        *((d, PLUGIN_PATH_ENV) for d in inherited),
        *also,
    ]:
        unique.setdefault(directory, (directory, why))
    return list(unique.values())


def locate_plugin(
    class_path: str,
    path: Sequence[str] = (),
    also: Sequence[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The directories ``load_plugin`` will import ``class_path`` from (as ``Plugin.path``),
    its module found without running any of its code: reading a scenario file from
    elsewhere must not run what it names. PluginError when the form is wrong or the
    module does not exist; the class itself is checked only when it is imported."""
    module_name, _ = _split(class_path)
    inherited = env_path()
    places = _places(path, inherited, also)
    try:
        found = locate_module(module_name, places)
    except NotFound as e:
        raise _not_found(e.name, e.reason, places) from None
    except ImportFailed as e:
        raise PluginError(str(e)) from None
    return tuple(dict.fromkeys([*path, *inherited, *([found] if found else [])]))


def import_attribute(
    class_path: str,
    path: Sequence[str] = (),
    also: Sequence[tuple[str, str]] = (),
    what: str = "a lock-client class",
) -> tuple[object, tuple[str, ...], str]:
    """What ``class_path`` names, imported (PluginError says what is wrong; ``what`` it
    should be, for the message); the directories it was imported from (as
    ``Plugin.path``); and its name as a worker imports it ("module:Class")."""
    module_name, attr = _split(class_path)
    inherited = env_path()  # in a worker: the directories the runner handed on
    places = _places(path, inherited, also)
    top = module_name.partition(".")[0]
    try:
        found, exists = find_top(top, places)
    except ImportFailed as e:
        raise PluginError(str(e)) from None
    if not exists:
        raise _not_found(module_name, f"No module named '{top}'", places)
    dirs = tuple(dict.fromkeys([*path, *inherited, *([found] if found else [])]))
    # In a worker the plug-in's code runs, and may import more of its own later (its
    # siblings, by name): its directories stay on sys.path. The harness only inspects the
    # class, so there they go again, lest a user's file shadow a module imported later.
    with _on_path(dirs, keep=bool(inherited)):
        try:
            module = import_plugin(module_name)
        except NotFound as e:
            raise _not_found(e.name, e.reason, places) from None
        except ImportFailed as e:
            raise PluginError(str(e)) from None
    obj = _attribute(module, module_name, attr, what)
    return obj, dirs, f"{module.__name__}:{attr}"


def load_plugin(
    class_path: str,
    path: Sequence[str] = (),
    also: Sequence[tuple[str, str]] = (),
) -> Plugin:
    """Import and check the class ``class_path`` names; PluginError says what is wrong.

    ``path``: directories (absolute) that always go ahead of sys.path for it. ``also``:
    (directory, why) looked in after them, kept only if the module is found there;
    ``why`` is for messages ("the scenario's directory").
    """
    obj, dirs, factory_path = import_attribute(class_path, path, also)
    _check_class(obj, class_path)
    cls = cast(type, obj)  # _check_class refused anything but a class
    try:
        info = declared_info(cls, class_path, factory_path, class_path, f"plug-in {class_path}")
    except DeclarationError as e:
        raise PluginError(str(e)) from None
    return Plugin(info, dirs)


def _not_found(module_name: str, reason: str, places: Sequence[tuple[str, str]]) -> PluginError:
    looked = ", ".join(f"{d} ({why})" for d, why in places)
    looked = f"{looked}, then sys.path" if looked else "sys.path"
    top = module_name.partition(".")[0]
    return PluginError(
        f"module '{module_name}' not found (ModuleNotFoundError: {reason}); looked in "
        f"{looked}; expected: {top}.py or a package {top}/ in one of those "
        "directories, or an installed module"
    )


@contextmanager
def _on_path(dirs: Sequence[str], *, keep: bool) -> Iterator[None]:
    added = [d for d in dirs if d not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        if not keep:
            for d in added:
                sys.path.remove(d)


def _attribute(module: types.ModuleType, module_name: str, attr: str, what: str) -> object:
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            origin = getattr(module, "__file__", None) or "a namespace package"
            classes = sorted(
                name
                for name, value in vars(module).items()
                if inspect.isclass(value) and value.__module__ == module.__name__
            )
            there = f" (classes there: {', '.join(classes)})" if classes else ""
            raise PluginError(
                f"module '{module_name}' ({origin}) has no attribute '{attr}'; expected: "
                f"the name of {what} defined there{there}"
            )
        obj = getattr(obj, part)
    return obj


def _check_class(cls: object, class_path: str) -> None:
    """The lock-client protocol (workloads/protocol.py), as far as it shows before a run."""
    if not inspect.isclass(cls):
        raise PluginError(
            f"{class_path} is {_a(cls)}, not a class; expected: a class with "
            f"{_CONSTRUCTOR} and methods {_PROTOCOL}"
        )
    for name, args in _METHODS.items():
        _check_method(cls, class_path, name, args, required=True)
    for name, args in _OPTIONAL_METHODS.items():
        _check_method(cls, class_path, name, args, required=False)
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return  # some classes (C-implemented) show no signature: nothing to check
    try:
        signature.bind((), None, {}, discovery=None)
    except TypeError as e:
        raise PluginError(
            f"{class_path} cannot be built as {cls.__name__}(nodes, clock, options, "
            f"discovery=None): {e}; expected: {_CONSTRUCTOR}"
        ) from None


def _check_method(
    cls: type, class_path: str, name: str, args: tuple[str, ...], *, required: bool
) -> None:
    raw = inspect.getattr_static(cls, name, None)
    if raw is None:
        if required:
            raise PluginError(f"{class_path} has no method '{name}'; expected: {_PROTOCOL}")
        return
    if not callable(getattr(cls, name)):
        raise PluginError(f"{class_path}.{name} is {_a(raw)}, not a method; expected: {_PROTOCOL}")
    if isinstance(raw, types.FunctionType):  # a plain method: it is called with self first
        try:
            inspect.signature(raw).bind(None, *args)
        except TypeError as e:
            call = f"{name}({', '.join(args)})"
            raise PluginError(
                f"{class_path}.{name} cannot be called as {call}: {e}; expected: {_PROTOCOL}"
            ) from None


def _a(value: object) -> str:
    """What a value is, for messages: "an int", "a function"."""
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
