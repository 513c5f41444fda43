"""How a client on the replicated topology finds the master.

- Sentinel, as production code does: redis-py's Sentinel asks the sentinels (through this
  worker's proxies) and we translate the master's announced address to this worker's
  proxy for that node, the way a client behind NAT would.
- A pointer: a key in the resource (outside the fault domain) naming the master, which
  the nemesis moves when it promotes a replica itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint

POINTER_KEY = "lockharness:master"


@dataclass(frozen=True)
class Discovery:
    master_name: str
    sentinels: list[Endpoint] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # "host:port" announced -> node
    pointer: Endpoint | None = None
    ports: dict[int, str] = field(default_factory=dict)  # each node's own port -> node

    def to_dict(self) -> dict[str, object]:
        return {
            "master_name": self.master_name,
            "sentinels": [s.to_dict() for s in self.sentinels],
            "aliases": self.aliases,
            "pointer": self.pointer.to_dict() if self.pointer else None,
            "ports": {str(port): name for port, name in self.ports.items()},
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Discovery:
        pointer = raw.get("pointer")
        return cls(
            master_name=str(raw["master_name"]),
            sentinels=[Endpoint.from_dict(s) for s in raw.get("sentinels", [])],
            aliases=dict(raw.get("aliases", {})),
            pointer=Endpoint.from_dict(pointer) if pointer else None,
            ports={int(p): str(n) for p, n in dict(raw.get("ports", {})).items()},
        )


class MasterFinder(Protocol):
    """Where a single-instance client sends its commands."""

    def master(self) -> tuple[str, redis.Redis]:
        """The node to acquire on now, and a client for it."""
        ...

    def for_release(self, node: str) -> redis.Redis:
        """The client to release a lease granted by ``node`` with."""
        ...

    def close(self) -> None: ...


class StaticMaster:
    """One fixed node (the masters topology)."""

    def __init__(self, node: Endpoint, timeout_s: float) -> None:
        self.node = node
        self.redis = single_try_client(node, timeout_s)

    def master(self) -> tuple[str, redis.Redis]:
        return self.node.name, self.redis

    def for_release(self, node: str) -> redis.Redis:
        return self.redis

    def close(self) -> None:
        self.redis.close()


class _TranslatingSentinel(Sentinel):
    """redis-py's Sentinel, answering with this worker's proxy for the master it names."""

    def __init__(self, discovery: Discovery, nodes: dict[str, Endpoint], timeout_s: float):
        kwargs = _connection_kwargs(timeout_s)
        super().__init__(
            [(s.host, s.port) for s in discovery.sentinels], sentinel_kwargs=kwargs, **kwargs
        )
        self.aliases, self.nodes = discovery.aliases, nodes

    def discover_master(self, service_name: str) -> tuple[str, int]:
        host, port = super().discover_master(service_name)
        name = self.aliases.get(f"{host}:{port}")
        if name is None:
            raise redis.exceptions.ConnectionError(f"sentinel named unknown master {host}:{port}")
        return self.nodes[name].host, self.nodes[name].port


class SentinelMaster:
    """As production code does it: `Sentinel.master_for`, which asks the sentinels for the
    master whenever it (re)connects, and keeps a connection until it fails."""

    def __init__(self, discovery: Discovery, nodes: dict[str, Endpoint], timeout_s: float):
        self.sentinel = _TranslatingSentinel(discovery, nodes, timeout_s)
        kwargs = _connection_kwargs(timeout_s)
        self.redis = self.sentinel.master_for(discovery.master_name, **kwargs)
        self.ports = discovery.ports

    def master(self) -> tuple[str, redis.Redis]:
        # Which node is behind this connection? The one last discovered need not be (the
        # pool keeps a working connection), so ask the server itself: its own port. This
        # also connects, asking the sentinels, when there is no connection.
        port = int(self.redis.config_get("port")["port"])
        return self.ports.get(port, f"port {port}"), self.redis

    def for_release(self, node: str) -> redis.Redis:
        return self.redis  # like redis-py's Lock: the same client, whichever master it has

    def close(self) -> None:
        self.redis.close()
        for sentinel in self.sentinel.sentinels:
            sentinel.close()


class PointerMaster:
    """Reads the master's name from the pointer before each acquire (a config service)."""

    def __init__(self, discovery: Discovery, nodes: dict[str, Endpoint], timeout_s: float):
        if discovery.pointer is None:
            raise ValueError("pointer discovery needs the pointer's endpoint")
        self.pointer = single_try_client(discovery.pointer, 5.0, decode_responses=True)
        self.clients = {name: single_try_client(e, timeout_s) for name, e in nodes.items()}

    def master(self) -> tuple[str, redis.Redis]:
        name = self.pointer.get(POINTER_KEY)
        if name not in self.clients:
            raise redis.exceptions.ConnectionError(f"the pointer names no node: {name!r}")
        return name, self.clients[name]

    def for_release(self, node: str) -> redis.Redis:
        return self.clients[node]  # where the lease was granted

    def close(self) -> None:
        self.pointer.close()
        for client in self.clients.values():
            client.close()


def _connection_kwargs(timeout_s: float) -> dict[str, Any]:
    # One attempt per command, no handshake round trips (see core/connect.py).
    return {
        "socket_timeout": timeout_s,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(NoBackoff(), 0),
        "protocol": 2,
        "driver_info": None,
    }


def master_finder(
    mode: str, nodes: Sequence[Endpoint], node: int, discovery: Discovery | None, timeout_s: float
) -> MasterFinder:
    """``mode``: static (node ``node``, 1-based), sentinel, or pointer."""
    if mode == "static":
        return StaticMaster(nodes[node - 1], timeout_s)
    if discovery is None:
        raise ValueError(f"discovery {mode!r} needs the replicated topology")
    by_name = {e.name: e for e in nodes}
    if mode == "sentinel":
        return SentinelMaster(discovery, by_name, timeout_s)
    return PointerMaster(discovery, by_name, timeout_s)
