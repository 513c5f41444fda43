"""The `replicated` topology on containers: ReplicatedCluster's behaviour and interface
(harness/cluster/replicated.py), one container per server.

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

import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import docker.errors
import redis

from compose import engine
from compose.cleanup import remove_containers
from compose.cluster import ComposeCluster, ComposeConfig, _container_alive
from compose.failovers import OnSwitch, watch_switches
from compose.project import SENTINEL_PORT, NodePlan, ProjectPlan, SentinelPlan, container_name
from compose.project import write as write_project
from compose.proxies import ProxyPlan, populate, wait_api
from compose.sentinel import ContainerSentinel, sentinel_config
from core.clock import shim_library
from core.connect import single_try_client
from core.discovery import POINTER_KEY, Discovery
from core.endpoints import Endpoint
from core.errors import ClusterError
from harness.cluster.ports import free_port_except
from harness.cluster.replicated import ReplicationConfig

log = logging.getLogger("lockharness.cluster")

TOXIPROXY_HOST = "toxiproxy"  # Toxiproxy's service name: how containers reach the proxies
_UP_ATTEMPTS = 3


class ComposeReplicatedCluster(ComposeCluster):
    def __init__(self, config: ComposeConfig, replication: ReplicationConfig) -> None:
        # Before the base's __init__: it chooses the ports, ours included (_choose_ports).
        self.replication = replication
        run_dir = config.base_dir.resolve()
        self._sentinels = [
            ContainerSentinel(
                f"s{j}", container_name(run_dir, f"s{j}"), 0, run_dir / "data" / f"s{j}"
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
        # Announced address (a shared proxy) -> node: fixed from here on, whatever fails over.
        self._aliases = {
            f"{TOXIPROXY_HOST}:{p.listen_port}": name for name, p in self._shared.items()
        }
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
        taken = self._host_ports()
        for sentinel in self._sentinels:
            sentinel.host_port = free_port_except(taken)
            taken.append(sentinel.host_port)

    def _host_ports(self) -> list[int]:
        return [
            *(server.host_port for server in (*self._nodes, self._resource)),
            self._api_port,
            *(p.listen_port for p in self._proxies.values()),
            *(p.listen_port for p in self._shared.values()),
            *(p.listen_port for p in self._sentinel_proxies.values()),
        ]

    # -- what clients and the nemesis see ------------------------------------------------

    @property
    def sentinels(self) -> list[ContainerSentinel]:
        return self._sentinels if self._sentinels_up else []

    def shared_proxy_name(self, node: str) -> str:
        return f"shared-{node}"

    def worker_sentinels(self, worker: int) -> list[Endpoint]:
        return [
            Endpoint(s.name, "127.0.0.1", self._sentinel_proxies[(worker, s.name)].listen_port)
            for s in self.sentinels
        ]

    def discovery(self, worker: int) -> Discovery:
        return Discovery(
            master_name=self.replication.master_name,
            sentinels=self.worker_sentinels(worker),
            aliases=self._aliases,
            pointer=self.resource,
            ports={node.host_port: node.name for node in self._nodes},
        )

    def current_master(self) -> str | None:
        """The node the sentinels agree is master (or the pointer, without sentinels)."""
        sentinels = self.sentinels
        if not sentinels:
            pointer = single_try_client(self.resource, 1.0, decode_responses=True)
            try:
                master = pointer.get(POINTER_KEY)
                return None if master is None else str(master)
            finally:
                pointer.close()
        answers = [self._ask_master(s) for s in sentinels]
        votes = [a for a in answers if a is not None]
        top = max(set(votes), key=votes.count, default=None)
        return top if top is not None and votes.count(top) > len(sentinels) // 2 else None

    def _ask_master(self, sentinel: ContainerSentinel) -> str | None:
        client = sentinel.client()
        try:
            addr = client.execute_command(
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.replication.master_name
            )
        except redis.RedisError:
            return None
        finally:
            client.close()
        return self._aliases.get(f"{addr[0]}:{addr[1]}") if addr else None

    def promote(self, node: str, demote_old: bool) -> dict[str, Any]:
        """REPLICAOF NO ONE on ``node``, then point clients at it (and, with demote_old,
        make the old master its replica), as an operator or a failover script would."""
        old = self.current_master()
        _direct(self.node(node).endpoint, "REPLICAOF", "NO", "ONE")
        self._set_pointer(node)
        if demote_old and old is not None and old != node and self.node(old).running():
            shared = self._shared[node]
            _direct(self.node(old).endpoint, "REPLICAOF", TOXIPROXY_HOST, str(shared.listen_port))
        return {"from": old, "to": node}

    def wait_healthy(self) -> None:
        if not self.sentinels:  # nobody else will: every other node follows the pointer
            master = self.current_master() or self._nodes[0].name
            shared = self._shared[master]
            _direct(self.node(master).endpoint, "REPLICAOF", "NO", "ONE")
            for node in self._nodes:
                if node.name != master:
                    _direct(node.endpoint, "REPLICAOF", TOXIPROXY_HOST, str(shared.listen_port))
        self.wait_converged()
        self.wait_reachable()

    def wait_converged(self, timeout_s: float = 30.0) -> None:
        """A master everyone agrees on, every replica online behind it, and every sentinel
        knowing every replica and every other sentinel (so a failover can be voted)."""
        deadline = time.monotonic() + timeout_s
        problem: str | None = "not checked yet"
        while time.monotonic() < deadline:
            problem = self._convergence_problem()
            if problem is None:
                return
            time.sleep(0.1)
        raise ClusterError(f"replicated cluster did not converge in {timeout_s:.0f}s: {problem}")

    def _convergence_problem(self) -> str | None:
        master = self.current_master()
        if master is None:
            return "no agreed master"
        online = _online_replicas(self.node(master).endpoint)
        if online < len(self._nodes) - 1:
            return f"{master} has {online} of {len(self._nodes) - 1} replicas online"
        name, sentinels = self.replication.master_name, self.sentinels
        for sentinel in sentinels:
            client = sentinel.client()
            try:
                replicas = client.execute_command("SENTINEL", "REPLICAS", name)
                peers = client.execute_command("SENTINEL", "SENTINELS", name)
            except redis.RedisError as e:
                return f"{sentinel.name}: {e}"
            finally:
                client.close()
            if len(replicas) < len(self._nodes) - 1 or len(peers) < len(sentinels) - 1:
                return f"{sentinel.name} knows {len(replicas)} replicas, {len(peers)} sentinels"
        return None

    def watch_failovers(self, on_switch: OnSwitch) -> Callable[[], None]:
        """Call ``on_switch(old, new, began_ns)`` for every +switch-master (see
        compose.failovers), watching the first sentinel through its published port."""
        if not self.sentinels:
            return lambda: None
        return watch_switches(self._sentinels[0].client(timeout_s=5.0), self._aliases, on_switch)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """The fault domain first, replicas online behind n1, then the sentinels; or take
        down what did come up and raise."""
        redis_image, toxiproxy_image = self.preflight()
        images = (redis_image, toxiproxy_image)
        try:
            servers = [*(n.name for n in self._nodes), self._resource.name, TOXIPROXY_HOST]
            self._up_services(images, servers, self._choose_ports, self._remove_all)
            toxiproxy = container_name(self.run_dir, TOXIPROXY_HOST)
            wait_api(self._api_port, lambda: _container_alive(toxiproxy))
            proxies = [
                *self._shared.values(),
                *self._proxies.values(),
                *self._sentinel_proxies.values(),
            ]
            populate(self._api_port, proxies)  # sentinel proxies dial nothing until they start
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
    ) -> None:
        """compose.yaml, then `compose up` of ``services``; on a port taken since we chose
        it (this machine is shared), remove what half-started and try with new ports."""
        for attempt in range(1, _UP_ATTEMPTS + 1):
            self._write_project(*images)
            self._brought_up = True  # from here on, teardown has something to remove
            self._write_description()  # before `up`: gc can find a half-started run
            try:
                up = ["up", "-d", "--no-build", *services]
                engine.run_compose(self.compose_file, self.project, up)
                return
            except ClusterError as e:
                if "address already in use" not in str(e) or attempt == _UP_ATTEMPTS:
                    raise
                log.warning(
                    "compose up %s: a chosen port was taken; new ports (%s)", " ".join(services), e
                )
                remove()
                new_ports()

    def _remove_all(self) -> None:
        remove_containers(self.run_dir)

    def _remove_sentinels(self) -> None:
        """Only the sentinels: the fault domain is up and stays up."""
        for sentinel in self._sentinels:
            with contextlib.suppress(docker.errors.NotFound):  # gone meanwhile
                engine.client().containers.get(sentinel.container_name).remove(force=True)

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
                clock_dir=self.run_dir / "clock" if shim else None,
                sentinels=tuple(
                    SentinelPlan(s.name, s.host_port, s.directory) for s in self._sentinels
                ),
            )
        )

    def _replication_args(self, index: int) -> tuple[str, ...]:
        """ReplicatedCluster's extra args: announce the shared proxy; n2.. follow n1's."""
        announce = self._shared[self._nodes[index].name]
        primary = self._shared[self._nodes[0].name]
        return (
            # Full syncs start at once instead of waiting 5 s for more replicas.
            "--repl-diskless-sync-delay",
            "0",
            "--replica-announce-ip",
            TOXIPROXY_HOST,
            "--replica-announce-port",
            str(announce.listen_port),
            *(("--replicaof", TOXIPROXY_HOST, str(primary.listen_port)) if index else ()),
        )

    def _set_pointer(self, node: str) -> None:
        pointer = single_try_client(self.resource, 1.0)
        try:
            pointer.set(POINTER_KEY, node)
        finally:
            pointer.close()

    def _save_logs(self) -> None:
        super()._save_logs()
        for sentinel in self._sentinels:  # as LocalSentinel's log files are named
            text = sentinel.log_tail(lines=10_000)
            (self.run_dir / f"sentinel-{sentinel.name}.log").write_text(text)

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "topology": "replicated",
            "shared_proxies": {
                n: Endpoint(n, TOXIPROXY_HOST, p.listen_port).to_dict()
                for n, p in self._shared.items()
            },
            "sentinels": [
                {**s.endpoint.to_dict(), "pid": None, "container": s.container_name}
                for s in self._sentinels
            ],
            "sentinel_proxies": {
                p.name: Endpoint(s, "127.0.0.1", p.listen_port).to_dict()
                for (_, s), p in sorted(self._sentinel_proxies.items())
            },
        }

    def __enter__(self) -> ComposeReplicatedCluster:
        self.start()
        return self


def _direct(endpoint: Endpoint, *command: str) -> None:
    client = single_try_client(endpoint, 2.0)
    try:
        client.execute_command(*command)
    finally:
        client.close()


def _online_replicas(master: Endpoint) -> int:
    client = single_try_client(master, 1.0, decode_responses=True)
    try:
        info = client.info("replication")
    except redis.RedisError:
        return 0
    finally:
        client.close()
    if info.get("role") != "master":
        return 0
    slaves = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
    return sum(1 for s in slaves if s.get("state") == "online")
