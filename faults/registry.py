"""Every fault kind, collected from the classes that declare themselves (faults/base.py).

A built-in kind is a module of faults/kinds/: each concrete Fault subclass there with its
own ``kind`` is one, found by listing the folder, so adding a kind is adding its file.
A plug-in kind comes from outside the package (faults/plugin.py): a scenario's
``kind: module:Class``, or an entry point of the ``lockharness.faults`` group; it is
checked as a built-in is and added here when a scenario names it. Everything that lists
kinds (the scenario schema, the nemesis, the docs table, the timeline's colours) reads
``KINDS`` (the docs and messages ``BUILT_IN_KINDS``), so none can drift from another.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType

from lockharness.core.declared import declared_in
from lockharness.core.history import EXPOSURE_CATEGORIES
from lockharness.faults.base import Fault
from lockharness.faults.spec import FaultOptions

# Anything beyond the kinds the timeline draws (the nemesis's final heal, a kind unknown to
# this version in an old history).
_HEAL_STYLE = ("#5c8a5c", "healing")
_OTHER_COLOUR = "#666699"
# Imported by name, as workloads.registry imports its clients: the kinds import this folder.
PACKAGE = "lockharness.faults.kinds"
TARGET_KINDS = ("nodes", "workers")


class DeclarationError(ValueError):
    """A fault class that does not declare what a kind must; the message says what is
    wrong and what is allowed."""


def check_declaration(cls: object, name: str) -> None:
    """Refuse ``cls`` as fault kind ``name`` unless it declares all a kind must."""
    if not (inspect.isclass(cls) and issubclass(cls, Fault)):
        raise DeclarationError(
            f"{name} is not a subclass of lockharness.faults.base.Fault; expected: a class "
            "Fault(...) declaring Options, target_kind, exposure, summary and legend, with "
            "start(targets) and stop()"
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise DeclarationError(f"{name} does not define {missing}; expected: start and stop")
    exposure = getattr(cls, "exposure", None)
    if exposure not in EXPOSURE_CATEGORIES:
        said = "declares no exposure" if exposure is None else f"declares exposure {exposure!r}"
        raise DeclarationError(
            f"{name} {said}; allowed: {', '.join(EXPOSURE_CATEGORIES)} (docs/exposure.md)"
        )
    if not (inspect.isclass(cls.Options) and issubclass(cls.Options, FaultOptions)):
        raise DeclarationError(
            f"{name}.Options is {cls.Options!r}; expected: a subclass of "
            "lockharness.faults.spec.FaultOptions (a msgspec Struct)"
        )
    if cls.target_kind not in TARGET_KINDS:
        raise DeclarationError(
            f"{name}.target_kind is {cls.target_kind!r}; allowed: {', '.join(TARGET_KINDS)}"
        )
    for text in ("summary", "legend"):
        if not isinstance(getattr(cls, text, None), str):
            raise DeclarationError(f"{name} declares no {text}; expected: a string")


def _built_in() -> dict[str, type[Fault]]:
    """The kinds of faults/kinds/, by module name, then class order within a module."""
    found: dict[str, type[Fault]] = {}
    path = importlib.import_module(PACKAGE).__path__
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        module = importlib.import_module(f"{PACKAGE}.{info.name}")
        for cls in declared_in(module, Fault, "kind"):
            check_declaration(cls, cls.kind)  # a broken built-in fails every import
            found[cls.kind] = cls
    return found


KINDS: dict[str, type[Fault]] = _built_in()  # and the plug-ins, once a scenario names them
# The built-ins alone: what the docs' table and the messages' "allowed" lists name, the same
# whatever plug-in this process has loaded (a test session loads several).
BUILT_IN_KINDS: Mapping[str, type[Fault]] = MappingProxyType(dict(KINDS))
FAULT_KINDS: tuple[str, ...] = tuple(BUILT_IN_KINDS)


def register(name: str, cls: type[Fault]) -> type[Fault]:
    """Add plug-in kind ``name`` (checked already); the one already there, if any."""
    return KINDS.setdefault(name, cls)


def options_type(kind: str) -> type[FaultOptions]:
    return KINDS[kind].Options


def style(kind: str) -> tuple[str, str]:
    """(colour, legend) of a fault kind's band in the timeline; a neutral one otherwise."""
    if kind == "heal":
        return _HEAL_STYLE
    cls = KINDS.get(kind)
    return (cls.colour, cls.legend) if cls is not None else (_OTHER_COLOUR, kind)
