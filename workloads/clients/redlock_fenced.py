"""Redlock that also hands out a fencing token, on top of workloads/clients/redlock.py.

    acquire as Redlock; then, if it succeeded:
        on every node, concurrently: EVAL fence-incr key token fence:key
            (INCR fence:key only where the node still holds our token: the granting nodes)
        if >= N/2 + 1 nodes incremented and the lease is still valid:
            fencing = max of the counters they returned
        else: release on all nodes and fail
    release: as Redlock

Claim illustrated: fencing tokens (Kleppmann, "How to do distributed locking") stop a
paused client's stale writes, if the resource checks them and the tokens only grow.
Taking the maximum over a majority makes them grow as long as any two majorities share
a node that remembers its counter. Whether they stay monotonic under faults (a node
restarted empty, a minority that forgot) is what the harness finds out, not what this
module assumes.
"""

from __future__ import annotations

from dataclasses import replace

from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.scripts import FENCE_INCR


def fence_key(key: str) -> str:
    return f"fence:{key}"


class FencedRedlock(Redlock):
    """Redlock plus a fencing token: max of INCR fence:key over a majority of holders"""

    name = "redlock-fenced"  # Options and needs_masters: Redlock's
    redis_py_only = True

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        lease = super().acquire(key, ttl_ms)
        if lease is None:
            return None
        replies = self.nodes.call_all("EVAL", FENCE_INCR, 2, key, fence_key(key), lease.token)
        counters = [reply for reply in replies if isinstance(reply, int)]
        if len(counters) < self.quorum or lease.deadline is None or self.clock() >= lease.deadline:
            self.release(lease)
            return None
        return replace(lease, fencing=max(counters))
