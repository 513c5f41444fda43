"""The `replicated` topology: one master, R replicas (asynchronous replication) and,
optionally, S Redis Sentinels that fail over — all real processes.

Proxies. Clients reach nodes and sentinels through their worker's own proxies
(`w{w}-n{k}`, `w{w}-s{j}`), as in the masters topology. Sentinels and replication share
one proxy per node, `shared-n{k}`: Sentinel tells replicas to follow the address the new
master *announces*, and learns replicas' addresses from what they announce, so a node has
exactly one address that sentinels and replicas use, and it must survive any number of
failovers. Every node announces its shared proxy (`replica-announce-ip/port`), so every
replication link and every sentinel link goes through Toxiproxy, whoever is master. The
price: a fault on `shared-n{k}` (lag, cut) hits that node's replication and its sentinel
links together. Sentinel-to-sentinel links are direct.

Clients ask Sentinel for the master as production code does (redis-py's Sentinel) and
translate the announced address to their own proxy for that node (`aliases`), the way a
NAT-ed client would. Without sentinels, clients follow a pointer key in the resource
(outside the fault domain) that the nemesis moves when it promotes a replica.

What the Compose backend's replicated topology does alike (master, promotion, convergence,
failovers) is cluster.replication.ReplicatedTopology; here, the processes.
"""

from __future__ import annotations

from typing import Any

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.ports import free_port_except
from lockharness.cluster.process import ServerProcess
from lockharness.cluster.redis_node import LocalRedisNode
from lockharness.cluster.replication import ReplicatedTopology, ReplicationConfig
from lockharness.cluster.sentinel import LocalSentinel
from lockharness.core.endpoints import Endpoint
from lockharness.core.run_dir import RunDir


class ReplicatedCluster(ReplicatedTopology[LocalRedisNode], LocalCluster):
    def __init__(self, config: ClusterConfig, replication: ReplicationConfig) -> None:
        super().__init__(config)  # nodes n1..nN: n1 starts as master, the rest replicate it
        self.replication = replication
        self._shared: dict[str, Endpoint] = {}
        self._aliases: dict[str, str] = {}
        self._sentinels: list[LocalSentinel] = []
        self._sentinel_proxies: dict[tuple[int, str], Endpoint] = {}

    def _shared_endpoints(self) -> dict[str, Endpoint]:
        return self._shared

    def _sentinel_proxy_endpoints(self) -> dict[tuple[int, str], Endpoint]:
        return self._sentinel_proxies

    # -- lifecycle -------------------------------------------------------------------------

    def _servers(self) -> list[ServerProcess]:
        return [*self._sentinels, *super()._servers()]

    def _held_ports(self) -> list[int | None]:
        return [
            *super()._held_ports(),
            *(sentinel.port for sentinel in self._sentinels),
            *(endpoint.port for endpoint in self._shared.values()),
            *(endpoint.port for endpoint in self._sentinel_proxies.values()),
        ]

    def start(self) -> None:
        try:
            self._toxiproxy.spawn()
            self._resource.spawn()
            self._toxiproxy_ready()
            self._resource.wait_ready()
            self._create_shared_proxies()
            primary = self._shared[self._nodes[0].name]
            for i, node in enumerate(self._nodes):
                node.extra_args = list(self._replication_args(i))
                node.spawn()
            for node in self._nodes:
                node.wait_ready()
            self._set_pointer(self._nodes[0].name)
            # Replicas online first: a sentinel lists them from its first INFO of the
            # master, and otherwise only at the next one, 10 s later.
            self.wait_converged()
            self._start_sentinels(primary)
            self._create_proxies()
            self._create_sentinel_proxies()
            self.wait_converged()
            self.wait_reachable()
            self._write_description()
        except BaseException:
            self.stop()
            raise

    def _create_shared_proxies(self) -> None:
        # The nodes' ports are chosen now and bound only when they start, so the kernel
        # could give one of them to a proxy (CI saw a proxy take its own node's port):
        # every port here is picked by us, none twice.
        taken: set[int] = set()
        for node in self._nodes:
            taken.add(node.reserve_port(taken))
        for node in self._nodes:
            listen = free_port_except(taken)
            taken.add(listen)
            info = self.toxiproxy.create_proxy(
                self.shared_proxy_name(node.name), node.endpoint, node.name, listen
            )
            self._shared[node.name] = info.listen
        self._alias_shared_proxies()

    def _start_sentinels(self, primary: Endpoint) -> None:
        r, base = self.replication, RunDir(self.config.base_dir)
        self._sentinels = [
            LocalSentinel(
                f"s{j}",
                self.config.redis_server,
                base.data(f"s{j}"),
                base.sentinel_log(f"s{j}"),
                r.master_name,
                primary,
                r.quorum,
                r.down_after_ms,
                r.failover_timeout_ms,
                self.ledger,
            )
            for j in range(1, r.sentinels + 1)
        ]
        for sentinel in self._sentinels:
            sentinel.spawn()
        for sentinel in self._sentinels:
            sentinel.wait_ready()

    def _create_sentinel_proxies(self) -> None:
        for worker in range(1, self.config.workers + 1):
            for sentinel in self._sentinels:
                name = f"w{worker}-{sentinel.name}"
                info = self.toxiproxy.create_proxy_on_held_port(
                    name, sentinel.endpoint, sentinel.name
                )
                self._sentinel_proxies[(worker, sentinel.name)] = info.listen

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **self._describe_replication()}
