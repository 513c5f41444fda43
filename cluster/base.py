"""What a cluster backend provides (local processes, Docker Compose), as Jepsen's db does:
one small protocol every backend implements, and opt-in protocols for what only some
topologies can do (Jepsen's Kill/Pause/Primary), asked for with isinstance.

The nemesis works only through these protocols, so a backend that implements them gets
every fault kind its topology allows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from lockharness.cluster.aof import AofTruncation
from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.toxiproxy import ToxiproxyAPI
from lockharness.core.clock import ClockControl
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint


class NodeHandle(Protocol):
    """One redis-server of the fault domain."""

    name: str

    @property
    def endpoint(self) -> Endpoint:
        """Direct address (bypasses Toxiproxy): for the harness's own checks, never clients."""
        ...

    def running(self) -> bool: ...
    def kill(self, power_loss: bool = False) -> AofTruncation | None:
        """SIGKILL; with power_loss, also drop the AOF's un-fsynced last second."""
        ...

    def restart(self, timeout_s: float = 10.0) -> None:
        """Start again on the same port and data dir; return once it answers PING."""
        ...

    def pause(self) -> None: ...
    def resume(self) -> None: ...


class Cluster(Protocol):
    """Nodes, a resource outside the fault domain, and one proxy per (worker, node)."""

    ledger: ProcessLedger  # every process the run starts (the workers too)

    @property
    def nodes(self) -> Sequence[NodeHandle]: ...

    def node(self, name: str) -> NodeHandle: ...

    def clock(self, name: str) -> ClockControl:
        """The node's wall-clock control (clock faults)."""
        ...

    def reset_clocks(self) -> None: ...

    @property
    def resource(self) -> Endpoint: ...

    @property
    def toxiproxy(self) -> ToxiproxyAPI: ...

    @property
    def worker_count(self) -> int:
        """How many workers the proxies were made for."""
        ...

    def proxy_name(self, worker: int, node: str) -> str: ...

    def control_endpoint(self, node: str) -> Endpoint:
        """Where the harness itself reaches ``node`` (its node record's MONITOR): the
        node's own port, or a control link (cluster.control_links)."""
        ...

    def proxies_to(self, node: str) -> list[str]:
        """Every proxy that leads to ``node``: disabled while it is down, so that they
        refuse connections as a dead process's port does (faults.process.Kill)."""
        ...

    def worker_endpoints(self, worker: int) -> list[Endpoint]:
        """The nodes as worker ``worker`` (1-based) reaches them: through its own proxies."""
        ...

    def wait_reachable(self, timeout_s: float = 10.0) -> None:
        """Every node answers PING through every proxy, or ClusterError."""
        ...

    def wait_healthy(self) -> None:
        """After healing: reachable everywhere, and (replicated) one master with every
        replica online behind it; or ClusterError."""
        ...

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def describe(self) -> dict[str, Any]:
        """Endpoints and pids, JSON-ready, for cluster.json and `cluster up`."""
        ...


@runtime_checkable
class Replicated(Protocol):
    """Opt-in: a topology with a master and replicas (cluster.replicated), whose
    faults are promotion, the shared replication links and master/replica targets."""

    def current_master(self) -> str | None:
        """The node the topology calls master now (None while it has none)."""
        ...

    def shared_proxy_name(self, node: str) -> str:
        """The proxy carrying the node's replication and sentinel links (replicated)."""
        ...

    def discovery(self, worker: int) -> Discovery:
        """How worker ``worker``'s clients find the master (through its own proxies)."""
        ...

    def watch_failovers(
        self, on_switch: Callable[[str, str, int | None], None]
    ) -> Callable[[], None]:
        """Call ``on_switch(old, new, began_ns)`` for every failover Sentinel announces;
        returns what stops watching."""
        ...

    def promote(
        self, node: str, demote_old: bool, promoted: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """Make a replica the master and re-point clients (replicated, without Sentinel);
        ``promoted(node)`` is called once it is master, before any client is pointed at it."""
        ...
