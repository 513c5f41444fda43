"""What both backends' clusters do alike (LocalCluster: processes, compose.cluster
.ComposeCluster: containers): nodes n1..nN and the resource, their clock controls, one
proxy per (worker, node), and waiting until every node answers through every proxy.

A backend keeps its nodes, resource and clocks in the attributes below and says where
each proxy listens (``_proxy_endpoints``); how it starts, stops and describes itself is
its own.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import redis

from lockharness.cluster.base import NodeHandle
from lockharness.cluster.ledger import ProcessLedger
from lockharness.core.clock import ClockControl
from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError
from lockharness.core.run_dir import RunDir

NodeT = TypeVar("NodeT", bound=NodeHandle)


class ProxiedCluster(ABC, Generic[NodeT]):
    ledger: ProcessLedger
    _nodes: list[NodeT]
    _by_name: dict[str, NodeT]
    _resource: NodeT  # outside the fault domain: no proxy, never faulted
    _clocks: dict[str, ClockControl]  # empty without the clock shim

    @abstractmethod
    def _proxy_endpoints(self) -> dict[tuple[int, str], Endpoint]:
        """(worker, node) -> where that worker's proxy to that node listens."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def describe(self) -> dict[str, Any]: ...

    @property
    def nodes(self) -> list[NodeT]:
        return self._nodes

    def node(self, name: str) -> NodeT:
        return self._by_name[name]

    def clock(self, name: str) -> ClockControl:
        if name not in self._clocks:
            raise ClusterError(f"node {name} runs without the clock shim (no clock faults planned)")
        return self._clocks[name]

    def reset_clocks(self) -> None:
        for control in self._clocks.values():
            control.reset()

    @property
    def resource(self) -> Endpoint:
        return self._resource.endpoint

    def proxy_name(self, worker: int, node: str) -> str:
        return f"w{worker}-{node}"  # both backends: faults address proxies by this name

    def control_endpoint(self, node: str) -> Endpoint:
        return self.node(node).endpoint

    def proxies_to(self, node: str) -> list[str]:
        """Every proxy whose upstream is ``node``: each worker's (the replicated topology
        adds the node's shared proxy)."""
        return [self.proxy_name(w, node) for w in range(1, self.worker_count + 1)]

    @property
    @abstractmethod
    def worker_count(self) -> int: ...

    def worker_endpoints(self, worker: int) -> list[Endpoint]:
        proxies = self._proxy_endpoints()
        return [proxies[(worker, node.name)] for node in self._nodes]

    def wait_reachable(self, timeout_s: float = 10.0) -> None:
        """Every node answers PING through every proxy, or ClusterError names those that don't."""
        deadline = time.monotonic() + timeout_s
        pending = dict(self._proxy_endpoints())
        while pending and time.monotonic() < deadline:
            for key, endpoint in list(pending.items()):
                if answers_ping(endpoint):
                    del pending[key]
            if pending:
                time.sleep(0.02)
        if pending:
            names = ", ".join(self.proxy_name(w, n) for w, n in sorted(pending))
            raise ClusterError(f"no PING answer through proxies {names} within {timeout_s:.0f}s")

    def wait_healthy(self) -> None:
        self.wait_reachable()

    def _describe_proxies(
        self, proxies: Mapping[tuple[int, str], Endpoint]
    ) -> dict[str, dict[str, Any]]:
        """(worker, server) -> proxy, as describe() lists them: by proxy name."""
        return {self.proxy_name(w, s): e.to_dict() for (w, s), e in sorted(proxies.items())}

    def _write_description(self) -> None:
        self.ledger.describe(self.describe())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def clock_controls(base: RunDir, names: list[str]) -> dict[str, ClockControl]:
    """One control file per node in the run directory's clock directory (the clock shim
    reads it)."""
    base.clock_dir.mkdir(parents=True, exist_ok=True)
    return {name: ClockControl(RunDir.node_clock(base.clock_dir, name)) for name in names}


def answers_ping(endpoint: Endpoint, timeout_s: float = 0.5) -> bool:
    client = single_try_client(endpoint, timeout_s)
    try:
        return bool(client.ping())
    except redis.exceptions.RedisError:  # refused, reset, or loading its data set
        return False
    finally:
        client.close()
