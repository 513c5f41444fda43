"""The `replicated` topology on containers: ReplicatedCluster's behaviour and interface
(cluster/replicated.py), one container per server. What the two backends do alike
is cluster.replication.ReplicatedTopology; the bring-up here is the containers'.

Nodes n1..nN (n1 starts as master, the rest replicate it), the resource, Toxiproxy and
S sentinels s1..sS, on the run's network. As in the local backend:

- Every node announces its shared proxy `shared-n{k}` (`toxiproxy:<port>`, the service
  name on the run's network), so every replication link and every sentinel link goes
  through Toxiproxy, whoever is master. Sentinel-to-sentinel links are direct.
- Workers reach nodes and sentinels only through their own proxies (`w{w}-n{k}`,
  `w{w}-s{j}`), published on 127.0.0.1; Sentinel's answers (`toxiproxy:<port>`) are
  translated to the worker's proxy for that node through `aliases`.
- Without sentinels, clients follow the pointer key in the resource.

Each node listens inside its container on its published port, not on 6379: clients name
the node behind a connection by `CONFIG GET port` (core.discovery.SentinelMaster).
Sentinels start only once every replica is online behind n1 (a sentinel lists replicas
from its first INFO of the master, and otherwise only 10 s later), so the project comes
up in two steps, each retried with new ports when one was taken meanwhile.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import docker.errors

from lockharness.cluster.ports import free_port_except, release_ports
from lockharness.cluster.replication import ReplicatedTopology, ReplicationConfig
from lockharness.compose import engine
from lockharness.compose.cleanup import remove_containers
from lockharness.compose.cluster import ComposeCluster, ComposeConfig, _container_alive
from lockharness.compose.node import ContainerNode
from lockharness.compose.project import (
    SENTINEL_PORT,
    NodePlan,
    ProjectPlan,
    SentinelPlan,
    container_name,
)
from lockharness.compose.project import write as write_project
from lockharness.compose.proxies import ProxyPlan, populate, wait_api
from lockharness.compose.sentinel import ContainerSentinel, sentinel_config
from lockharness.core.clock import shim_library
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError
from lockharness.core.run_dir import RunDir

log = logging.getLogger("lockharness.cluster")

TOXIPROXY_HOST = "toxiproxy"  # Toxiproxy's service name: how containers reach the proxies
_UP_ATTEMPTS = 3


class ComposeReplicatedCluster(ReplicatedTopology[ContainerNode], ComposeCluster):
    def __init__(self, config: ComposeConfig, replication: ReplicationConfig) -> None:
        # Before the base's __init__: it chooses the ports, ours included (_choose_ports).
        self.replication = replication
        run_dir = config.base_dir.resolve()
        self._sentinels: list[ContainerSentinel] = [
            ContainerSentinel(
                f"s{j}", container_name(run_dir, f"s{j}"), 0, RunDir(run_dir).data(f"s{j}")
            )
            for j in range(1, replication.sentinels + 1)
        ]
        self._sentinels_up = False
        self._shared: dict[str, ProxyPlan] = {}
        self._sentinel_proxies: dict[tuple[int, str], ProxyPlan] = {}
        self._aliases: dict[str, str] = {}
        super().__init__(config)

    def _choose_ports(self) -> None:
        """The base's ports (nodes, resource, API, worker proxies), then ours: shared and
        sentinel proxies (inside Toxiproxy's container only, but never one of the
        published ports there) and the sentinels' published ports."""
        super()._choose_ports()
        # Each node listens on its host port inside too: its proxies dial that port.
        self._proxies = {
            key: ProxyPlan(p.name, p.listen_port, f"{key[1]}:{self.node(key[1]).host_port}")
            for key, p in self._proxies.items()
        }
        taken = self._host_ports()
        for node in self._nodes:
            port = free_port_except(taken)
            taken.append(port)
            self._shared[node.name] = ProxyPlan(
                self.shared_proxy_name(node.name), port, f"{node.name}:{node.host_port}"
            )
        self._alias_shared_proxies()
        self._sentinel_proxies = {}
        for worker in range(1, self.config.workers + 1):
            for sentinel in self._sentinels:
                port = free_port_except(taken)
                taken.append(port)
                upstream = f"{sentinel.name}:{SENTINEL_PORT}"
                name = f"w{worker}-{sentinel.name}"
                self._sentinel_proxies[(worker, sentinel.name)] = ProxyPlan(name, port, upstream)
        self._choose_sentinel_ports()

    def _choose_sentinel_ports(self) -> None:
        """New published ports for the sentinels alone: all that their `up` binds."""
        release_ports(sentinel.host_port for sentinel in self._sentinels)  # a retry's
        taken = self._host_ports()
        for sentinel in self._sentinels:
            sentinel.host_port = free_port_except(taken)
            taken.append(sentinel.host_port)

    def _host_ports(self) -> list[int]:
        return [
            *super()._host_ports(),
            *(p.listen_port for p in self._shared.values()),
            *(p.listen_port for p in self._sentinel_proxies.values()),
        ]

    def _held_ports(self) -> list[int]:
        return [*super()._held_ports(), *(sentinel.host_port for sentinel in self._sentinels)]

    # -- what clients and the nemesis see ------------------------------------------------

    @property
    def sentinels(self) -> list[ContainerSentinel]:
        return self._sentinels if self._sentinels_up else []

    def _shared_endpoints(self) -> dict[str, Endpoint]:
        return {n: Endpoint(n, TOXIPROXY_HOST, p.listen_port) for n, p in self._shared.items()}

    def _sentinel_proxy_endpoints(self) -> dict[tuple[int, str], Endpoint]:
        return {
            key: Endpoint(key[1], "127.0.0.1", p.listen_port)
            for key, p in self._sentinel_proxies.items()
        }

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """The fault domain first, replicas online behind n1, then the sentinels; or take
        down what did come up and raise."""
        redis_image, toxiproxy_image = self.preflight()
        images = (redis_image, toxiproxy_image)
        try:
            self._start_reaper()
            servers = [*(n.name for n in self._nodes), self._resource.name, TOXIPROXY_HOST]
            self._up_services(
                images, servers, self._choose_ports, self._remove_all, then=self._populate
            )
            for server in (*self._nodes, self._resource):
                server.wait_ready()
            self._set_pointer(self._nodes[0].name)
            self.wait_converged()  # no sentinels yet: n1 (the pointer) and its replicas
            if self._sentinels:
                names = [s.name for s in self._sentinels]
                self._up_services(
                    images, names, self._choose_sentinel_ports, self._remove_sentinels
                )
                for sentinel in self._sentinels:
                    sentinel.wait_ready()
                self._sentinels_up = True
                self.wait_converged()
            self.wait_reachable()
            self._confirm_reaper()
            self._write_description()
        except BaseException:
            self.stop()
            raise

    def _up_services(
        self,
        images: tuple[str, str],
        services: list[str],
        new_ports: Callable[[], None],
        remove: Callable[[], None],
        then: Callable[[], None] = lambda: None,
    ) -> None:
        """compose.yaml, `compose up` of ``services``, then ``then`` (Toxiproxy's proxies,
        which bind their ports only then); on a port taken since we chose it (this machine
        is shared), remove what half-started and try with new ports."""
        for attempt in range(1, _UP_ATTEMPTS + 1):
            self._write_project(*images)
            self._brought_up = True  # from here on, teardown has something to remove
            self._write_description()  # before `up`: gc can find a half-started run
            try:
                up = ["up", "-d", "--no-build", *services]
                engine.run_compose(self.compose_file, self.project, up)
                then()
                return
            except ClusterError as e:
                if "address already in use" not in str(e) or attempt == _UP_ATTEMPTS:
                    raise
                log.warning(
                    "compose up %s: a chosen port was taken; new ports (%s)", " ".join(services), e
                )
                remove()
                new_ports()

    def _populate(self) -> None:
        toxiproxy = container_name(self.run_dir, TOXIPROXY_HOST)
        wait_api(self._api_port, lambda: _container_alive(toxiproxy))
        proxies = [
            *self._shared.values(),
            *self._proxies.values(),
            *self._sentinel_proxies.values(),
        ]
        populate(self._api_port, proxies)  # sentinel proxies dial nothing until they start

    def _remove_all(self) -> None:
        remove_containers(self.run_dir)

    def _remove_sentinels(self) -> None:
        """Only the sentinels: the fault domain is up and stays up."""
        for sentinel in self._sentinels:
            try:
                engine.client().containers.get(sentinel.container_name).remove(force=True)
            except docker.errors.NotFound:  # gone meanwhile
                pass
            except engine.ENGINE_ERRORS as e:  # the start is tried again, on fresh ports
                raise ClusterError(f"sentinel {sentinel.container_name}: {e!r}") from e

    def _write_project(self, redis_image: str, toxiproxy_image: str) -> None:
        for node in (*self._nodes, self._resource):
            node.data_dir.mkdir(parents=True, exist_ok=True)  # before Docker makes it as root
        r = self.replication
        first = (TOXIPROXY_HOST, self._shared[self._nodes[0].name].listen_port)
        config = sentinel_config(
            r.master_name, first, r.quorum, r.down_after_ms, r.failover_timeout_ms
        )
        for sentinel in self._sentinels:
            sentinel.write_config(config)
        shim = self.config.clock_shim
        write_project(
            ProjectPlan(
                run_dir=self.run_dir,
                redis_image=redis_image,
                toxiproxy_image=toxiproxy_image,
                nodes=tuple(
                    NodePlan(
                        n.name,
                        n.host_port,
                        n.data_dir,
                        n.persistence,
                        shim,
                        port=n.host_port,
                        extra_args=self._replication_args(i),
                    )
                    for i, n in enumerate(self._nodes)
                ),
                resource=NodePlan("resource", self._resource.host_port, self._resource.data_dir),
                api_port=self._api_port,
                proxy_ports=tuple(
                    p.listen_port
                    for p in (*self._proxies.values(), *self._sentinel_proxies.values())
                ),
                user=f"{os.getuid()}:{os.getgid()}",
                shim_library=shim_library() if shim else None,
                clock_dir=self.files.clock_dir if shim else None,
                sentinels=tuple(
                    SentinelPlan(s.name, s.host_port, s.directory) for s in self._sentinels
                ),
            )
        )

    def _save_logs(self) -> None:
        super()._save_logs()
        for sentinel in self._sentinels:  # as LocalSentinel's log files are named
            text = sentinel.log_tail(lines=10_000)
            self.files.sentinel_log(sentinel.name).write_text(text)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **self._describe_replication()}
