"""BROKEN ON PURPOSE: Redlock whose extend sets the key again instead of checking it.

    extend(lease, ttl):
        start = now()
        on every node: SET key token PX ttl          # no check that the key is still ours
        if set on >= N/2 + 1 nodes: hold until start + ttl - drift

The mistake: "the lease is ours until its deadline, so writing our token again is
harmless". An extend whose SET arrives after the keys expired (issued near the deadline,
on a slow link) overwrites the lock another client took in between, and both hold it.
"""

from __future__ import annotations

from dataclasses import replace

from lockharness.workloads.clients.redlock_extend import ExtendingRedlock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.validity import validity_deadline


class LateExtend(ExtendingRedlock):
    """BROKEN on purpose: extend by SET key token PX ttl, without a token check"""

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        started = self.clock()
        if lease.deadline is None or started >= lease.deadline:
            return None
        replies = self.nodes.call_all("SET", lease.key, lease.token, "PX", ttl_ms)
        nodes = zip(self.nodes.nodes, replies, strict=True)
        grants = tuple(node.name for node, reply in nodes if reply in (True, b"OK"))
        if len(grants) < self.quorum:
            return None
        return replace(lease, deadline=validity_deadline(started, ttl_ms), grants=grants)
