"""py-sherlock's Redis lock, `sherlock.RedisLock` (sherlock 0.4.1), on one instance.

    acquire:  Lua SETNX key uuid4 + EXPIRE seconds   (RedisLock(key, client=..., expire=s),
              acquire(blocking=False))
    release:  Lua compare-and-delete; LockException when the token is no longer there
    extend:   renew(): Lua compare-and-EXPIRE back to ``expire``; False when not held

The adapter translates: ttl_ms -> ``expire`` in whole seconds (an extend renews to a TTL
of ttl_ms, so it sets ``expire`` first); LockException -> release False; renew()'s False
-> not extended. The library states no validity; its lock lives ``expire`` seconds from
the acquire (or the renew) that set it, so the lease's deadline is counted from when that
request was sent, as for `single`. Its token is the library's own uuid4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.adapters.common import OptionalLibrary, SingleNodeOptions, single_node
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.validity import validity_deadline
from lockharness.workloads.versions.library import Library

sherlock = OptionalLibrary("sherlock", "sherlock")  # the optional `clients` extra


class SherlockLock(DeclaredClient):
    """sherlock 0.4.1's RedisLock on one node (SETNX + EXPIRE in Lua, whole seconds); extend renew()"""  # noqa: E501

    name = "sherlock"
    redis_py_only = True
    library = Library("pypi", "sherlock", "0.4.1")
    Options = SingleNodeOptions
    ttl_step_ms = 1000  # the library's expire is in whole seconds

    @classmethod
    def unavailable(cls) -> str | None:
        return sherlock.missing()

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: SingleNodeOptions,
        discovery: Discovery | None = None,
    ) -> None:
        self.module = sherlock.load()
        self.clock = clock
        self.nodes = single_node(nodes, options, discovery)
        self.held: dict[str, Any] = {}  # a RedisLock per lease: release and renew need it

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        node, redis = self.nodes.master()
        lock = self.module.RedisLock(key, client=redis, expire=_seconds(ttl_ms), timeout=0)
        started = self.clock()
        if not lock.acquire(blocking=False):
            return None
        token = str(lock._owner)  # the uuid4 it stored (no public accessor)
        self.held[token] = lock
        return Lease(key, token, validity_deadline(started, ttl_ms), (node,))

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        lock = self.held[lease.token]
        lock.expire = _seconds(ttl_ms)
        started = self.clock()
        if not lock.renew():
            return None
        return Lease(lease.key, lease.token, validity_deadline(started, ttl_ms), lease.grants)

    def release(self, lease: Lease) -> bool:
        try:
            self.held.pop(lease.token).release()
        except self.module.LockException:  # expired, or another client's lock is there now
            return False
        return True

    def close(self) -> None:
        self.nodes.close()


def _seconds(ttl_ms: int) -> int:
    if ttl_ms % 1000:
        raise ValueError(f"sherlock expires in whole seconds; ttl {ttl_ms} ms is not")
    return ttl_ms // 1000
