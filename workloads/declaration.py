"""What a lock-client class declares about itself, read into the registry's ClientInfo: one
reading for the built-in clients, the adapters, the reference programs and a user's plug-in.

A class declares, on itself (DeclaredClient gives each its default):

    docstring, first line    the description (`lockharness list --clients`, docs/clients.md)
    name = "redlock"         a built-in's name in scenarios: declaring it registers the class
                             (workloads/registry.py); a plug-in is named by its class path
    class Options(ClientOptions): ...   its options: a msgspec Struct, as a fault kind's
                             (types, defaults, bounds, a Meta description per field); the
                             constructor receives an instance
    needs_masters = True     one lock spread over independent masters
    reentrant = True         the Reentrant protocol (workloads/protocol.py)
    renews = True            renews its own leases while held (a watchdog): explore draws
                             holds past several TTLs for it
    ttl_step_ms = 1000       the TTLs it can set are multiples of this
    redis_py_only = True     it talks to Redis through redis-py only (declared on the class
                             itself: a subclass may send by other means): a call that
                             raised before any command left is then a certain failure
                             (lockharness.core.connect), not an outcome unknown
    library = Library("npm", "redlock", "5.0.0-beta.2", "clients/node-redlock")
                             the real library it runs (workloads/versions/): its registry,
                             package and pinned version; any other is NAME@VERSION
    unavailable()            why it cannot run here (a library or program missing), or None

Derived, not declared: ``extends``, from the Extending protocol (an ``extend`` method), so
a class cannot say it extends and lack the method, or the reverse. A plug-in class need not
subclass DeclaredClient: what it leaves out takes the same default either way, ``Options``
too: a class that declares no Options takes no options (ClientOptions, which has none), as
a scenario's unknown key is refused everywhere else. Only a program (workloads/programs.py)
takes its options as written, since nothing declares them before it runs.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from lockharness.workloads.client_info import ClientInfo, ClientOptions
from lockharness.workloads.protocol import Extending
from lockharness.workloads.versions.library import Library

_OPTIONS_EXPECTED = (
    "class Options(ClientOptions) (lockharness.workloads.client_info), its fields the "
    "options: types, defaults and a msgspec.Meta description"
)


class DeclarationError(ValueError):
    """A class declares something that cannot be meant; the message ends with what is
    expected, and names the class as ``label``."""


class DeclaredClient:
    """The base of a lock-client class: the declaration's defaults. Subclasses implement
    the LockClient protocol (workloads/protocol.py)."""

    name: ClassVar[str]  # only on a class of its own: a subclass is another client
    Options: ClassVar[type[ClientOptions]] = ClientOptions
    needs_masters: ClassVar[bool] = False
    reentrant: ClassVar[bool] = False
    renews: ClassVar[bool] = False
    redis_py_only: ClassVar[bool] = False
    ttl_step_ms: ClassVar[int] = 1
    library: ClassVar[Library | None] = None
    # Where listings put it, read from the class itself (lower first; then by module).
    rank: ClassVar[int] = 10

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this client cannot run here, or None."""
        return None

    @classmethod
    def launcher(cls) -> tuple[str, ...]:
        """A client that is a program (docs/client-protocol.md): its argv; else empty."""
        return ()


def declared_info(
    cls: type, name: str, factory_path: str, label: str, default_description: str | None
) -> ClientInfo:
    """``cls``'s declaration as a ClientInfo named ``name``, built by ``factory_path``.
    ``default_description``: when the class has no docstring (None: it must have one)."""
    if "OPTIONS" in dir(cls):
        raise DeclarationError(
            f"{label}.OPTIONS is the old form of options (a table of kinds); expected: "
            f"{_OPTIONS_EXPECTED}"
        )
    flags = {flag: _flag(cls, flag, label) for flag in ("needs_masters", "reentrant", "renews")}
    unavailable = getattr(cls, "unavailable", None)
    program = cls.launcher() if issubclass(cls, DeclaredClient) else ()
    summary = _description(cls, label, default_description)
    why_not = unavailable() if callable(unavailable) else None
    return ClientInfo(
        name=name,
        description=why_not or summary,  # one that cannot run here: what it needs
        summary=summary,
        factory_path=factory_path,
        options_type=_options(cls, label),
        needs_masters=flags["needs_masters"],
        reentrant=flags["reentrant"],
        renews=flags["renews"],
        extends=issubclass(cls, Extending),  # workload.extend may use it
        ttl_step_ms=_ttl_step(cls, label),
        command=program,
        unavailable=why_not,
        library=_library(cls, label),
    )


def declared_name(cls: type, label: str) -> str:
    """A built-in's name, declared on the class itself: a subclass that inherited its
    parent's would be listed twice under one name."""
    name = vars(cls).get("name")
    if not isinstance(name, str) or not name:
        raise DeclarationError(
            f"{label} declares no name of its own; expected: name = 'its-client-name'"
        )
    return name


def _description(cls: type, label: str, default: str | None) -> str:
    lines = (cls.__doc__ or "").strip().splitlines()  # __doc__ is not inherited
    if lines:
        return lines[0].strip()
    if default is None:
        raise DeclarationError(
            f"{label} has no docstring; expected: a docstring whose first line says what "
            "the client does"
        )
    return default


def _flag(cls: type, flag: str, label: str) -> bool:
    value = getattr(cls, flag, False)
    if not isinstance(value, bool):
        raise DeclarationError(
            f"{label}.{flag} is {value!r}; expected: True or False (default False)"
        )
    return value


def _library(cls: type, label: str) -> Library | None:
    value = getattr(cls, "library", None)
    if value is not None and not isinstance(value, Library):
        raise DeclarationError(
            f"{label}.library is {value!r}; expected: None, or "
            "Library(registry, package, default_version) (lockharness.workloads.versions)"
        )
    return value


def _ttl_step(cls: type, label: str) -> int:
    value = getattr(cls, "ttl_step_ms", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeclarationError(
            f"{label}.ttl_step_ms is {value!r}; expected: a whole number of milliseconds, "
            "1 or more (default 1)"
        )
    return value


def _options(cls: type, label: str) -> type[ClientOptions]:
    options = getattr(cls, "Options", ClientOptions)  # DeclaredClient's default: none
    if not (isinstance(options, type) and issubclass(options, ClientOptions)):
        kind = type(options).__name__ if not isinstance(options, type) else "class"
        shown = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        if isinstance(options, type) and issubclass(options, msgspec.Struct):
            shown = "a Struct that is not a ClientOptions"
        raise DeclarationError(f"{label}.Options is {shown}; expected: {_OPTIONS_EXPECTED}")
    return options


def redis_py_only(cls: type) -> bool:
    """Whether ``cls`` itself declares that it talks to Redis through redis-py only."""
    return vars(cls).get("redis_py_only", False) is True
