"""What the registry knows about one lock client, and the options clients share."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from workloads.protocol import ClientFactory


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

    def factory(self) -> ClientFactory:
        module, _, attr = self.factory_path.partition(":")
        return getattr(importlib.import_module(module), attr)


TIMEOUT_OPTION = ("duration", "socket timeout per node request (well below the TTL)")
NODE_OPTION = ("int", "which node (1-based) holds the lock")
DISCOVERY_OPTION = (
    "choice:static|sentinel|pointer",
    "how to find the instance: static (option node), or the master via sentinel or pointer",
)
