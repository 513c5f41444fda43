"""SETNX + DEL: the oldest Redis lock (the SETNX page's first pattern), with no expiry.

    acquire:  SETNX key token        -> held iff the reply is 1
    release:  GET key; if it is our token: DEL key

Claim illustrated: it deadlocks when the holder crashes. Nothing ever expires the key, so
a holder that dies (or is cut off for good) holds the lock forever: a liveness failure,
not a safety one. The lease has no deadline.

The release is GET then DEL, two commands, as code of the pre-Lua era wrote it. Here the
gap between them is harmless: only the owner ever removes the key, so no one else can
take it in between.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from workloads.connect import single_try_client
from workloads.discovery import Discovery
from workloads.endpoints import Endpoint
from workloads.protocol import Clock, Lease

DEFAULT_TIMEOUT_NS = 200_000_000


class SetnxDelLock:
    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: dict[str, object],
        discovery: Discovery | None = None,  # one static node: nothing to discover
    ) -> None:
        timeout_s = int(options.get("timeout", DEFAULT_TIMEOUT_NS)) / 1e9  # type: ignore[call-overload]
        self.node = nodes[int(options.get("node", 1)) - 1]  # type: ignore[call-overload]
        self.redis = single_try_client(self.node, timeout_s)
        self.clock = clock

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:  # ttl_ms: ignored, no expiry
        token = os.urandom(20).hex()
        if not self.redis.setnx(key, token):
            return None
        return Lease(key, token, None, (self.node.name,))

    def release(self, lease: Lease) -> bool:
        if self.redis.get(lease.key) != lease.token.encode():
            return False
        return bool(self.redis.delete(lease.key))

    def close(self) -> None:
        self.redis.close()
