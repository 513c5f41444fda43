"""A node that is down looks dead through its proxies: connecting is refused
(ECONNREFUSED), as a dead process's port on a live host refuses, instead of Toxiproxy
accepting and closing each connection (Toxiproxy #265). It is accepted again once the
node is back, unless a partition still cuts that link; the proxy's port stays held by
the harness meanwhile. On real servers and a real Toxiproxy."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockharness.cluster.base import Cluster
from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.ports import process_holds
from lockharness.cluster.replicated import ReplicatedCluster, ReplicationConfig
from lockharness.core.endpoints import Endpoint
from lockharness.faults.base import Fault, FaultContext
from lockharness.faults.kinds.kill import Kill
from lockharness.faults.kinds.partition import Partition
from lockharness.faults.registry import options_type
from lockharness.faults.spec import FaultSpec


class _NoLeases:
    def newest_lease(self) -> None:
        return None

    def holder_workers(self) -> list[int]:
        return []


def _context(cluster: Cluster) -> FaultContext:
    return FaultContext(cluster, [], _NoLeases(), random.Random(1))


def _fault(cls: type[Fault], ctx: FaultContext, number: int, **options: object) -> Fault:
    spec = FaultSpec(kind=cls.kind, name=cls.kind, options=options_type(cls.kind)(**options))
    return cls(spec, ctx, number)


def _listen(cluster: LocalCluster, worker: int, node: str) -> Endpoint:
    return cluster.worker_endpoints(worker)[int(node[1:]) - 1]


def _refused(endpoint: Endpoint) -> bool:
    """True if connecting is refused; False if it is accepted (whatever happens next)."""
    try:
        socket.create_connection((endpoint.host, endpoint.port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def _answers(endpoint: Endpoint) -> bool:
    client = redis.Redis(host=endpoint.host, port=endpoint.port, socket_timeout=1)
    deadline = time.monotonic() + 5  # a client's first connect may race the listener
    try:
        while time.monotonic() < deadline:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                time.sleep(0.02)
        return False
    finally:
        client.close()


@pytest.fixture(scope="module")
def cluster(
    binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("dead-nodes")
    with LocalCluster(ClusterConfig(*binaries, base_dir=base, nodes=3, workers=2)) as up:
        yield up


def test_a_dead_node_refuses_through_every_proxy_and_accepts_once_back(
    cluster: LocalCluster,
) -> None:
    ctx = _context(cluster)
    kill = _fault(Kill, ctx, 1)
    kill.start(["n2"])
    try:
        for worker in (1, 2):
            endpoint = _listen(cluster, worker, "n2")
            assert _refused(endpoint), f"w{worker}-n2 accepted while n2 was down"
            assert endpoint.port in process_holds().held()  # no other run is handed it
        assert not _refused(_listen(cluster, 1, "n1"))  # the live nodes are untouched
    finally:
        kill.stop()
    assert all(_answers(_listen(cluster, w, "n2")) for w in (1, 2))


def test_a_node_back_leaves_a_partitions_cut_and_a_heal_leaves_a_dead_nodes(
    cluster: LocalCluster,
) -> None:
    ctx = _context(cluster)
    w1, w2 = _listen(cluster, 1, "n3"), _listen(cluster, 2, "n3")
    # The node comes back while a partition still cuts w1 from it.
    cut = _fault(Partition, ctx, 1, mode="cut-worker", workers=["w1"])
    kill = _fault(Kill, ctx, 2)
    cut.start(["n3"])
    kill.start(["n3"])
    kill.stop()
    assert _refused(w1) and _answers(w2)
    cut.stop()
    assert _answers(w1)
    # The partition heals while the node is still down.
    kill = _fault(Kill, ctx, 3)
    cut = _fault(Partition, ctx, 4, mode="isolate")
    kill.start(["n3"])
    cut.start(["n3"])
    cut.stop()
    assert _refused(w1) and _refused(w2)
    kill.stop()
    assert _answers(w1) and _answers(w2)


def test_a_dead_master_refuses_its_replicas_too(
    binaries: tuple[Path, Path], tmp_path: Path
) -> None:
    """The replicated topology's shared proxy (replication and sentinel links) refuses
    while its node is down, as the dead master's own port would."""
    config = ClusterConfig(*binaries, base_dir=tmp_path, nodes=2, workers=1)
    with ReplicatedCluster(config, ReplicationConfig(sentinels=0)) as replicated:
        ctx = _context(replicated)
        shared = replicated._shared_endpoints()["n1"]
        kill = _fault(Kill, ctx, 1)
        kill.start(["n1"])
        try:
            assert _refused(shared) and _refused(_listen(replicated, 1, "n1"))
        finally:
            kill.stop()
        assert _answers(shared)
