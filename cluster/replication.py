"""What both backends' `replicated` topology does alike (cluster.replicated
.ReplicatedCluster: processes, compose.replicated.ComposeReplicatedCluster: containers):
ask the sentinels (or, without them, the pointer) for the master, promote a replica, wait
until the topology converges, watch Sentinel's failovers, describe the replicated parts.

A backend mixes ReplicatedTopology in before its cluster class, keeps its sentinels in
``_sentinels`` and says where two kinds of proxy listen: each node's shared proxy as
nodes and sentinels reach it, i.e. the address the node announces (``_shared_endpoints``),
and each worker's proxy to each sentinel (``_sentinel_proxy_endpoints``). Nodes are
reached directly (NodeHandle.endpoint), the pointer is a key in the resource. How the
servers come up is the backend's own.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from lockharness.cluster.proxied import NodeT, ProxiedCluster
from lockharness.cluster.sentinel import SentinelHandle
from lockharness.core.connect import single_try_client
from lockharness.core.discovery import POINTER_KEY, Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError

log = logging.getLogger("lockharness.cluster")

OnSwitch = Callable[[str, str, int | None], None]


@dataclass(frozen=True)
class ReplicationConfig:
    sentinels: int = 3  # 0: no Sentinel; the nemesis promotes replicas itself
    quorum: int = 2
    down_after_ms: int = 1000
    failover_timeout_ms: int = 3000
    master_name: str = "lockharness"


class ReplicatedTopology(ProxiedCluster[NodeT]):
    replication: ReplicationConfig
    _sentinels: Sequence[SentinelHandle]  # every sentinel of the run, up or not yet
    _aliases: dict[str, str]  # announced address (a shared proxy) "host:port" -> node

    @abstractmethod
    def _shared_endpoints(self) -> dict[str, Endpoint]:
        """node -> its shared proxy, as the nodes and sentinels reach it (what it announces)."""

    @abstractmethod
    def _sentinel_proxy_endpoints(self) -> dict[tuple[int, str], Endpoint]:
        """(worker, sentinel) -> where that worker's proxy to that sentinel listens."""

    # -- what clients and the nemesis see ------------------------------------------------

    @property
    def sentinels(self) -> Sequence[SentinelHandle]:
        """The sentinels that are up (none without Sentinel)."""
        return self._sentinels

    def shared_proxy_name(self, node: str) -> str:
        return f"shared-{node}"

    def proxies_to(self, node: str) -> list[str]:
        # The shared proxy too: while the node is down, its replicas and the sentinels are
        # refused as by a dead master's port, not accepted and dropped by Toxiproxy.
        return [*super().proxies_to(node), self.shared_proxy_name(node)]

    def worker_sentinels(self, worker: int) -> list[Endpoint]:
        proxies = self._sentinel_proxy_endpoints()
        return [proxies[(worker, s.name)] for s in self.sentinels]

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
        sentinels = self.sentinels
        if not sentinels:
            pointer = single_try_client(self.resource, 1.0, decode_responses=True)
            try:
                master = pointer.get(POINTER_KEY)
                return None if master is None else str(master)
            except redis.RedisError as e:
                raise ClusterError(f"the master pointer could not be read: {e!r}") from e
            finally:
                pointer.close()
        answers = [self._ask_master(s) for s in sentinels]
        votes = [a for a in answers if a is not None]
        top = max(set(votes), key=votes.count, default=None)
        return top if top is not None and votes.count(top) > len(sentinels) // 2 else None

    def _ask_master(self, sentinel: SentinelHandle) -> str | None:
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

    def promote(
        self, node: str, demote_old: bool, promoted: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """REPLICAOF NO ONE on ``node``, then point clients at it (and, with demote_old,
        make the old master its replica), as an operator or a failover script would;
        ``promoted(node)`` in between (the node record reads what it holds then)."""
        old = self.current_master()
        _direct(self.node(node).endpoint, "REPLICAOF", "NO", "ONE")
        if promoted is not None:
            promoted(node)
        self._set_pointer(node)
        if demote_old and old is not None and old != node and self.node(old).running():
            shared = self._shared_endpoints()[node]
            _direct(self.node(old).endpoint, "REPLICAOF", shared.host, str(shared.port))
        return {"from": old, "to": node}

    def wait_healthy(self) -> None:
        if not self.sentinels:  # nobody else will: every other node follows the pointer
            master = self.current_master() or self._nodes[0].name
            shared = self._shared_endpoints()[master]
            _direct(self.node(master).endpoint, "REPLICAOF", "NO", "ONE")
            for node in self._nodes:
                if node.name != master:
                    _direct(node.endpoint, "REPLICAOF", shared.host, str(shared.port))
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
        """Call ``on_switch(old, new, began_ns)`` for every +switch-master a sentinel
        publishes (see watch_switches), watching the first sentinel directly (not through
        a proxy: observing is not part of the fault domain). Returns a function that stops
        watching."""
        if not self.sentinels:
            return lambda: None
        return watch_switches(self.sentinels[0].client(timeout_s=5.0), self._aliases, on_switch)

    # -- for the backend's lifecycle ---------------------------------------------------------

    def _alias_shared_proxies(self) -> None:
        """Announced address (a shared proxy) -> node: fixed from here on, whatever fails over."""
        self._aliases = {f"{e.host}:{e.port}": n for n, e in self._shared_endpoints().items()}

    def _replication_args(self, index: int) -> tuple[str, ...]:
        """The ``index``-th node's extra args: announce its shared proxy; n2.. follow n1's."""
        shared = self._shared_endpoints()
        announce, primary = shared[self._nodes[index].name], shared[self._nodes[0].name]
        return (
            # Full syncs start at once instead of waiting 5 s for more replicas.
            "--repl-diskless-sync-delay",
            "0",
            "--replica-announce-ip",
            announce.host,
            "--replica-announce-port",
            str(announce.port),
            *(("--replicaof", primary.host, str(primary.port)) if index else ()),
        )

    def _set_pointer(self, node: str) -> None:
        pointer = single_try_client(self.resource, 1.0)
        try:
            pointer.set(POINTER_KEY, node)
        except redis.RedisError as e:
            raise ClusterError(f"the master pointer could not be set to {node}: {e!r}") from e
        finally:
            pointer.close()

    def _describe_replication(self) -> dict[str, Any]:
        """What describe() adds to the backend's own for this topology."""
        return {
            "topology": "replicated",
            "shared_proxies": {n: e.to_dict() for n, e in self._shared_endpoints().items()},
            "sentinels": [s.describe() for s in self._sentinels],
            "sentinel_proxies": self._describe_proxies(self._sentinel_proxy_endpoints()),
        }


def watch_switches(
    client: redis.Redis, aliases: Mapping[str, str], on_switch: OnSwitch
) -> Callable[[], None]:
    """Call ``on_switch(old, new, began_ns)`` for every +switch-master the sentinel behind
    ``client`` publishes; ``began_ns`` (CLOCK_MONOTONIC) is when it sent REPLICAOF NO ONE
    to the new master, the moment clients could start reaching it, or None if unseen.
    Addresses are named through ``aliases`` ("host:port" -> node). Returns a function that
    stops watching (and closes ``client``)."""
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    began: list[int] = []

    def promoting(message: dict[str, Any]) -> None:
        began.append(time.monotonic_ns())

    def switched(message: dict[str, Any]) -> None:
        # "+switch-master <name> <old-host> <old-port> <new-host> <new-port>"
        _, old_host, old_port, new_host, new_port = str(message["data"]).split()
        old, new = aliases.get(f"{old_host}:{old_port}"), aliases.get(f"{new_host}:{new_port}")
        log.info("sentinel switched master %s -> %s", old, new)
        start = began.pop() if began else None
        began.clear()
        on_switch(old or f"{old_host}:{old_port}", new or f"{new_host}:{new_port}", start)

    try:
        pubsub.subscribe(
            **{
                "+failover-state-send-slaveof-noone": promoting,
                "+switch-master": switched,
            }
        )
    except redis.RedisError as e:
        pubsub.close()
        raise ClusterError(f"the sentinel's failovers could not be followed: {e!r}") from e

    def lost(error: BaseException, _pubsub: Any, _thread: Any) -> None:
        # The worker thread goes on (redis-py reconnects and subscribes again); what the
        # sentinel published meanwhile is not seen, and the log says so.
        log.warning("following the sentinel's failovers: %r; switches meanwhile unseen", error)
        time.sleep(0.1)  # a sentinel that is down is not asked in a busy loop

    thread = pubsub.run_in_thread(sleep_time=0.05, daemon=True, exception_handler=lost)

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
    except redis.RedisError as e:
        raise ClusterError(f"{' '.join(command)} on {endpoint.name}: {e!r}") from e
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
