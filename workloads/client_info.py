"""What the registry knows about one lock client, and the options clients share."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import reduce

from lockharness.workloads.protocol import ClientFactory


@dataclass(frozen=True)
class ClientInfo:
    name: str
    description: str
    factory_path: str  # "module:callable", imported only when a worker builds the client
    # option name -> ("duration" | "int" | "float" | "bool" | "str" | "choice:a|b", help text)
    options: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Spreads one lock over independent masters (the Redlock family): meaningless on a
    # replicated topology, whose nodes copy each other.
    needs_masters: bool = False
    reentrant: bool = False  # the same owner may acquire again while it holds (nesting)
    # A plug-in class that declares no OPTIONS: any JSON-like options, passed as written.
    free_options: bool = False
    extends: bool = False  # has extend(lease, ttl_ms): a holder may push its expiry out
    ttl_step_ms: int = 1  # the TTLs it can set are multiples of this (1000: whole seconds)
    # A program speaking docs/client-protocol.md, run as this argv (workloads.program);
    # empty for a Python class.
    command: tuple[str, ...] = ()

    def factory(self) -> ClientFactory:
        module, _, attr = self.factory_path.partition(":")
        return reduce(getattr, attr.split("."), importlib.import_module(module))  # "A.B" too


TIMEOUT_OPTION = ("duration", "socket timeout per node request (well below the TTL)")
NODE_OPTION = ("int", "which node (1-based) holds the lock")
DISCOVERY_OPTION = (
    "choice:static|sentinel|pointer",
    "how to find the instance: static (option node), or the master via sentinel or pointer",
)

# The kinds an option may take, a built-in's or a plug-in's; "choice:a|b|c" names its
# choices. The scenario loader reads each (harness/scenario.py _OPTION_KINDS).
OPTION_KINDS: tuple[str, ...] = ("duration", "int", "float", "bool", "str")


def option_kind_ok(kind: object) -> bool:
    if not isinstance(kind, str):
        return False
    name, colon, choices = kind.partition(":")
    if name == "choice" and colon:
        return all(choices.split("|"))
    return kind in OPTION_KINDS
