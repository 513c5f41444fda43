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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from core.connect import single_try_client
from core.discovery import POINTER_KEY, Discovery
from core.endpoints import Endpoint
from core.errors import ClusterError
from harness.cluster.local import ClusterConfig, LocalCluster
from harness.cluster.ports import free_port_except
from harness.cluster.process import ServerProcess
from harness.cluster.sentinel import LocalSentinel

log = logging.getLogger("lockharness.cluster")


@dataclass(frozen=True)
class ReplicationConfig:
    sentinels: int = 3  # 0: no Sentinel; the nemesis promotes replicas itself
    quorum: int = 2
    down_after_ms: int = 1000
    failover_timeout_ms: int = 3000
    master_name: str = "lockharness"


class ReplicatedCluster(LocalCluster):
    def __init__(self, config: ClusterConfig, replication: ReplicationConfig) -> None:
        super().__init__(config)  # nodes n1..nN: n1 starts as master, the rest replicate it
        self.replication = replication
        self._shared: dict[str, Endpoint] = {}
        self._aliases: dict[str, str] = {}
        self._sentinels: list[LocalSentinel] = []
        self._sentinel_proxies: dict[tuple[int, str], Endpoint] = {}

    # -- what clients and the nemesis see ------------------------------------------------

    @property
    def sentinels(self) -> list[LocalSentinel]:
        return self._sentinels

    def shared_proxy_name(self, node: str) -> str:
        return f"shared-{node}"

    def worker_sentinels(self, worker: int) -> list[Endpoint]:
        return [self._sentinel_proxies[(worker, s.name)] for s in self._sentinels]

    def discovery(self, worker: int) -> Discovery:
        return Discovery(
            master_name=self.replication.master_name,
            sentinels=self.worker_sentinels(worker),
            aliases=self._aliases,
            pointer=self.resource,
            ports={node.endpoint.port: node.name for node in self._nodes},
        )

    def current_master(self) -> str | None:
        """The node the sentinels agree is master (or the pointer, without sentinels)."""
        if not self._sentinels:
            pointer = single_try_client(self.resource, 1.0, decode_responses=True)
            try:
                master = pointer.get(POINTER_KEY)
                return None if master is None else str(master)
            finally:
                pointer.close()
        answers = [self._ask_master(s) for s in self._sentinels]
        votes = [a for a in answers if a is not None]
        top = max(set(votes), key=votes.count, default=None)
        return top if top is not None and votes.count(top) > len(self._sentinels) // 2 else None

    def _ask_master(self, sentinel: LocalSentinel) -> str | None:
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

    # -- lifecycle -------------------------------------------------------------------------

    def _servers(self) -> list[ServerProcess]:
        return [*self._sentinels, *super()._servers()]

    def start(self) -> None:
        try:
            self._toxiproxy.spawn()
            self._resource.spawn()
            self._toxiproxy.wait_ready()
            self._resource.wait_ready()
            self._create_shared_proxies()
            primary = self._shared[self._nodes[0].name]
            for i, node in enumerate(self._nodes):
                announce = self._shared[node.name]
                node.extra_args = [
                    # Full syncs start at once instead of waiting 5 s for more replicas.
                    "--repl-diskless-sync-delay",
                    "0",
                    "--replica-announce-ip",
                    announce.host,
                    "--replica-announce-port",
                    str(announce.port),
                    *(["--replicaof", primary.host, str(primary.port)] if i else []),
                ]
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
        # Announced address (a shared proxy) -> node: fixed from here on, whatever fails over.
        self._aliases = {f"{e.host}:{e.port}": name for name, e in self._shared.items()}

    def _start_sentinels(self, primary: Endpoint) -> None:
        r, base = self.replication, self.config.base_dir
        self._sentinels = [
            LocalSentinel(
                f"s{j}",
                self.config.redis_server,
                base / "data" / f"s{j}",
                base / f"sentinel-s{j}.log",
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
                info = self.toxiproxy.create_proxy(name, sentinel.endpoint, sentinel.name)
                self._sentinel_proxies[(worker, sentinel.name)] = info.listen

    def _set_pointer(self, node: str) -> None:
        pointer = single_try_client(self.resource, 1.0)
        try:
            pointer.set(POINTER_KEY, node)
        finally:
            pointer.close()

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
        name = self.replication.master_name
        for sentinel in self._sentinels:
            client = sentinel.client()
            try:
                replicas = client.execute_command("SENTINEL", "REPLICAS", name)
                peers = client.execute_command("SENTINEL", "SENTINELS", name)
            except redis.RedisError as e:
                return f"{sentinel.name}: {e}"
            finally:
                client.close()
            if len(replicas) < len(self._nodes) - 1 or len(peers) < len(self._sentinels) - 1:
                return f"{sentinel.name} knows {len(replicas)} replicas, {len(peers)} sentinels"
        return None

    def promote(self, node: str, demote_old: bool) -> dict[str, Any]:
        """REPLICAOF NO ONE on ``node``, then point clients at it (and, with demote_old,
        make the old master its replica), as an operator or a failover script would."""
        old = self.current_master()
        _direct(self.node(node).endpoint, "REPLICAOF", "NO", "ONE")
        self._set_pointer(node)
        if demote_old and old is not None and old != node and self.node(old).running():
            shared = self._shared[node]
            _direct(self.node(old).endpoint, "REPLICAOF", shared.host, str(shared.port))
        return {"from": old, "to": node}

    def wait_healthy(self) -> None:
        if not self._sentinels:  # nobody else will: every other node follows the pointer
            master = self.current_master() or self._nodes[0].name
            shared = self._shared[master]
            _direct(self.node(master).endpoint, "REPLICAOF", "NO", "ONE")
            for node in self._nodes:
                if node.name != master:
                    _direct(node.endpoint, "REPLICAOF", shared.host, str(shared.port))
        self.wait_converged()
        self.wait_reachable()

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "topology": "replicated",
            "shared_proxies": {n: e.to_dict() for n, e in self._shared.items()},
            "sentinels": [{**s.endpoint.to_dict(), "pid": s.pid} for s in self._sentinels],
            "sentinel_proxies": {
                f"w{w}-{s}": e.to_dict() for (w, s), e in sorted(self._sentinel_proxies.items())
            },
        }

    def watch_failovers(
        self, on_switch: Callable[[str, str, int | None], None]
    ) -> Callable[[], None]:
        """Call ``on_switch(old, new, began_ns)`` for every +switch-master a sentinel
        publishes; ``began_ns`` (CLOCK_MONOTONIC) is when it sent REPLICAOF NO ONE to the
        new master, the moment clients could start reaching it, or None if unseen.

        Subscribes to the first sentinel directly (not through a proxy: observing is not
        part of the fault domain). Returns a function that stops watching."""
        if not self._sentinels:
            return lambda: None
        aliases = self._aliases
        client = self._sentinels[0].client(timeout_s=5.0)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        began: list[int] = []

        def promoting(message: dict[str, Any]) -> None:
            began.append(time.monotonic_ns())

        def switched(message: dict[str, Any]) -> None:
            # "+switch-master <name> <old-ip> <old-port> <new-ip> <new-port>"
            _, old_ip, old_port, new_ip, new_port = str(message["data"]).split()
            old, new = aliases.get(f"{old_ip}:{old_port}"), aliases.get(f"{new_ip}:{new_port}")
            log.info("sentinel switched master %s -> %s", old, new)
            start = began.pop() if began else None
            began.clear()
            on_switch(old or f"{old_ip}:{old_port}", new or f"{new_ip}:{new_port}", start)

        pubsub.subscribe(
            **{
                "+failover-state-send-slaveof-noone": promoting,
                "+switch-master": switched,
            }
        )
        thread = pubsub.run_in_thread(sleep_time=0.05, daemon=True)

        def stop() -> None:
            thread.stop()
            thread.join(timeout=2)
            pubsub.close()
            client.close()

        return stop


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
