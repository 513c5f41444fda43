"""What the registry knows about one lock client, and the option types clients share."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from msgspec import Meta

from lockharness.core.durations import duration_type
from lockharness.core.options import DeclaredOptions
from lockharness.workloads.protocol import ClientFactory
from lockharness.workloads.versions.library import Library

if TYPE_CHECKING:
    Timeout = int  # a Duration at run time (an int of nanoseconds); see faults/spec.py
else:
    Timeout = duration_type("Timeout", positive=True)


class ClientOptions(DeclaredOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A lock client's options: each client declares a subclass as ``Options`` (none: this
    class). A duration is an int of nanoseconds, written "250ms" in a scenario."""


# Option types several clients declare (each field's default is the client's own).
SocketTimeout = Annotated[
    Timeout, Meta(description="socket timeout per node request (well below the TTL)")
]
NodeNumber = Annotated[int, Meta(description="which node (1-based) holds the lock")]
DiscoveryMode = Annotated[
    Literal["static", "sentinel", "pointer"],
    Meta(
        description="how to find the instance: static (option node), or the master via "
        "sentinel or pointer"
    ),
]
_FINITE = 1.7976931348623157e308  # bounds a float option: no nan, no inf
Number = Annotated[float, Meta(ge=-_FINITE, le=_FINITE, extra={"allowed": "a number"})]


@dataclass(frozen=True)
class ClientInfo:
    name: str
    description: str  # what it does, or, when it cannot run here, what it needs
    factory_path: str  # "module:Class", imported only when a worker builds the client
    # The client's declared Options (a class that declares none: ClientOptions, no options);
    # None: a program's, any plain data, passed to it as written (a dict).
    options_type: type[ClientOptions] | None = ClientOptions
    # Spreads one lock over independent masters (the Redlock family): meaningless on a
    # replicated topology, whose nodes copy each other.
    needs_masters: bool = False
    reentrant: bool = False  # the same owner may acquire again while it holds (nesting)
    extends: bool = False  # has extend(lease, ttl_ms): a holder may push its expiry out
    # Renews its own leases while they are held (a watchdog): holds may outlast the TTL.
    renews: bool = False
    ttl_step_ms: int = 1  # the TTLs it can set are multiples of this (1000: whole seconds)
    # A program speaking docs/client-protocol.md, run as this argv (workloads.program);
    # empty for a Python class.
    command: tuple[str, ...] = ()
    # Why it cannot run here (an optional library not installed, a launcher not built).
    unavailable: str | None = None
    summary: str = ""  # what it does (its docstring's first line), wherever it runs
    # The real library it runs, whose other released versions NAME@VERSION builds.
    library: Library | None = None

    @property
    def free_options(self) -> bool:
        return self.options_type is None

    @property
    def option_names(self) -> tuple[str, ...]:
        if self.options_type is None:
            return ()
        return tuple(f.encode_name for f in msgspec.structs.fields(self.options_type))

    def factory(self) -> ClientFactory:
        return imported(self.factory_path)


def imported(class_path: str) -> Any:
    """What "module:Name" (or "module:Outer.Inner") names, its module imported now."""
    module, _, attr = class_path.partition(":")
    return reduce(getattr, attr.split("."), importlib.import_module(module))
