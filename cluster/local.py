"""The local-process backend: redis-servers and toxiproxy-server as children of the harness."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockharness.cluster.control_links import TOXIPROXY_API_LINK, ControlLinks
from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.ports import release_ports
from lockharness.cluster.process import ServerProcess, pid_alive
from lockharness.cluster.proxied import ProxiedCluster, clock_controls
from lockharness.cluster.redis_node import LocalRedisNode
from lockharness.cluster.toxiproxy import ToxiproxyAPI, ToxiproxyServer
from lockharness.core.clock import shim_env, shim_library
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError
from lockharness.core.run_dir import RunDir

log = logging.getLogger("lockharness.cluster")


@dataclass(frozen=True)
class ClusterConfig:
    redis_server: Path
    toxiproxy_server: Path
    base_dir: Path  # data dirs and logs go here (the run directory)
    nodes: int = 5
    workers: int = 4
    persistence: str = "none"
    clock_shim: bool = False  # nodes run under the clock shim, so clock faults can move them
    control_links: bool = False  # the harness's own links behind a second Toxiproxy


class LocalCluster(ProxiedCluster[LocalRedisNode]):
    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        base = RunDir(config.base_dir)
        self.ledger = ProcessLedger(base.ledger)  # every process, as it starts
        names = [f"n{i}" for i in range(1, config.nodes + 1)]
        self._clocks = clock_controls(base, names) if config.clock_shim else {}
        library = shim_library() if config.clock_shim else None
        self._nodes = [
            LocalRedisNode(
                name,
                config.redis_server,
                base.data(name),
                base.redis_log(name),
                config.persistence,
                env=shim_env(library, self._clocks[name].path) if library else None,
                ledger=self.ledger,
            )
            for name in names
        ]
        self._by_name = {node.name: node for node in self._nodes}
        # The resource sits outside the fault domain: no proxy, never faulted, no persistence.
        self._resource = LocalRedisNode(
            "resource",
            config.redis_server,
            base.data("resource"),
            base.redis_log("resource"),
            ledger=self.ledger,
        )
        self._toxiproxy = ToxiproxyServer(config.toxiproxy_server, base.toxiproxy_log, self.ledger)
        self._proxies: dict[tuple[int, str], Endpoint] = {}
        self._links = (
            ControlLinks(config.toxiproxy_server, config.base_dir, self.ledger)
            if config.control_links
            else None
        )
        self._api: ToxiproxyAPI | None = None  # through the control link, when there is one
        self._control: dict[str, Endpoint] = {}  # the nodes' control links, when there are

    @property
    def toxiproxy(self) -> ToxiproxyAPI:
        return self._api or self._toxiproxy.api

    def _toxiproxy_ready(self) -> None:
        """Toxiproxy answers; with control links, its API is reached through one."""
        self._toxiproxy.wait_ready()
        if self._links is None:
            return
        self._links.server.spawn()
        self._links.server.wait_ready()
        assert self._toxiproxy.port is not None  # it answered on it
        api = Endpoint("toxiproxy", "127.0.0.1", self._toxiproxy.port)
        link = self._links.route(TOXIPROXY_API_LINK, api)
        self._api = ToxiproxyAPI(link.host, link.port)

    def control_endpoint(self, node: str) -> Endpoint:
        if self._links is None:
            return self.node(node).endpoint
        if node not in self._control:  # made when first asked: the node is up by then
            self._control[node] = self._links.route(f"control-{node}", self.node(node).endpoint)
        return self._control[node]

    @property
    def worker_count(self) -> int:
        return self.config.workers

    def _proxy_endpoints(self) -> dict[tuple[int, str], Endpoint]:
        return self._proxies

    def start(self) -> None:
        """Start everything, or stop what did start and raise."""
        try:
            servers = [*self._nodes, self._resource]
            for server in servers:  # spawn all first: they boot in parallel
                server.spawn()
            self._toxiproxy.spawn()
            for server in servers:
                server.wait_ready()
            self._toxiproxy_ready()
            self._create_proxies()
            self.wait_reachable()
            self._write_description()
        except BaseException:
            self.stop()
            raise

    def _create_proxies(self) -> None:
        api = self.toxiproxy
        for worker in range(1, self.config.workers + 1):
            for node in self._nodes:
                name = self.proxy_name(worker, node.name)
                info = api.create_proxy_on_held_port(name, node.endpoint, node.name)
                self._proxies[(worker, node.name)] = info.listen

    def stop(self) -> None:
        """Stop everything that was started; safe to call twice and after a failed start."""
        errors: list[str] = []
        servers = self._servers()
        for server in servers:  # signal all first: they shut down in parallel
            server.terminate()
        for server in servers:
            try:
                server.wait_or_kill()
            except Exception as e:  # keep stopping the others
                errors.append(f"{type(server).__name__}: {e}")
        for control in self._clocks.values():
            control.close()
        leftovers = [pid for pid in self.pids() if pid_alive(pid)]
        if not leftovers:  # a process still alive may still listen: keep its port ours
            release_ports(self._held_ports())
        if errors or leftovers:
            raise ClusterError(f"teardown incomplete: {errors or ''} still alive: {leftovers}")
        if not self.ledger.running():  # workers too: the runner stops them first
            self.ledger.stopped()
        log.info("cluster stopped")

    def _servers(self) -> list[ServerProcess]:
        """Every process this cluster owns, in the order they are stopped."""
        links = [] if self._links is None else [self._links.server]
        return [self._toxiproxy, *self._nodes, self._resource, *links]

    def _held_ports(self) -> list[int | None]:
        """Every port this cluster chose (cluster.ports holds each until teardown)."""
        return [
            self._toxiproxy.port,
            *(server.port for server in (*self._nodes, self._resource)),
            *(endpoint.port for endpoint in self._proxies.values()),
            *([] if self._links is None else [self._links.server.port, *self._links.ports]),
        ]

    def pids(self) -> list[int]:
        return [server.pid for server in self._servers() if server.pid is not None]

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "local",
            "toxiproxy_api": f"127.0.0.1:{self._toxiproxy.port}",
            "resource": _address(self._resource),
            "nodes": [
                {**_address(node), "pid": node.pid, "persistence": node.persistence}
                for node in self._nodes
            ],
            "proxies": self._describe_proxies(self._proxies),
            "pids": self.pids(),
        }


def _address(node: LocalRedisNode) -> dict[str, Any]:
    """Where a node listens; port None when a start was cut short before it had one."""
    if node.port is None:
        return {"name": node.name, "host": "127.0.0.1", "port": None}
    return node.endpoint.to_dict()
