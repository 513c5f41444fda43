"""SET NX EX, released with an optimistic transaction instead of a Lua script.

    acquire:  SET key token NX EX ceil(ttl/1000)   -> held iff the reply is OK
    release:  WATCH key; GET key
              if it is not our token: UNWATCH; not ours
              MULTI; DEL key; EXEC               -> a WatchError (the key was written
                                                    since WATCH) retries, a bounded number
                                                    of times

Claim illustrated: compare-and-delete without Lua. WATCH makes the DEL conditional on
the key being untouched since the GET, so the release removes only the owner's lock,
like the Lua script does. (EX has one-second granularity: the key lives at least ttl.)
If every attempt meets a concurrent write, the release gives up with an exception: the
worker records an unknown outcome.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Annotated

from msgspec import Meta
from redis.exceptions import WatchError

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.one_node import OneNodeClient, OneNodeOptions
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.validity import validity_deadline

DEFAULT_RELEASE_RETRIES = 3


class ReleaseContended(Exception):
    """Every WATCH ... EXEC attempt met a concurrent write: outcome unknown."""


class WatchOptions(OneNodeOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    release_retries: Annotated[int, Meta(description="retries after a WatchError on release")] = (
        DEFAULT_RELEASE_RETRIES
    )


class SetNxWatchLock(OneNodeClient):
    """SET NX EX; release by WATCH/GET/MULTI/DEL/EXEC, retried on a concurrent write"""

    name = "set-nx-watch"
    redis_py_only = True
    Options = WatchOptions

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: WatchOptions,
        discovery: Discovery | None = None,
    ) -> None:
        super().__init__(nodes, clock, options, discovery)
        self.attempts = options.release_retries + 1
        # Called between the GET and MULTI of each release attempt (tests write the key there).
        self.before_exec: Callable[[], object] | None = None  # its result is ignored

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        if not self.redis.set(key, token, nx=True, ex=math.ceil(ttl_ms / 1000)):
            return None
        return Lease(key, token, validity_deadline(started, ttl_ms), (self.node.name,))

    def release(self, lease: Lease) -> bool:
        with self.redis.pipeline() as pipe:
            for _ in range(self.attempts):
                try:
                    pipe.watch(lease.key)
                    if pipe.get(lease.key) != lease.token.encode():
                        pipe.unwatch()
                        return False
                    if self.before_exec is not None:
                        self.before_exec()
                    pipe.multi()
                    pipe.delete(lease.key)
                    return bool(pipe.execute()[0])
                except WatchError:
                    continue  # written since WATCH: look again
        raise ReleaseContended(f"{lease.key}: written during each of {self.attempts} releases")
