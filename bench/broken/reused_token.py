"""BROKEN ON PURPOSE: Redlock with one token per client, and a key holding it counted.

    token = 20 random bytes, once per client (not per acquire)
    acquire: on every node, SET key token NX PX ttl; a node that refuses but whose
             GET key == token counts too ("our earlier attempt's reply was lost")
    release, validity: as Redlock

The mistake: the lost-reply recovery is right only if a token names one acquire. A release
that misses a node leaves that key behind; the same client's next acquire counts it,
though it expires on its old TTL, well before the new lease's deadline, and another client
takes that node and a majority with it.
"""

from __future__ import annotations

import os
from functools import cached_property

from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.validity import validity_deadline


class ReusedToken(Redlock):
    """BROKEN on purpose: one token per client; a key already holding it counts as a grant"""

    @cached_property
    def token(self) -> str:
        """This client's one token, drawn at its first acquire."""
        return os.urandom(20).hex()

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        started = self.clock()
        replies = self.nodes.call_all("SET", key, self.token, "NX", "PX", ttl_ms)
        refused = [i for i, reply in enumerate(replies) if reply in (None, False)]
        if refused:  # already ours from an attempt whose reply we never saw?
            owners = self.nodes.call_all("GET", key)
            for i in refused:
                if owners[i] == self.token.encode():
                    replies[i] = b"OK"
        nodes = zip(self.nodes.nodes, replies, strict=True)
        grants = tuple(node.name for node, reply in nodes if reply in (True, b"OK"))
        deadline = validity_deadline(started, ttl_ms)
        if len(grants) >= self.quorum and deadline > self.clock():
            return Lease(key, self.token, deadline, grants)
        self._unlock_all(key, self.token)
        return None
