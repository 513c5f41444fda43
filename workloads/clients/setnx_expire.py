"""SETNX, then EXPIRE: a lock with a TTL set by a second, separate command.

    acquire:  SETNX key token        -> refused unless the reply is 1
              crash_between()        (the worker's hook: it may kill this process here)
              EXPIRE key ceil(ttl/1000)
    release:  GET key; if it is our token: DEL key

Claim illustrated: SETNX then EXPIRE is not atomic. A client that dies between the two
commands leaves a key with no TTL, which no one ever removes: a liveness failure, like
SETNX + DEL. (SET key token NX EX ttl made it one command in Redis 2.6.12.)

The release is the literature's naive one, GET then DEL: if the key expires between the
two and another client takes it, this DEL removes the other client's lock.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.one_node import OneNodeClient, OneNodeOptions
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.validity import validity_deadline


class SetnxExpireLock(OneNodeClient):
    """SETNX then EXPIRE as a second command (crash hook between); release GET+DEL"""

    name = "setnx-expire"
    redis_py_only = True

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: OneNodeOptions,
        discovery: Discovery | None = None,
    ) -> None:
        super().__init__(nodes, clock, options, discovery)
        # Called after a granted SETNX, before EXPIRE; the worker installs it.
        self.crash_between: Callable[[], None] | None = None

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        if not self.redis.setnx(key, token):
            return None
        if self.crash_between is not None:
            self.crash_between()
        self.redis.expire(key, math.ceil(ttl_ms / 1000))  # never shorter than ttl_ms
        return Lease(key, token, validity_deadline(started, ttl_ms), (self.node.name,))

    def release(self, lease: Lease) -> bool:
        if self.redis.get(lease.key) != lease.token.encode():
            return False
        return bool(self.redis.delete(lease.key))  # not atomic with the GET (see above)
