"""python-redis-lock 4.0.1 (`import redis_lock`), on one instance.

What the library does on `acquire(blocking=False)`: GET lock:key first (to raise
AlreadyAcquired if this very object holds it), then SET lock:key id NX EX expire, where
id = base64 of 18 random bytes and expire is in WHOLE seconds (int()). A refusal is logged
at WARNING. With auto_renewal, a daemon thread re-EXPIREs the key every expire * 2/3 s
while the Lock object lives; if a renewal fails, the thread dies with the exception and
the holder is not told. `release()` stops that thread, then a Lua script deletes the key
if it is still ours (and pushes to lock-signal:key to wake blocking waiters); it raises
NotAcquired if not.

The adapter translates: ttl_ms -> expire in seconds (a TTL that is not whole seconds is
refused with ValueError rather than silently truncated by the library); True -> a Lease
with the library's id as token and no deadline (None: the library gives no validity; with
auto_renewal the key outlives its expire while held); NotAcquired -> release False. The
Lock object is kept until release: its renewal thread holds only a weak reference to it.
The instance is fixed (option node) or found through Sentinel or a pointer, as for `single`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from msgspec import Meta

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.adapters.common import (
    OptionalLibrary,
    SingleNodeOptions,
    single_node,
)
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.versions.library import Library

redis_lock = OptionalLibrary("redis_lock", "python-redis-lock")  # the optional `clients` extra


class RenewalOptions(SingleNodeOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    auto_renewal: Annotated[bool, Meta(description="renew the key every expire*2/3 while held")] = (
        False
    )


class RenewingOptions(RenewalOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    auto_renewal: Annotated[bool, Meta(description="renew the key every expire*2/3 while held")] = (
        True
    )


class PythonRedisLock(DeclaredClient):
    """python-redis-lock 4.0.1 on one node (SET NX EX, whole seconds); no deadline"""

    name = "python-redis-lock"
    redis_py_only = True
    library = Library("pypi", "python-redis-lock", "4.0.1")
    Options: ClassVar[type[RenewalOptions]] = RenewalOptions
    ttl_step_ms = 1000  # the library's expire is in whole seconds

    @classmethod
    def unavailable(cls) -> str | None:
        return redis_lock.missing()

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: RenewalOptions,
        discovery: Discovery | None = None,
    ) -> None:
        self.module = redis_lock.load()
        self.nodes = single_node(nodes, options, discovery)
        self.auto_renewal = options.auto_renewal
        self.held: dict[str, Any] = {}  # a redis_lock.Lock per lease: release needs it

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        if ttl_ms % 1000:
            raise ValueError(f"python-redis-lock expires in whole seconds; ttl {ttl_ms} ms is not")
        node, redis = self.nodes.master()
        lock = self.module.Lock(redis, key, expire=ttl_ms // 1000, auto_renewal=self.auto_renewal)
        if not lock.acquire(blocking=False):
            return None
        self.held[lock.id] = lock
        return Lease(key, lock.id, None, (node,))

    def release(self, lease: Lease) -> bool:
        try:
            self.held.pop(lease.token).release()
        except self.module.NotAcquired:  # expired, or another client's lock is there now
            return False
        return True

    def close(self) -> None:
        self.nodes.close()


class RenewingPythonRedisLock(PythonRedisLock):
    """python-redis-lock 4.0.1 with auto_renewal: a thread re-EXPIREs the key while held

    The same, auto_renewal on unless the options say otherwise: a name of its own, so a
    suite's client matrix can run the library both ways.
    """

    name = "python-redis-lock-renewal"
    redis_py_only = True
    renews = True  # its auto_renewal thread
    Options = RenewingOptions
