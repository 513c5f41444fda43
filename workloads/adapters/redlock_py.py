"""redlock-py 1.0.8 (`import redlock`), the 2016 reference Redlock for Python, over N nodes.

What the library does in `lock(resource, ttl)` with retry_count=1: a token of 22 chars
from `random` (not a CSPRNG); SET resource token NX PX ttl on each node IN TURN; errors
from a node count as a refusal. validity = ttl - elapsed - (ttl * 0.01 + 2), elapsed read
from the WALL clock (time.time(), whole ms). With N/2+1 grants and validity > 0 it returns
Lock(validity, resource, token), but raises MultipleRedlockException instead when any node
errored (leaving the lock set on the majority). Otherwise it unlocks every node, SLEEPS
retry_delay (even after its last try) and returns False. `unlock` is a compare-and-delete
on each node; it logs every error and returns None: it never says whether it removed
anything.

The adapter translates: False -> None; a Lock -> a Lease with the library's token and
deadline = when lock() returned + validity (validity is already net of the elapsed time,
so it counts from the return, in the history's monotonic clock). The library does not
say which nodes granted, so the adapter observes it (workloads/grant_observer.py: one
GET per node, one round trip, after the acquire).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from msgspec import Meta

from lockharness.core.connect import single_try_client
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.adapters.common import (
    MultiNodeOptions,
    OptionalLibrary,
)
from lockharness.workloads.client_info import Timeout
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.grant_observer import GrantObserver
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.versions.library import Library

redlock = OptionalLibrary("redlock", "redlock-py")  # the optional `clients` extra

DEFAULT_RETRY_DELAY_NS = 200_000_000  # the library's own default


class RedlockPyOptions(MultiNodeOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    retry_delay: Annotated[
        Timeout, Meta(description="the library's sleep after a refused round (its default)")
    ] = DEFAULT_RETRY_DELAY_NS


class RedlockPy(DeclaredClient):
    """redlock-py 1.0.8 over N nodes in turn, one round; wall-clock validity; grants observed"""

    name = "redlock-py"
    redis_py_only = True
    library = Library("pypi", "redlock-py", "1.0.8")
    Options = RedlockPyOptions
    needs_masters = True

    @classmethod
    def unavailable(cls) -> str | None:
        return redlock.missing()

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: RedlockPyOptions,
        discovery: Discovery | None = None,  # independent masters: nothing to discover
    ) -> None:
        self.module = redlock.load()
        timeout = options.timeout / 1e9
        self.servers = [single_try_client(node, timeout) for node in nodes]
        # The library accepts client objects as they are (URLs and dicts it would turn
        # into default, retrying clients). retry_count=1: one round; retries are the worker's.
        # retry_delay: the library reads 0 as "its default", so 0 cannot turn the sleep off.
        delay_s = options.retry_delay / 1e9
        self.dlm = self.module.Redlock(self.servers, retry_count=1, retry_delay=delay_s)
        self.observer = GrantObserver(nodes, timeout)
        self.clock = clock

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        lock = self.dlm.lock(key, ttl_ms)
        returned = self.clock()
        if not lock:
            return None
        token = lock.key.decode()
        deadline = returned + lock.validity * 1_000_000
        return Lease(key, token, deadline, self.observer.granted(key, token))

    def release(self, lease: Lease) -> bool:
        # The Lock is plain data (validity, resource, token): rebuilt from the lease.
        self.dlm.unlock(self.module.Lock(0, lease.key, lease.token.encode()))
        return True  # unlock returns None and swallows errors: no signal to translate

    def close(self) -> None:
        self.observer.close()
        for server in self.servers:
            server.close()
