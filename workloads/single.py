"""Single-instance lock (redis.io, "Correct implementation with a single instance").

    acquire:  SET key token NX PX ttl          -> held iff the reply is OK
    release:  EVAL compare-and-delete key token -> only the owner's token is removed

Safe on one always-up instance; nothing more is claimed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from workloads.connect import single_try_client
from workloads.endpoints import Endpoint
from workloads.protocol import Clock, Lease
from workloads.scripts import COMPARE_AND_DELETE
from workloads.validity import validity_deadline

DEFAULT_TIMEOUT_NS = 200_000_000


class SingleInstanceLock:
    def __init__(self, nodes: Sequence[Endpoint], clock: Clock, options: dict[str, object]) -> None:
        self.node = nodes[int(options.get("node", 1)) - 1]  # type: ignore[call-overload]
        timeout_s = int(options.get("timeout", DEFAULT_TIMEOUT_NS)) / 1e9  # type: ignore[call-overload]
        self.clock = clock
        self.redis = single_try_client(self.node, timeout_s)

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        if not self.redis.set(key, token, nx=True, px=ttl_ms):
            return None
        return Lease(key, token, validity_deadline(started, ttl_ms), (self.node.name,))

    def release(self, lease: Lease) -> bool:
        return bool(self.redis.eval(COMPARE_AND_DELETE, 1, lease.key, lease.token))

    def close(self) -> None:
        self.redis.close()
