"""Testing a lock class of your own from pytest, with lockharness's plug-in.

Installing lockharness installs the plug-in: `pytest examples/plugin/test_my_lock.py`.
MyLock is the example lock beside this file (my_lock.py); import your own instead.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest
import redis
from lockharness import Lease, validity_deadline

from my_lock import MyLock, MyLockOptions

if TYPE_CHECKING:  # the fixtures' types, for annotations (docs/api.md)
    from lockharness import Cluster, Nemesis, RunScenario


# A whole scenario run: real Redis behind Toxiproxy, 12 clients in 4 worker processes
# contending for one key, every operation recorded and checked for overlapping sections.
@pytest.mark.lockharness(seeds=2)  # two test items, [seed1] and [seed2]
def test_my_lock_is_safe_on_one_instance(lockharness_run: RunScenario) -> None:
    result = lockharness_run("single-baseline", client=MyLock, duration="2s")
    assert result.verdict == "valid"  # if not: the first witness, right under this line
    assert result.stats.cycles > 0


class NoNxLock(MyLock):
    """Broken on purpose: SET without NX takes the lock even while someone holds it."""

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        self.redis.set(key, token, px=ttl_ms)  # no nx=True: always "granted"
        deadline = validity_deadline(started, ttl_ms)
        return Lease(key=key, token=token, deadline=deadline, grants=(self.node.name,))


def test_a_lock_without_nx_is_caught(lockharness_run: RunScenario) -> None:
    result = lockharness_run("single-baseline", client=NoNxLock, duration="2s", seed=1)
    assert result.verdict == "invalid"
    assert result.witnesses[0].kind in ("overlap", "resource")
    assert not result.expectation_met  # the scenario claims a correct lock stays valid


# Your own workload: a cluster (5 masters, each behind Toxiproxy) and faults by hand.
def test_a_node_restarted_empty_forgets_the_lock(lock_cluster: Cluster, nemesis: Nemesis) -> None:
    options = MyLockOptions()  # node 1, as a scenario's defaults give it
    alice = MyLock(lock_cluster.worker_endpoints(1), time.monotonic_ns, options)  # on n1
    bob = MyLock(lock_cluster.worker_endpoints(2), time.monotonic_ns, options)
    lease = alice.acquire("k", ttl_ms=10_000)
    assert lease is not None
    assert bob.acquire("k", ttl_ms=10_000) is None  # alice holds it
    # n1 is down inside the block and restarted at its end.
    with nemesis.kill("n1"), pytest.raises(redis.ConnectionError):
        bob.acquire("k", ttl_ms=10_000)
    # No persistence: n1 came back empty, so bob is granted the lock alice still holds.
    assert bob.acquire("k", ttl_ms=10_000) is not None
    assert not alice.release(lease)
    alice.close()
    bob.close()
