"""Each lock client against real redis-servers reached through real Toxiproxy proxies."""

from __future__ import annotations

import time

import redis

from lockharness.cluster.local import LocalCluster
from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.clients.single import SingleInstanceLock, SingleOptions
from lockharness.workloads.clients.unsafe_del import UnsafeDelLock
from lockharness.workloads.resource import Resource
from lockharness.workloads.validity import drift_ns

SINGLE, REDLOCK = SingleOptions(), Redlock.Options()
ONE_NODE = UnsafeDelLock.Options()


def clock() -> int:
    return time.monotonic_ns()


def direct(cluster: LocalCluster, index: int) -> redis.Redis:
    endpoint = cluster.nodes[index].endpoint
    return redis.Redis(host=endpoint.host, port=endpoint.port)


def test_single_second_client_is_refused(clean_cluster: LocalCluster) -> None:
    first = SingleInstanceLock(clean_cluster.worker_endpoints(1), clock, SINGLE)
    second = SingleInstanceLock(clean_cluster.worker_endpoints(2), clock, SINGLE)
    lease = first.acquire("k", 5000)
    assert lease is not None and lease.grants == ("n1",)
    assert second.acquire("k", 5000) is None
    assert first.release(lease)
    assert second.acquire("k", 5000) is not None


def test_single_release_with_wrong_token_does_nothing(clean_cluster: LocalCluster) -> None:
    owner = SingleInstanceLock(clean_cluster.worker_endpoints(1), clock, SINGLE)
    other = SingleInstanceLock(clean_cluster.worker_endpoints(2), clock, SINGLE)
    lease = owner.acquire("k", 5000)
    assert lease is not None
    forged = type(lease)(lease.key, "not-the-token", lease.deadline, lease.grants)
    assert other.release(forged) is False
    assert direct(clean_cluster, 0).get("k") == lease.token.encode()


def test_single_deadline_is_ttl_minus_drift_from_the_request(clean_cluster: LocalCluster) -> None:
    lock = SingleInstanceLock(clean_cluster.worker_endpoints(1), clock, SINGLE)
    before = clock()
    lease = lock.acquire("k", 1000)
    assert lease is not None and lease.deadline is not None
    assert before + 1_000_000_000 - drift_ns(1000) <= lease.deadline <= clock() + 1_000_000_000


def test_unsafe_del_frees_someone_elses_lock(clean_cluster: LocalCluster) -> None:
    # The broken client really is broken: its release removes a lock it does not own.
    holder = UnsafeDelLock(clean_cluster.worker_endpoints(1), clock, ONE_NODE)
    stale = UnsafeDelLock(clean_cluster.worker_endpoints(2), clock, ONE_NODE)
    lease = holder.acquire("k", 5000)
    assert lease is not None
    forged = type(lease)(lease.key, "expired-lease-token", lease.deadline, lease.grants)
    assert stale.release(forged) is True
    assert direct(clean_cluster, 0).get("k") is None


def test_redlock_second_client_is_refused(clean_cluster: LocalCluster) -> None:
    first = Redlock(clean_cluster.worker_endpoints(1), clock, REDLOCK)
    second = Redlock(clean_cluster.worker_endpoints(2), clock, REDLOCK)
    lease = first.acquire("k", 5000)
    assert lease is not None and lease.grants == ("n1", "n2", "n3", "n4", "n5")
    assert second.acquire("k", 5000) is None
    # The refused attempt leaves no stray keys and does not touch the holder's.
    assert all(direct(clean_cluster, i).get("k") == lease.token.encode() for i in range(5))
    assert first.release(lease)
    assert all(direct(clean_cluster, i).get("k") is None for i in range(5))


def test_redlock_release_with_wrong_token_does_nothing(clean_cluster: LocalCluster) -> None:
    owner = Redlock(clean_cluster.worker_endpoints(1), clock, REDLOCK)
    other = Redlock(clean_cluster.worker_endpoints(2), clock, REDLOCK)
    lease = owner.acquire("k", 5000)
    assert lease is not None
    forged = type(lease)(lease.key, "not-the-token", lease.deadline, lease.grants)
    assert other.release(forged) is False
    assert all(direct(clean_cluster, i).get("k") == lease.token.encode() for i in range(5))


def _disable(cluster: LocalCluster, worker: int, nodes: list[str]) -> None:
    for node in nodes:
        cluster.toxiproxy.set_enabled(cluster.proxy_name(worker, node), False)


def test_redlock_acquires_with_two_of_five_nodes_cut_off(clean_cluster: LocalCluster) -> None:
    _disable(clean_cluster, 1, ["n1", "n2"])
    lease = Redlock(clean_cluster.worker_endpoints(1), clock, REDLOCK).acquire("k", 5000)
    assert lease is not None
    assert lease.grants == ("n3", "n4", "n5")
    # Worker 2's proxies are untouched: it still reaches n1 and n2, which hold nothing.
    assert Redlock(clean_cluster.worker_endpoints(2), clock, REDLOCK).acquire("k", 5000) is None
    assert direct(clean_cluster, 0).get("k") is None


def test_redlock_refuses_with_three_of_five_nodes_cut_off(clean_cluster: LocalCluster) -> None:
    _disable(clean_cluster, 1, ["n1", "n2", "n3"])
    assert Redlock(clean_cluster.worker_endpoints(1), clock, REDLOCK).acquire("k", 5000) is None
    # The minority it did reach was released again, so others are not blocked for a TTL.
    assert direct(clean_cluster, 3).get("k") is None and direct(clean_cluster, 4).get("k") is None
    assert Redlock(clean_cluster.worker_endpoints(2), clock, REDLOCK).acquire("k", 5000) is not None


def test_redlock_slow_node_counts_as_no_grant_within_the_timeout(
    clean_cluster: LocalCluster,
) -> None:
    # One node answers only after 2 s; a 50 ms per-node timeout must not wait for it.
    proxy = clean_cluster.proxy_name(1, "n5")
    clean_cluster.toxiproxy.add_toxic(ToxicSpec(proxy, "slow", "latency", {"latency": 2000}))
    lock = Redlock(clean_cluster.worker_endpoints(1), clock, Redlock.Options(timeout=50_000_000))
    started = time.monotonic()
    lease = lock.acquire("k", 5000)
    waited = time.monotonic() - started
    assert lease is not None and lease.grants == ("n1", "n2", "n3", "n4")
    assert waited < 1.0, f"acquire waited {waited:.2f}s for a node it should have given up on"


def test_redlock_validity_shrinks_by_the_time_acquiring_took(clean_cluster: LocalCluster) -> None:
    # 300 ms of latency on three nodes: the majority arrives late, validity is that much less.
    for node in ("n1", "n2", "n3"):
        spec = ToxicSpec(clean_cluster.proxy_name(1, node), "slow", "latency", {"latency": 300})
        clean_cluster.toxiproxy.add_toxic(spec)
    lock = Redlock(clean_cluster.worker_endpoints(1), clock, Redlock.Options(timeout=1_000_000_000))
    started = clock()
    lease = lock.acquire("k", 1000)
    finished = clock()
    assert lease is not None and lease.deadline is not None
    assert lease.grants == ("n1", "n2", "n3", "n4", "n5")
    # deadline = (moment the SETs went out) + ttl - drift: the 300 ms spent waiting is gone.
    sent_at = lease.deadline - 1_000_000_000 + drift_ns(1000)
    assert started <= sent_at <= finished
    assert finished - started >= 300_000_000
    assert lease.deadline - finished <= 1_000_000_000 - drift_ns(1000) - 300_000_000


def test_resource_sees_two_occupants(cluster: LocalCluster) -> None:
    resource = Resource(cluster.resource)
    assert resource.enter("r", "a").occupants == ["a"]
    assert sorted(resource.enter("r", "b").occupants) == ["a", "b"]
    resource.exit("r", "a")
    resource.exit("r", "b")
    assert resource.enter("r", "c").occupants == ["c"]
    resource.exit("r", "c")


def test_resource_rejects_a_stale_fencing_token(cluster: LocalCluster) -> None:
    resource = Resource(cluster.resource)
    first = resource.enter("f", "a", fencing=5)
    assert (first.accepted, first.highest, first.occupants) == (True, None, ["a"])
    resource.exit("f", "a")
    stale = resource.enter("f", "b", fencing=4)  # a paused holder waking up with token 4
    assert (stale.accepted, stale.highest, stale.occupants) == (False, 5, [])
    again = resource.enter("f", "c", fencing=5)  # the same token is not stale
    assert (again.accepted, again.highest) == (True, 5)
    resource.exit("f", "c")
    newer = resource.enter("f", "d", fencing=9)
    assert (newer.accepted, newer.highest) == (True, 5)
    resource.exit("f", "d")
    assert resource.enter("f", "e", fencing=8).highest == 9
