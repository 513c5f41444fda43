"""Redlock as much example code writes it: a majority, asked one node after another, and
no check of how long that took.

    token = 20 random bytes
    start = now()
    for each node, in turn: SET key token NX PX ttl   (a failed node counts as a no)
    if grants >= N/2 + 1: yes (the caller holds the lock; no validity is computed)
    else: release on all nodes and fail
    release: compare-and-delete on all nodes, in turn

Claim illustrated: the validity check is not optional. Without it, and with the nodes
asked sequentially, a slow majority grants a lease whose keys have already expired on
the first nodes asked, and the caller, told only "yes", goes on to use it. The lease
has no deadline (the algorithm gives none), so the checker counts it held until
release. Compare workloads/clients/redlock.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from redis.exceptions import RedisError

from lockharness.core.connect import single_try_client
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.clients.redlock import RedlockOptions, ReleaseUnknown
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.scripts import COMPARE_AND_DELETE

NODE_ERRORS = (RedisError, OSError)  # down, too slow, or an error reply: a no


class NaiveRedlock(DeclaredClient):
    """Redlock without the validity check, nodes asked one after another"""

    name = "redlock-naive"
    redis_py_only = True
    Options = RedlockOptions
    needs_masters = True

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: RedlockOptions,
        discovery: Discovery | None = None,  # independent masters: nothing to discover
    ) -> None:
        timeout_s = options.timeout / 1e9
        self.nodes = [(node.name, single_try_client(node, timeout_s)) for node in nodes]
        self.quorum = len(nodes) // 2 + 1
        self.clock = clock

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        grants = []
        for name, redis in self.nodes:
            try:
                if redis.set(key, token, nx=True, px=ttl_ms):
                    grants.append(name)
            except NODE_ERRORS:
                continue
        if len(grants) >= self.quorum:
            return Lease(key, token, None, tuple(grants))
        self._unlock_all(key, token)
        return None

    def release(self, lease: Lease) -> bool:
        return self._unlock_all(lease.key, lease.token)

    def _unlock_all(self, key: str, token: str) -> bool:
        deleted, answered = False, 0
        for _, redis in self.nodes:
            try:
                deleted |= redis.eval(COMPARE_AND_DELETE, 1, key, token) == 1
                answered += 1
            except NODE_ERRORS:
                continue
        if not answered:
            raise ReleaseUnknown(f"no node answered the release of {key}")
        return deleted

    def close(self) -> None:
        for _, redis in self.nodes:
            redis.close()
