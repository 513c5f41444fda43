"""A reentrant lock on one instance: the owner may take it again while holding it.

    value = owner ":" count          (owner: a random token this client keeps per key)
    acquire:  EVAL reentrant-acquire  -> free: owner:1; ours: count + 1 and a fresh TTL;
                                         someone else's: refused
    release:  EVAL reentrant-release  -> ours: count - 1, DEL at 0; else: not ours

Claim illustrated: reentrancy (as in Redisson's RLock) needs the owner's identity and the
count in one atomic step, so both live in the value and both steps are Lua. Every nested
lease shares the owner's token and reports its nesting in ``Lease.depth``. The owner
token lives only while the client holds the key: the outermost release forgets it, so
the next outermost acquire gets a fresh token.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.one_node import OneNodeClient, OneNodeOptions
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.scripts import REENTRANT_ACQUIRE, REENTRANT_RELEASE
from lockharness.workloads.validity import validity_deadline


class ReentrantLock(OneNodeClient):
    """reentrant lock on one node: value owner:count, Lua acquire/release, TTL refreshed"""

    name = "reentrant"
    redis_py_only = True
    reentrant = True  # the Reentrant protocol: nothing in the methods shows it

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: OneNodeOptions,
        discovery: Discovery | None = None,
    ) -> None:
        super().__init__(nodes, clock, options, discovery)
        self.tokens: dict[str, str] = {}  # key -> this client's owner token while it holds key

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = self.tokens.get(key) or os.urandom(20).hex()
        started = self.clock()
        depth = int(self.redis.eval(REENTRANT_ACQUIRE, 1, key, token, ttl_ms))
        if depth == 0:
            return None
        self.tokens[key] = token
        deadline = validity_deadline(started, ttl_ms)
        return Lease(key, token, deadline, (self.node.name,), depth=depth)

    def release(self, lease: Lease) -> bool:
        left = int(self.redis.eval(REENTRANT_RELEASE, 1, lease.key, lease.token))
        if left <= 0 and self.tokens.get(lease.key) == lease.token:
            del self.tokens[lease.key]  # gone (released or lost): the next acquire starts afresh
        return left >= 0
