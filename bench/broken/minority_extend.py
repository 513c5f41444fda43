"""BROKEN ON PURPOSE: Redlock whose extend counts any node that extended.

    extend(lease, ttl):
        start = now()
        on every node: EVAL compare-and-pexpire key token ttl
        if extended on >= 1 node and now() < deadline: hold until start + ttl - drift

The mistake: an acquire needs a majority, but "an extend only refreshes a lock we already
hold". Extended while a majority is out of reach, the lease outlives its keys there, and
another client acquires those nodes as they expire.
"""

from __future__ import annotations

from dataclasses import replace

from lockharness.workloads.clients.redlock_extend import ExtendingRedlock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.scripts import COMPARE_AND_PEXPIRE
from lockharness.workloads.validity import validity_deadline


class MinorityExtend(ExtendingRedlock):
    """BROKEN on purpose: an extend on any one node counts"""

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        started = self.clock()
        if lease.deadline is None or started >= lease.deadline:
            return None
        script = ("EVAL", COMPARE_AND_PEXPIRE, 1, lease.key, lease.token, ttl_ms)
        replies = self.nodes.call_all(*script)
        nodes = zip(self.nodes.nodes, replies, strict=True)
        grants = tuple(node.name for node, reply in nodes if reply == 1)
        if not grants or self.clock() >= lease.deadline:
            return None
        return replace(lease, deadline=validity_deadline(started, ttl_ms), grants=grants)
