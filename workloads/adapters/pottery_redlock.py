"""pottery 3.0.1's `Redlock` over N independent masters (one redis.Redis per node).

What the library does on `acquire(blocking=False)`: a fresh uuid4 token; SET redlock:key
token NX PX auto_release_time on every master at once from a new thread pool; as soon as
N/2+1 said yes and ttl - drift - elapsed is positive (perf_counter) it returns True
WITHOUT waiting for the other masters (their SETs finish in the background). Otherwise it
releases on all masters and returns False. Redis errors are logged and counted as refusals
unless raise_on_redis_errors. `release()` is a compare-and-delete on all masters, done
once a majority deleted; ReleaseUnlockedLock otherwise.

The adapter translates: ttl_ms -> auto_release_time in seconds; True -> a Lease whose
token is the library's uuid4 (`_uuid`: the value it stores, no public accessor);
ReleaseUnlockedLock -> False, unless it carries Redis errors, then it is raised (the
outcome is unknown, not "not held"). pottery computes a validity but does not return it:
deadline None. pottery does not say which masters granted either, so the adapter observes
it (workloads/grant_observer.py: one GET per node, one round trip, after the acquire).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from msgspec import Meta

from lockharness.core.connect import single_try_client
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.adapters.common import (
    MultiNodeOptions,
    OptionalLibrary,
)
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.grant_observer import GrantObserver
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.versions.library import Library

pottery = OptionalLibrary("pottery", "pottery")  # the optional `clients` extra


class PotteryOptions(MultiNodeOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    raise_on_redis_errors: Annotated[
        bool, Meta(description="raise when a majority of nodes errored (the library's default)")
    ] = False


class PotteryRedlock(DeclaredClient):
    """pottery 3.0.1's Redlock over N nodes, non-blocking; no deadline; grants observed"""

    name = "pottery-redlock"
    redis_py_only = True
    library = Library("pypi", "pottery", "3.0.1")
    Options = PotteryOptions
    needs_masters = True

    @classmethod
    def unavailable(cls) -> str | None:
        return pottery.missing()

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: PotteryOptions,
        discovery: Discovery | None = None,  # independent masters: nothing to discover
    ) -> None:
        self.module = pottery.load()
        timeout = options.timeout / 1e9
        self.masters = [single_try_client(node, timeout) for node in nodes]
        self.raise_on_redis_errors = options.raise_on_redis_errors
        self.observer = GrantObserver(nodes, timeout)
        self.held: dict[str, Any] = {}  # a pottery Redlock is one lease: release needs it

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        lock = self.module.Redlock(
            key=key,
            masters=self.masters,
            raise_on_redis_errors=self.raise_on_redis_errors,
            auto_release_time=ttl_ms / 1000,
        )
        if not lock.acquire(blocking=False):  # blocking=True (the default) retries forever
            return None
        token = lock._uuid
        self.held[token] = lock
        return Lease(key, token, None, self.observer.granted(lock.key, token))

    def release(self, lease: Lease) -> bool:
        try:
            self.held.pop(lease.token).release()
        except self.module.ReleaseUnlockedLock as refused:
            if refused.redis_errors:
                raise
            return False
        return True

    def close(self) -> None:
        self.observer.close()
        for master in self.masters:
            master.close()
