"""What any cluster backend provides (local processes now, Docker Compose later)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from harness.cluster.toxiproxy import ToxiproxyAPI
from workloads.endpoints import Endpoint


class NodeHandle(Protocol):
    """One redis-server of the fault domain."""

    name: str

    @property
    def endpoint(self) -> Endpoint:
        """Direct address (bypasses Toxiproxy): for the harness's own checks, never clients."""
        ...

    def running(self) -> bool: ...
    def kill(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def start(self, timeout_s: float = 10.0) -> None: ...


class Cluster(Protocol):
    """Nodes, a resource outside the fault domain, and one proxy per (worker, node)."""

    @property
    def nodes(self) -> Sequence[NodeHandle]: ...

    @property
    def resource(self) -> Endpoint: ...

    @property
    def toxiproxy(self) -> ToxiproxyAPI: ...

    def proxy_name(self, worker: int, node: str) -> str: ...

    def worker_endpoints(self, worker: int) -> list[Endpoint]:
        """The nodes as worker ``worker`` (1-based) reaches them: through its own proxies."""
        ...

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def describe(self) -> dict[str, Any]:
        """Endpoints and pids, JSON-ready, for cluster.json and `cluster up`."""
        ...
