"""BROKEN ON PURPOSE: a single-instance lock that retries a timed-out acquire without NX.

    acquire:
        SET key token NX PX ttl
        on a timeout: SET key token PX ttl      # "the first may have gone through"

The mistake: when a request times out, whether it executed is unknown, and the retry
settles it by force. If the first never arrived (a request lost, a node that answered too
late) and another client holds the key, the retry overwrites that client's lock.
"""

from __future__ import annotations

import os

from redis.exceptions import ConnectionError, TimeoutError

from lockharness.workloads.clients.single import SingleInstanceLock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.validity import validity_deadline


class RetryOverwrite(SingleInstanceLock):
    """BROKEN on purpose: a timed-out SET NX is retried as a plain SET"""

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        node, redis = self.nodes.master()
        try:
            if not redis.set(key, token, nx=True, px=ttl_ms):
                return None
        except (TimeoutError, ConnectionError):
            redis.set(key, token, px=ttl_ms)  # make sure it is ours (it may already be)
        return Lease(key, token, validity_deadline(started, ttl_ms), (node,))
