"""Redlock with extension (redis.io: "Making the algorithm more reliable: Extending the
lock"), on top of workloads/clients/redlock.py.

    acquire, release: as Redlock
    extend(lease, ttl):
        if the lease was extended max_extensions times, or its deadline passed: refuse
        start = now()
        on every node, concurrently: EVAL compare-and-pexpire key token ttl
        if extended on >= N/2 + 1 nodes and now() < the lease's current deadline:
            the lease now holds until start + ttl - drift
        else: refuse (the lease keeps the validity it had)

Claim illustrated: a holder can keep a lock past one TTL without ever letting go, and
extension is as safe as acquiring only if it follows the same rules: a majority, within
the current validity, and a bounded number of times so that a stuck client cannot hold
the lock forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated

from msgspec import Meta

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.clients.redlock import Redlock, RedlockOptions
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.scripts import COMPARE_AND_PEXPIRE
from lockharness.workloads.validity import validity_deadline

DEFAULT_MAX_EXTENSIONS = 3


class ExtendingOptions(RedlockOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    max_extensions: Annotated[int, Meta(description="how many times one lease may be extended")] = (
        DEFAULT_MAX_EXTENSIONS
    )


class ExtendingRedlock(Redlock):
    """Redlock plus extend: compare-and-pexpire on a majority within validity, bounded"""

    name = "redlock-extend"
    redis_py_only = True
    Options = ExtendingOptions

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: ExtendingOptions,
        discovery: Discovery | None = None,
    ) -> None:
        super().__init__(nodes, clock, options, discovery)
        self.max_extensions = options.max_extensions
        self.extensions: dict[str, int] = {}  # lease token -> times extended so far

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        done = self.extensions.get(lease.token, 0)
        started = self.clock()
        if done >= self.max_extensions or lease.deadline is None or started >= lease.deadline:
            return None
        script = ("EVAL", COMPARE_AND_PEXPIRE, 1, lease.key, lease.token, ttl_ms)
        replies = self.nodes.call_all(*script)
        extended = zip(self.nodes.nodes, replies, strict=True)
        grants = tuple(node.name for node, reply in extended if reply == 1)
        if len(grants) < self.quorum or self.clock() >= lease.deadline:
            return None
        self.extensions[lease.token] = done + 1
        return replace(lease, deadline=validity_deadline(started, ttl_ms), grants=grants)

    def release(self, lease: Lease) -> bool:
        self.extensions.pop(lease.token, None)
        return super().release(lease)
