"""The replicated topology on the Compose backend, with real containers: it converges
with every link through the shared proxies, Sentinel really fails over and a client on the
host follows it through its own proxies, promotion re-points clients without Sentinel, and
teardown leaves nothing labelled with the run (as tests/test_failover.py, locally)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockharness.cluster.base import Replicated
from lockharness.cluster.replicated import ReplicationConfig
from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.compose.cleanup import leftovers
from lockharness.compose.cluster import ComposeConfig
from lockharness.compose.replicated import ComposeReplicatedCluster
from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.clients.single import SingleInstanceLock, SingleOptions

pytestmark = pytest.mark.usefixtures("docker_engine")


def _client(endpoint: Endpoint, timeout_s: float = 5.0) -> redis.Redis:
    return single_try_client(endpoint, timeout_s)


def _assert_nothing_left(run_dir: Path) -> None:
    label = f"label=lockharness.run={run_dir.resolve()}"
    for kind in (["ps", "-a"], ["network", "ls"], ["volume", "ls"]):
        listed = subprocess.run(
            ["docker", *kind, "-q", "--filter", label], capture_output=True, text=True, check=True
        )
        assert listed.stdout.strip() == "", f"docker {' '.join(kind)}: {listed.stdout}"
    assert leftovers(run_dir) == []


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeReplicatedCluster]:
    base = tmp_path_factory.mktemp("compose-replicated")
    config = ComposeConfig(base_dir=base, nodes=3, workers=2)
    cluster = ComposeReplicatedCluster(config, ReplicationConfig(sentinels=3, down_after_ms=1000))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        _assert_nothing_left(base)  # no sentinel, master or replica, nor the network
        assert "+monitor master lockharness" in (base / "sentinel-s1.log").read_text()


def test_converges_with_n1_master_and_every_link_through_a_proxy(
    replicated: ComposeReplicatedCluster,
) -> None:
    assert isinstance(replicated, Replicated)
    assert replicated.current_master() == "n1"
    assert [s.name for s in replicated.sentinels] == ["s1", "s2", "s3"]
    for sentinel in replicated.sentinels:  # each knows both replicas and both peers
        client = sentinel.client()
        assert len(client.execute_command("SENTINEL", "REPLICAS", "lockharness")) == 2
        assert len(client.execute_command("SENTINEL", "SENTINELS", "lockharness")) == 2
        client.close()
    # Same proxy names as the local backend: faults address proxies by name.
    names = {f"w{w}-{s}" for w in (1, 2) for s in ("n1", "n2", "n3", "s1", "s2", "s3")}
    names |= {f"shared-n{i}" for i in (1, 2, 3)}
    assert set(replicated.toxiproxy.proxies()) == names
    assert replicated.shared_proxy_name("n2") == "shared-n2"
    # n2 follows n1 through shared-n1: its master is the proxy, not n1's container.
    info = _client(replicated.node("n2").endpoint).info("replication")
    shared = replicated.describe()["shared_proxies"]
    assert (info["master_host"], info["master_port"]) == ("toxiproxy", shared["n1"]["port"])
    # A worker reaches sentinels only through its proxies, on the host's loopback.
    discovery = replicated.discovery(1)
    assert [s.host for s in discovery.sentinels] == ["127.0.0.1"] * 3
    assert sorted(discovery.aliases.values()) == ["n1", "n2", "n3"]
    assert replicated.describe()["topology"] == "replicated"


def test_a_write_reaches_the_replicas_through_the_shared_proxies(
    replicated: ComposeReplicatedCluster,
) -> None:
    master = _client(replicated.node("n1").endpoint)
    replicas = [_client(replicated.node(n).endpoint) for n in ("n2", "n3")]
    master.set("repl", "v1")
    assert master.execute_command("WAIT", 2, 5000) == 2
    assert [r.get("repl") for r in replicas] == [b"v1"] * 2
    # Replicas follow the master through its shared proxy: slow shared-n1's replication
    # stream (downstream: n1 to its replicas; well under down-after, so no failover) and a
    # write reaches them only after the delay.
    toxic = ToxicSpec("shared-n1", "slow", "latency", {"latency": 400}, stream="downstream")
    replicated.toxiproxy.add_toxic(toxic)
    try:
        started = time.monotonic()
        master.set("repl", "v2")
        assert [r.get("repl") for r in replicas] == [b"v1"] * 2  # not there yet
        assert master.execute_command("WAIT", 2, 5000) == 2
        assert time.monotonic() - started >= 0.4
        assert [r.get("repl") for r in replicas] == [b"v2"] * 2
    finally:
        replicated.toxiproxy.remove_toxic("shared-n1", "slow")
        master.delete("repl")
    assert master.execute_command("WAIT", 2, 5000) == 2
    replicated.wait_converged()


def test_sentinel_fails_over_and_a_client_on_the_host_follows(
    replicated: ComposeReplicatedCluster,
) -> None:
    # Last in this module: it leaves a master other than n1.
    switches: list[tuple[str, str, int | None]] = []
    stop_watching = replicated.watch_failovers(
        lambda old, new, began: switches.append((old, new, began))
    )
    lock = SingleInstanceLock(
        replicated.worker_endpoints(1),
        time.monotonic_ns,
        SingleOptions(discovery="sentinel"),
        discovery=replicated.discovery(1),
    )
    try:
        before = lock.acquire("k", 60_000)
        assert before is not None and before.grants == ("n1",)
        master = _client(replicated.node("n1").endpoint)
        assert master.execute_command("WAIT", 2, 5000) == 2  # k is on both replicas
        killed_at = time.monotonic_ns()
        replicated.node("n1").kill()
        deadline = time.monotonic() + 20
        while not switches and time.monotonic() < deadline:
            time.sleep(0.05)
        assert switches and switches[0][0] == "n1" and switches[0][1] in ("n2", "n3")
        began = switches[0][2]
        # Only the sentinel leading the failover publishes its REPLICAOF NO ONE, and the
        # watch listens to s1 alone (as the local backend's does): a window, or None.
        assert began is None or began > killed_at
        new = switches[0][1]
        while replicated.current_master() != new and time.monotonic() < deadline:
            time.sleep(0.05)
        assert replicated.current_master() == new
        # The client asks Sentinel again (through w1-s*) and writes to the new master
        # through w1-<new>; the key had replicated, so it is still refused.
        after = None
        while after is None and time.monotonic() < deadline:
            try:
                after = lock.acquire("other", 60_000)
            except Exception:
                time.sleep(0.05)  # the old connection's error, then a reconnect
        assert after is not None and after.grants == (new,)
        assert lock.acquire("k", 60_000) is None
        assert _client(replicated.node(new).endpoint).exists("other") == 1
        # The old master comes back (as master, by its command line): Sentinel demotes it.
        replicated.node("n1").restart()
        replicated.wait_converged()
        deadline = time.monotonic() + 5  # the announcement may trail the agreement
        while switches[-1][1] != replicated.current_master() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert replicated.current_master() == switches[-1][1] != "n1"
    finally:
        lock.close()
        stop_watching()


# Flaky, cause not found yet: one clean-clone CI run in about five found the key absent on
# n3 right after its promotion although WAIT 2 had returned 2. The end-to-end claim
# (tests/test_compose_scenarios.py, failover-promote-unsafe on compose) stays in make test.
@pytest.mark.slow
def test_promote_without_sentinel_repoints_clients_and_teardown_leaves_nothing(
    tmp_path: Path,
) -> None:
    config = ComposeConfig(base_dir=tmp_path, nodes=3, workers=1)
    cluster = ComposeReplicatedCluster(config, ReplicationConfig(sentinels=0))
    cluster.start()
    try:
        assert cluster.sentinels == [] and cluster.discovery(1).sentinels == []
        assert "w1-s1" not in cluster.toxiproxy.proxies()
        lock = SingleInstanceLock(
            cluster.worker_endpoints(1),
            time.monotonic_ns,
            SingleOptions(discovery="pointer"),
            discovery=cluster.discovery(1),
        )
        assert (lease := lock.acquire("k", 60_000)) is not None and lease.grants == ("n1",)
        master = _client(cluster.node("n1").endpoint)
        assert master.execute_command("WAIT", 2, 5000) == 2  # k is on n3 before it is promoted
        assert cluster.promote("n3", demote_old=True) == {"from": "n1", "to": "n3"}
        assert cluster.current_master() == "n3"
        assert lock.acquire("k", 60_000) is None
        other = lock.acquire("other", 60_000)
        assert other is not None and other.grants == ("n3",)
        cluster.wait_healthy()  # n1 and n2 follow n3, through shared-n3
        info = _client(cluster.node("n2").endpoint).info("replication")
        shared_n3 = cluster.describe()["shared_proxies"]["n3"]
        assert (info["role"], info["master_host"], info["master_port"]) == (
            "slave",
            "toxiproxy",
            shared_n3["port"],
        )
        lock.close()
    finally:
        cluster.stop()
    _assert_nothing_left(tmp_path)
    assert not list(tmp_path.glob("sentinel-*.log"))


def test_a_sentinel_port_taken_before_the_sentinels_up_means_new_ports(tmp_path: Path) -> None:
    # This machine is shared: the sentinels come up seconds after the fault domain (once
    # the replicas are online), and a port chosen for them may be bound meanwhile. Only
    # theirs are chosen again; the nodes keep running. (The first `up` retries as the
    # masters topology's does: tests/test_compose.py.)
    config = ComposeConfig(base_dir=tmp_path, nodes=2, workers=1)
    cluster = ComposeReplicatedCluster(config, ReplicationConfig(sentinels=1, quorum=1))
    chosen = cluster.describe()["sentinels"][0]["port"]
    node_port = cluster.node("n2").endpoint.port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", chosen))
        squatter.listen()
        with cluster:
            assert cluster.sentinels[0].endpoint.port != chosen
            assert cluster.node("n2").endpoint.port == node_port
            assert cluster.current_master() == "n1"
            assert _client(cluster.worker_sentinels(1)[0]).ping()
    _assert_nothing_left(tmp_path)
