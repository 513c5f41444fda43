"""User plug-in lock clients: a class named "package.module:ClassName", checked on load.

A plug-in is imported and inspected before anything starts, so that every mistake is
bad input naming the class, not a worker dying mid-run. What it declares (OPTIONS,
needs_masters, reentrant) becomes a ClientInfo like a built-in client's, so the
scenario's cross-checks treat both alike.

Where its module comes from: the directories given (a scenario's ``client.path``, then
the scenario's directory and the current directory), then the normal sys.path. The
directory it was found in is handed on, so a worker (a separate process, started from
the run's own cwd) imports the very same file: the runner puts the directories in
LOCKHARNESS_PLUGIN_PATH, which ``load_plugin`` reads in the worker.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import os
import re
import sys
import traceback
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workloads.client_info import ClientInfo, option_kind_ok

# How the runner hands a worker its plug-in's directories (os.pathsep-separated).
PLUGIN_PATH_ENV = "LOCKHARNESS_PLUGIN_PATH"

_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_CLASS_PATH = re.compile(rf"({_NAME}):({_NAME})")
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
    match = _CLASS_PATH.fullmatch(class_path) if isinstance(class_path, str) else None
    if match is None:
        raise PluginError(f"{class_path!r} is not a plug-in class; expected: {_EXPECTED_FORM}")
    module_name, attr = match.groups()
    inherited = env_path()  # in a worker: the directories the runner handed on
    unique: dict[str, tuple[str, str]] = {}  # a directory named twice: looked in once
    for directory, why in [
        *((d, "client.path") for d in path), *((d, PLUGIN_PATH_ENV) for d in inherited), *also
    ]:
        unique.setdefault(directory, (directory, why))
    places = list(unique.values())
    found = _where(module_name.partition(".")[0], places)
    dirs = tuple(dict.fromkeys([*path, *inherited, *([found] if found else [])]))
    # In a worker the plug-in's code runs, and may import more of its own later: its
    # directories stay on sys.path. The harness only inspects the class, so there they
    # go again, lest a user's file shadow a module the harness imports later.
    with _on_path(dirs, keep=bool(inherited)):
        module = _import(module_name, places)
    cls = _attribute(module, module_name, attr, class_path)
    _check_class(cls, class_path)
    return Plugin(_info(cls, class_path), dirs)


def _where(top: str, places: Sequence[tuple[str, str]]) -> str | None:
    """The first directory holding module or package ``top``, if any of ``places`` does;
    a name already imported from elsewhere would silently win, so that is an error."""
    importlib.invalidate_caches()  # a module written since the last look must be seen
    for directory, _ in places:
        spec = importlib.machinery.PathFinder.find_spec(top, [directory])
        if spec is None:
            continue
        loaded = sys.modules.get(top)
        here = spec.origin or next(iter(spec.submodule_search_locations or []), None)
        there = getattr(loaded, "__file__", None)
        if loaded is not None and there and here and not _same_module(here, there):
            raise PluginError(
                f"module '{top}' is in {directory}, but a module of that name is already "
                f"loaded from {there} (the harness's own, or another plug-in's); "
                "expected: a module name no other loaded module has"
            )
        return directory
    return None


def _same_module(here: str, there: str) -> bool:
    a, b = Path(here).resolve(), Path(there).resolve()
    return a == b or a == b.parent  # a package: its directory vs its __init__.py


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


def _import(module_name: str, places: Sequence[tuple[str, str]]) -> types.ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (module_name + ".").startswith(e.name + "."):
            # The module itself (or its package) is missing, not something it imports.
            looked = ", ".join(f"{d} ({why})" for d, why in places)
            looked = f"{looked}, then sys.path" if looked else "sys.path"
            top = module_name.partition(".")[0]
            raise PluginError(
                f"module '{module_name}' not found ({type(e).__name__}: {e}); looked in "
                f"{looked}; expected: {top}.py or a package {top}/ in one of those "
                "directories, or an installed module"
            ) from None
        raise _raised(module_name, e) from None
    except (Exception, SystemExit) as e:  # user code: anything, even sys.exit()
        raise _raised(module_name, e) from None


def _raised(module_name: str, e: BaseException) -> PluginError:
    """Importing ran the module and it raised: show what and where."""
    machinery = str(Path(importlib.__file__).parent)
    frames = [
        f for f in traceback.extract_tb(e.__traceback__)
        if not f.filename.startswith(("<", machinery))
    ]  # fmt: skip
    # A SyntaxError names its file and line itself; its traceback has no frame there.
    shown = frames and not isinstance(e, SyntaxError)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if shown else ""
    return PluginError(
        f"importing module '{module_name}' raised {type(e).__name__}: {e}{where}; "
        "expected: a module that imports without an error"
    )


def _attribute(module: types.ModuleType, module_name: str, attr: str, class_path: str) -> object:
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            origin = getattr(module, "__file__", None) or "a namespace package"
            classes = sorted(
                name for name, value in vars(module).items()
                if inspect.isclass(value) and value.__module__ == module.__name__
            )  # fmt: skip
            there = f" (classes there: {', '.join(classes)})" if classes else ""
            raise PluginError(
                f"module '{module_name}' ({origin}) has no attribute '{attr}'; expected: "
                f"the name of a lock-client class defined there{there}"
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
        raise PluginError(
            f"{class_path}.{name} is {_a(raw)}, not a method; expected: {_PROTOCOL}"
        )
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


def _info(cls: type, class_path: str) -> ClientInfo:
    """What the class declares, as the registry knows a built-in client."""
    flags = {}
    for flag in ("needs_masters", "reentrant"):
        value = getattr(cls, flag, False)
        if not isinstance(value, bool):
            raise PluginError(
                f"{class_path}.{flag} is {value!r}; expected: True or False (default False)"
            )
        flags[flag] = value
    declared = hasattr(cls, "OPTIONS")  # else: options passed through as written
    options = _options(getattr(cls, "OPTIONS", None), class_path) if declared else {}
    doc = (cls.__doc__ or "").strip().splitlines()
    return ClientInfo(
        name=class_path,
        description=doc[0] if doc else f"plug-in {class_path}",
        factory_path=class_path,
        options=options,
        needs_masters=flags["needs_masters"],
        reentrant=flags["reentrant"],
        extends=callable(getattr(cls, "extend", None)),  # workload.extend may use it
        free_options=not declared,
    )


def _options(raw: object, class_path: str) -> dict[str, tuple[str, str]]:
    expected = (
        "OPTIONS = {name: (kind, help)} with kind one of duration, int, float, bool, str, "
        "or choice:a|b|c, and help a string"
    )
    if not isinstance(raw, dict):
        raise PluginError(f"{class_path}.OPTIONS is {_a(raw)}; expected: {expected}")
    options: dict[str, tuple[str, str]] = {}
    for name, spec in raw.items():
        ok = (
            isinstance(name, str) and name.isidentifier()
            and isinstance(spec, tuple | list) and len(spec) == 2
            and option_kind_ok(spec[0]) and isinstance(spec[1], str)
        )  # fmt: skip
        if not ok:
            raise PluginError(
                f"{class_path}.OPTIONS[{name!r}] is {spec!r}; expected: {expected}"
            )
        options[name] = (spec[0], spec[1])
    return options
