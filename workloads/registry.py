"""The lock clients a scenario can name, with the options each accepts."""

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

    def factory(self) -> ClientFactory:
        module, _, attr = self.factory_path.partition(":")
        return getattr(importlib.import_module(module), attr)


_TIMEOUT = ("duration", "socket timeout per node request (well below the TTL)")
_DISCOVERY = (
    "choice:static|sentinel|pointer",
    "how to find the instance: static (option node), or the master via sentinel or pointer",
)

CLIENTS: dict[str, ClientInfo] = {
    info.name: info
    for info in (
        ClientInfo(
            "single",
            "SET key token NX PX ttl on one node; release by Lua compare-and-delete",
            "workloads.single:SingleInstanceLock",
            {
                "timeout": _TIMEOUT,
                "node": ("int", "which node (1-based) holds the lock (discovery: static)"),
                "discovery": _DISCOVERY,
                "wait_replicas": ("int", "WAIT for this many replicas after acquiring (0: no)"),
                "wait_timeout": ("duration", "how long WAIT may take (default 100ms)"),
            },
        ),
        ClientInfo(
            "redlock",
            "Redlock: SET NX PX on N nodes concurrently, majority + validity, release on all",
            "workloads.redlock:Redlock",
            {"timeout": _TIMEOUT},
        ),
        ClientInfo(
            "unsafe-del",
            "BROKEN on purpose: SET NX PX, release by plain DEL without a token check",
            "workloads.unsafe_del:UnsafeDelLock",
            {"timeout": _TIMEOUT, "node": ("int", "which node (1-based) holds the lock")},
        ),
    )
}
