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

from lockharness.workloads.one_node import OneNodeClient
from lockharness.workloads.protocol import Lease


class SetnxDelLock(OneNodeClient):
    """SETNX key token, release by DEL; no expiry: a crashed holder blocks forever"""

    name = "setnx-del"
    redis_py_only = True

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:  # ttl_ms: ignored, no expiry
        token = os.urandom(20).hex()
        if not self.redis.setnx(key, token):
            return None
        return Lease(key, token, None, (self.node.name,))

    def release(self, lease: Lease) -> bool:
        if self.redis.get(lease.key) != lease.token.encode():
            return False
        return bool(self.redis.delete(lease.key))
