"""redis-py's own lock, `redis.lock.Lock` (redis-py 8.1), on one instance.

    acquire:  SET key uuid1-hex NX PX timeout   (Redis.lock(key, timeout=ttl_s, blocking=False))
    release:  Lua compare-and-delete; LockNotOwnedError when the token is no longer there

The adapter translates: ttl_ms -> `timeout` in seconds (the library converts back with
int(timeout * 1000), so a TTL whose seconds are not exact in binary can lose 1 ms);
LockNotOwnedError -> release False. The library says nothing about validity, so the lease
has no deadline (None). Its token is the library's own (uuid1 hex). The instance is
fixed (option node) or found through Sentinel or a pointer, as for `single`.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.adapters.common import SingleNodeOptions, single_node
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.versions.library import Library


class RedisPyLock(DeclaredClient):
    """redis-py 8.1.0's redis.lock.Lock on one node (SET NX PX, Lua release); no deadline"""

    name = "redis-py-lock"
    redis_py_only = True
    library = Library("pypi", "redis", "8.1.0")
    Options = SingleNodeOptions

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: SingleNodeOptions,
        discovery: Discovery | None = None,
    ) -> None:
        self.nodes = single_node(nodes, options, discovery)
        # The library's Lock keeps its token (thread-locally: one client per worker thread,
        # which acquires and releases), so release needs the object acquire made.
        self.held: dict[str, Lock] = {}

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        node, redis = self.nodes.master()
        lock = redis.lock(key, timeout=ttl_ms / 1000, blocking=False)
        if not lock.acquire():
            return None
        token = lock.local.token.decode()
        self.held[token] = lock
        return Lease(key, token, None, (node,))

    def release(self, lease: Lease) -> bool:
        try:
            self.held.pop(lease.token).release()
        except LockNotOwnedError:  # expired, or another client's lock is there now
            return False
        return True

    def close(self) -> None:
        self.nodes.close()
