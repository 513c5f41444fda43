"""The lock zoo against real redis-servers reached through real Toxiproxy proxies: each
algorithm excludes a second client, lets only the owner release, and shows its feature."""

from __future__ import annotations

import time
from dataclasses import replace

import msgspec
import pytest
import redis

from lockharness.cluster.local import LocalCluster
from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.workloads.clients.redlock import Redlock, RedlockOptions
from lockharness.workloads.clients.redlock_extend import ExtendingRedlock
from lockharness.workloads.clients.redlock_fenced import FencedRedlock, fence_key
from lockharness.workloads.clients.redlock_naive import NaiveRedlock
from lockharness.workloads.clients.reentrant import ReentrantLock
from lockharness.workloads.clients.set_nx_watch import SetNxWatchLock
from lockharness.workloads.clients.setnx_del import SetnxDelLock
from lockharness.workloads.clients.setnx_expire import SetnxExpireLock
from lockharness.workloads.clients.setnx_getset import SetnxGetsetLock
from lockharness.workloads.one_node import OneNodeOptions
from lockharness.workloads.protocol import Lease, LockClient
from lockharness.workloads.registry import CLIENTS

ZOO = [
    "setnx-del",
    "setnx-expire",
    "setnx-getset",
    "set-nx-watch",
    "redlock-naive",
    "reentrant",
    "redlock-extend",
    "redlock-fenced",
]
SINGLE_NODE = {"setnx-del", "setnx-expire", "setnx-getset", "set-nx-watch", "reentrant"}


ONE_NODE = OneNodeOptions()


def clock() -> int:
    return time.monotonic_ns()


def direct(cluster: LocalCluster, index: int) -> redis.Redis:
    endpoint = cluster.nodes[index].endpoint
    return redis.Redis(host=endpoint.host, port=endpoint.port)


def value(cluster: LocalCluster, index: int, key: str) -> bytes:
    """A key's value on a node, read directly: bytes (no decode_responses), and set."""
    found = direct(cluster, index).get(key)
    assert isinstance(found, bytes), f"{key} on node {index}: {found!r}"
    return found


def build(name: str, cluster: LocalCluster, worker: int, **options: object) -> LockClient:
    info = CLIENTS[name]
    assert info.options_type is not None
    typed = msgspec.structs.replace(info.options_type(), **options)
    return info.factory()(cluster.worker_endpoints(worker), clock, typed)


def holders(cluster: LocalCluster, name: str) -> range:
    return range(1) if name in SINGLE_NODE else range(5)


@pytest.mark.parametrize("name", ZOO)
def test_second_client_is_refused_until_release(clean_cluster: LocalCluster, name: str) -> None:
    first, second = build(name, clean_cluster, 1), build(name, clean_cluster, 2)
    lease = first.acquire("k", 5000)
    assert lease is not None
    assert second.acquire("k", 5000) is None
    assert first.release(lease)
    assert all(direct(clean_cluster, i).get("k") is None for i in holders(clean_cluster, name))
    assert second.acquire("k", 5000) is not None
    first.close()
    second.close()


@pytest.mark.parametrize("name", ZOO)
def test_only_the_owner_releases(clean_cluster: LocalCluster, name: str) -> None:
    owner, other = build(name, clean_cluster, 1), build(name, clean_cluster, 2)
    lease = owner.acquire("k", 5000)
    assert lease is not None
    before = [direct(clean_cluster, i).get("k") for i in holders(clean_cluster, name)]
    # A lease of someone else's: a forged token; for setnx-getset, whose release trusts
    # only its own expiry, another client's expired lease.
    token = "1000:stale" if name == "setnx-getset" else "not-the-token"
    assert other.release(replace(lease, token=token)) is False
    assert [direct(clean_cluster, i).get("k") for i in holders(clean_cluster, name)] == before
    assert owner.release(lease)


def test_setnx_del_sets_no_ttl(clean_cluster: LocalCluster) -> None:
    lease = SetnxDelLock(clean_cluster.worker_endpoints(1), clock, SetnxDelLock.Options()).acquire(
        "k", 300
    )
    assert lease is not None and lease.deadline is None
    assert direct(clean_cluster, 0).pttl("k") == -1  # a dead holder blocks the key forever


def test_setnx_expire_crash_between_leaves_a_key_without_ttl(clean_cluster: LocalCluster) -> None:
    lock = SetnxExpireLock(clean_cluster.worker_endpoints(1), clock, SetnxExpireLock.Options())
    seen: list[int] = []
    lock.crash_between = lambda: seen.append(direct(clean_cluster, 0).pttl("k"))
    lease = lock.acquire("k", 3000)
    assert lease is not None and seen == [-1]  # the hook ran after SETNX, before EXPIRE
    assert 0 < direct(clean_cluster, 0).pttl("k") <= 3000

    def crash() -> None:
        raise SystemExit("killed between SETNX and EXPIRE")

    lock.crash_between = crash
    with pytest.raises(SystemExit):
        lock.acquire("k2", 3000)
    assert direct(clean_cluster, 0).get("k2") is not None
    assert direct(clean_cluster, 0).pttl("k2") == -1  # no one will ever free it


def _getset(cluster: LocalCluster, worker: int, wall_ms: int) -> SetnxGetsetLock:
    client = SetnxGetsetLock(cluster.worker_endpoints(worker), clock, SetnxGetsetLock.Options())
    client.wall_ms = lambda: wall_ms
    return client


def test_setnx_getset_recovers_an_expired_lock(clean_cluster: LocalCluster) -> None:
    direct(clean_cluster, 0).set("k", "5000:dead-holder")  # expired at 5000 ms
    lease = _getset(clean_cluster, 1, 10_000).acquire("k", 1000)
    assert lease is not None and lease.token.startswith("11001:")
    assert direct(clean_cluster, 0).get("k") == lease.token.encode()


def test_setnx_getset_racers_on_an_expired_lock_cannot_both_win(
    clean_cluster: LocalCluster,
) -> None:
    direct(clean_cluster, 0).set("k", "5000:dead-holder")
    slow, fast = _getset(clean_cluster, 1, 10_000), _getset(clean_cluster, 2, 10_000)
    won: list[Lease | None] = []
    # Both have seen the stale value; the fast one's GETSET lands first.
    slow.before_getset = lambda: won.append(fast.acquire("k", 1000))
    assert slow.acquire("k", 1000) is None
    assert won[0] is not None
    # The loser's GETSET overwrote the expiry (the pattern accepts it), but only one holds.
    assert value(clean_cluster, 0, "k").startswith(b"11001:")


def test_setnx_getset_a_clock_ahead_steals_a_live_lock(clean_cluster: LocalCluster) -> None:
    now = time.time_ns() // 1_000_000
    honest = _getset(clean_cluster, 1, now)
    ahead = _getset(clean_cluster, 2, now + 60_000)  # a minute fast
    held = honest.acquire("k", 5000)
    assert held is not None
    stolen = ahead.acquire("k", 5000)
    assert stolen is not None  # both now believe they hold "k": the clocks were trusted
    assert direct(clean_cluster, 0).get("k") == stolen.token.encode()
    assert _getset(clean_cluster, 2, now).acquire("k", 5000) is None  # an honest clock: live


def test_set_nx_watch_retries_on_a_concurrent_write(clean_cluster: LocalCluster) -> None:
    lock = SetNxWatchLock(clean_cluster.worker_endpoints(1), clock, SetNxWatchLock.Options())
    lease = lock.acquire("k", 1500)
    assert lease is not None and 0 < direct(clean_cluster, 0).pttl("k") <= 2000
    writes: list[object] = []

    def touch() -> None:  # a write between WATCH and EXEC, once: the first EXEC aborts
        if not writes:
            writes.append(direct(clean_cluster, 0).set("k", lease.token, keepttl=True))

    lock.before_exec = touch
    assert lock.release(lease) is True
    assert writes == [True] and direct(clean_cluster, 0).get("k") is None


def test_set_nx_watch_does_not_delete_a_lock_taken_during_release(
    clean_cluster: LocalCluster,
) -> None:
    lock = SetNxWatchLock(clean_cluster.worker_endpoints(1), clock, SetNxWatchLock.Options())
    lease = lock.acquire("k", 1500)
    assert lease is not None
    # Our lock is replaced by another owner's between WATCH and EXEC: the retry sees it.
    lock.before_exec = lambda: direct(clean_cluster, 0).set("k", "someone-else")
    assert lock.release(lease) is False
    assert direct(clean_cluster, 0).get("k") == b"someone-else"


def test_redlock_naive_grants_an_expired_lease_where_redlock_refuses(
    clean_cluster: LocalCluster,
) -> None:
    for node in ("n1", "n2", "n3"):
        spec = ToxicSpec(clean_cluster.proxy_name(1, node), "slow", "latency", {"latency": 400})
        clean_cluster.toxiproxy.add_toxic(spec)
    options = RedlockOptions(timeout=1_000_000_000)
    naive = NaiveRedlock(clean_cluster.worker_endpoints(1), clock, options)
    started = clock()
    lease = naive.acquire("k", 300)
    assert clock() - started > 300_000_000  # asking took longer than the TTL...
    assert lease is not None and lease.grants == ("n1", "n2", "n3", "n4", "n5")
    assert lease.deadline is None  # ...yet the caller is told only "yes"
    assert direct(clean_cluster, 0).get("k") is None  # and n1 has already forgotten it
    naive.close()
    for i in range(5):
        direct(clean_cluster, i).delete("k")
    assert Redlock(clean_cluster.worker_endpoints(1), clock, options).acquire("k", 300) is None


def test_reentrant_nests_and_unwinds(clean_cluster: LocalCluster) -> None:
    owner = ReentrantLock(clean_cluster.worker_endpoints(1), clock, ReentrantLock.Options())
    other = ReentrantLock(clean_cluster.worker_endpoints(2), clock, ReentrantLock.Options())
    node = direct(clean_cluster, 0)
    outer = owner.acquire("k", 5000)
    assert outer is not None and outer.depth == 1
    assert other.acquire("k", 5000) is None
    node.pexpire("k", 1000)
    inner = owner.acquire("k", 5000)
    assert inner is not None and inner.depth == 2 and inner.token == outer.token
    assert node.get("k") == f"{outer.token}:2".encode()
    assert node.pttl("k") > 1000  # re-acquiring refreshed the TTL
    assert other.acquire("k", 5000) is None
    assert other.release(replace(inner, token="not-the-owner")) is False
    assert owner.release(inner)
    assert node.get("k") == f"{outer.token}:1".encode() and node.pttl("k") > 0
    assert other.acquire("k", 5000) is None
    assert owner.release(outer)
    assert node.exists("k") == 0
    assert owner.release(outer) is False  # nothing left to release
    again = owner.acquire("k", 5000)
    assert again is not None and again.depth == 1 and again.token != outer.token


def test_redlock_extend_extends_a_bounded_number_of_times(clean_cluster: LocalCluster) -> None:
    lock = ExtendingRedlock(
        clean_cluster.worker_endpoints(1), clock, ExtendingRedlock.Options(max_extensions=2)
    )
    lease = lock.acquire("k", 1000)
    assert lease is not None and lease.deadline is not None
    for ttl_ms in (3000, 6000):  # each extension adds about 2 s, then 3 s
        extended = lock.extend(lease, ttl_ms)
        assert extended is not None and extended.deadline is not None
        assert extended.deadline > lease.deadline + 1_900_000_000
        assert all(direct(clean_cluster, i).pttl("k") > ttl_ms - 1000 for i in range(5))
        lease = extended
    assert lock.extend(lease, 9000) is None  # max_extensions reached
    assert all(direct(clean_cluster, i).pttl("k") <= 6000 for i in range(5))
    assert lock.release(lease)


def test_redlock_extend_refuses_a_lease_whose_key_vanished(clean_cluster: LocalCluster) -> None:
    lock = ExtendingRedlock(clean_cluster.worker_endpoints(1), clock, ExtendingRedlock.Options())
    lease = lock.acquire("k", 5000)
    assert lease is not None
    for i in range(3):  # gone from a majority (expired, or a node restarted empty)
        direct(clean_cluster, i).delete("k")
    assert lock.extend(lease, 5000) is None
    assert direct(clean_cluster, 0).exists("k") == 0 and direct(clean_cluster, 3).pttl("k") > 0


def test_redlock_fenced_tokens_increase_and_are_the_max_of_the_grants(
    clean_cluster: LocalCluster,
) -> None:
    lock = FencedRedlock(clean_cluster.worker_endpoints(1), clock, FencedRedlock.Options())
    direct(clean_cluster, 4).set(fence_key("k"), 41)  # one node is ahead of the others
    seen = []
    for _ in range(3):
        lease = lock.acquire("k", 5000)
        assert lease is not None and lease.fencing is not None
        counters = [int(value(clean_cluster, i, fence_key("k"))) for i in range(5)]
        assert lease.fencing == max(counters)
        seen.append(lease.fencing)
        assert lock.release(lease)
    assert seen == [42, 43, 44]
    # Cut off from n5: the max of the granting nodes n1-n4 only.
    clean_cluster.toxiproxy.set_enabled(clean_cluster.proxy_name(1, "n5"), False)
    lease = lock.acquire("k", 5000)
    assert lease is not None and lease.grants == ("n1", "n2", "n3", "n4")
    assert lease.fencing == 4 and direct(clean_cluster, 4).get(fence_key("k")) == b"44"
