"""SETNX + timestamp + GETSET (the SETNX page's "Handling deadlocks" pattern).

    expiry = wall_ms() + ttl + 1                         (the client's clock, Unix ms)
    acquire:  SETNX key expiry                           -> held if 1
              else GET key; if it is not in the past     -> refused
              GETSET key expiry; held iff the old value is in the past (else refused)
    release:  DEL key, only if our own expiry has not passed yet

Claim illustrated: it recovers locks whose holder died (no TTL is ever set; a stale
timestamp is taken over), but only by trusting every client's clock. A client whose
clock runs ahead sees a live lock as expired and takes it: invalid under clock skew.
GETSET makes two clients that both saw the same stale value agree on one winner: the
second one gets back the first one's fresh expiry and is refused. (The loser has still
overwritten the winner's expiry with its own, slightly different one; the pattern
accepts that.)

The value written is "expiry:random". The timestamp alone is the literature's value, but
two clients writing in the same millisecond would then share one lease token, and the
history could not tell their leases apart; the random suffix keeps tokens unique, and
every comparison reads only the timestamp before the colon. The client clock is
``wall_ms`` (an attribute), so a nemesis or a test can skew it per client.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.one_node import OneNodeClient, OneNodeOptions
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.validity import validity_deadline


def system_wall_ms() -> int:
    return time.time_ns() // 1_000_000


def expiry_of(value: bytes | str) -> int:
    """The timestamp part of a stored value or a token."""
    text = value.decode() if isinstance(value, bytes) else value
    return int(text.partition(":")[0])


class SetnxGetsetLock(OneNodeClient):
    """SETNX key expiry (client clock), take stale locks over by GETSET; trusts clocks"""

    name = "setnx-getset"
    redis_py_only = True

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: OneNodeOptions,
        discovery: Discovery | None = None,
    ) -> None:
        super().__init__(nodes, clock, options, discovery)
        self.wall_ms: Callable[[], int] = system_wall_ms  # the worker or a test may skew it
        # Called after GET saw a stale value, before GETSET (tests use it to race).
        self.before_getset: Callable[[], None] | None = None

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        started, now = self.clock(), self.wall_ms()
        token = f"{now + ttl_ms + 1}:{os.urandom(8).hex()}"
        lease = Lease(key, token, validity_deadline(started, ttl_ms), (self.node.name,))
        if self.redis.setnx(key, token):
            return lease
        current = self.redis.get(key)
        if current is None or expiry_of(current) > now:
            return None  # just released, or held and not expired: try again later
        if self.before_getset is not None:
            self.before_getset()
        old = self.redis.getset(key, token)
        # None: the key was gone when GETSET set ours, so no one else holds it either.
        return lease if old is None or expiry_of(old) <= now else None

    def release(self, lease: Lease) -> bool:
        if expiry_of(lease.token) <= self.wall_ms():
            return False  # ours has expired: the key may be someone else's by now
        return bool(self.redis.delete(lease.key))
