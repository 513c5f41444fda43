"""Redlock, as on redis.io ("The Redlock algorithm"), over N independent masters.

    token    = 20 random bytes
    start    = now()
    for each node, concurrently: SET key token NX PX ttl   (per-node timeout << ttl)
    validity = ttl - (now() - start) - drift,  drift = ttl * 0.01 + 2 ms
    if grants >= N/2 + 1 and validity > 0: hold the lock until start + ttl - drift
    else: release on all nodes (even those that seemed to refuse) and fail
    release: compare-and-delete on all nodes

The random delay before a retry is the worker's job (workloads/worker.py), so that every
attempt is its own operation in the history.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import ClientOptions, SocketTimeout
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.fanout import FanOut
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.scripts import COMPARE_AND_DELETE
from lockharness.workloads.validity import validity_deadline

DEFAULT_TIMEOUT_NS = 50_000_000


class ReleaseUnknown(Exception):
    """No node answered the release: whether the lease is gone is unknown."""


class RedlockOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timeout: SocketTimeout = DEFAULT_TIMEOUT_NS


class Redlock(DeclaredClient):
    """Redlock: SET NX PX on N nodes concurrently, majority + validity, release on all"""

    name = "redlock"
    redis_py_only = True
    rank = 1
    Options = RedlockOptions
    needs_masters = True

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: RedlockOptions,
        discovery: Discovery | None = None,  # independent masters: nothing to discover
    ) -> None:
        self.nodes = FanOut(nodes, options.timeout / 1e9)
        self.quorum = len(nodes) // 2 + 1
        self.clock = clock

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        replies = self.nodes.call_all("SET", key, token, "NX", "PX", ttl_ms)
        granted = zip(self.nodes.nodes, replies, strict=True)
        grants = tuple(node.name for node, reply in granted if reply in (True, b"OK"))
        deadline = validity_deadline(started, ttl_ms)
        if len(grants) >= self.quorum and deadline > self.clock():
            return Lease(key, token, deadline, grants)
        self._unlock_all(key, token)
        return None

    def release(self, lease: Lease) -> bool:
        return self._unlock_all(lease.key, lease.token)

    def _unlock_all(self, key: str, token: str) -> bool:
        replies = self.nodes.call_all("EVAL", COMPARE_AND_DELETE, 1, key, token)
        if all(isinstance(reply, Exception) for reply in replies):
            raise ReleaseUnknown(f"no node answered the release of {key}: {replies[0]}")
        return any(reply == 1 for reply in replies)

    def close(self) -> None:
        self.nodes.close()
