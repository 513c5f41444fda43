"""BROKEN ON PURPOSE: Redlock that dates the validity from when the replies came back.

    start = now()
    for each node: SET key token NX PX ttl
    if grants >= N/2 + 1: hold until now() + ttl - drift     # now(), not start

The mistake: the keys were set while the requests were in flight, so each expires ttl after
it was set, not ttl after the last reply. A slow acquire (a node's reply delayed) gives a
lease that outlives its keys by the time the acquire took.
"""

from __future__ import annotations

import os

from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.validity import validity_deadline


class ValidityFromEnd(Redlock):
    """BROKEN on purpose: validity counted from the end of the acquire, not its start"""

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        replies = self.nodes.call_all("SET", key, token, "NX", "PX", ttl_ms)
        nodes = zip(self.nodes.nodes, replies, strict=True)
        grants = tuple(node.name for node, reply in nodes if reply in (True, b"OK"))
        if len(grants) >= self.quorum:
            return Lease(key, token, validity_deadline(self.clock(), ttl_ms), grants)
        self._unlock_all(key, token)
        return None
