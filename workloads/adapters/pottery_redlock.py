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

from lockharness.core.connect import single_try_client
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.adapters.common import (
    MULTI_TIMEOUT_NS,
    NOT_INSTALLED,
    timeout_s,
)
from lockharness.workloads.client_info import TIMEOUT_OPTION
from lockharness.workloads.grant_observer import GrantObserver
from lockharness.workloads.protocol import Clock, Lease

try:
    from pottery import Redlock, ReleaseUnlockedLock
except ImportError as missing:  # the optional `clients` extra
    raise ImportError(NOT_INSTALLED.format("pottery")) from missing


class PotteryRedlock:
    """pottery 3.0.1's Redlock over N nodes, non-blocking; no deadline; grants observed"""

    NAME = "pottery-redlock"
    OPTIONS = {
        "timeout": TIMEOUT_OPTION,
        "raise_on_redis_errors": (
            "bool",
            "raise when a majority of nodes errored (library default: false)",
        ),
    }
    needs_masters = True

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: dict[str, object],
        discovery: Discovery | None = None,  # independent masters: nothing to discover
    ) -> None:
        timeout = timeout_s(options, MULTI_TIMEOUT_NS)
        self.masters = [single_try_client(node, timeout) for node in nodes]
        self.raise_on_redis_errors = bool(options.get("raise_on_redis_errors", False))
        self.observer = GrantObserver(nodes, timeout)
        self.held: dict[str, Redlock] = {}  # a Redlock object is one lease: release needs it

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        lock = Redlock(
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
        except ReleaseUnlockedLock as refused:
            if refused.redis_errors:
                raise
            return False
        return True

    def close(self) -> None:
        self.observer.close()
        for master in self.masters:
            master.close()
