"""Single-instance lock (redis.io, "Correct implementation with a single instance").

    acquire:  SET key token NX PX ttl          -> held iff the reply is OK
    release:  EVAL compare-and-delete key token -> only the owner's token is removed

Safe on one always-up instance; nothing more is claimed. On the replicated topology
"the instance" is whichever node is master (found through Sentinel or a pointer), and
with `wait_replicas` the client also waits (WAIT) until that many replicas have the key,
or gives the lease up.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Annotated, ClassVar

from msgspec import Meta

from lockharness.core.discovery import Discovery, master_finder
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import (
    ClientOptions,
    DiscoveryMode,
    NodeNumber,
    SocketTimeout,
    Timeout,
)
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.scripts import COMPARE_AND_DELETE
from lockharness.workloads.validity import validity_deadline

DEFAULT_TIMEOUT_NS = 200_000_000
DEFAULT_WAIT_NS = 100_000_000


class SingleOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timeout: SocketTimeout = DEFAULT_TIMEOUT_NS
    node: Annotated[
        NodeNumber, Meta(description="which node (1-based) holds the lock (discovery: static)")
    ] = 1
    discovery: DiscoveryMode = "static"
    wait_replicas: Annotated[
        int, Meta(description="WAIT for this many replicas after acquiring (0: no)")
    ] = 0
    wait_timeout: Annotated[Timeout, Meta(description="how long WAIT may take")] = DEFAULT_WAIT_NS


class SingleInstanceLock(DeclaredClient):
    """SET key token NX PX ttl on one node; release by Lua compare-and-delete"""

    name = "single"
    redis_py_only = True
    rank = 0  # listed first: the simplest lock
    # Wider than SingleOptions: unsafe-del, a subclass, takes only part of them.
    Options: ClassVar[type[ClientOptions]] = SingleOptions

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: SingleOptions,
        discovery: Discovery | None = None,
    ) -> None:
        # Which node is "the" instance: fixed, or the master Sentinel or a pointer names.
        timeout_s = options.timeout / 1e9
        self.nodes = master_finder(options.discovery, nodes, options.node, discovery, timeout_s)
        self.clock = clock
        self.wait_replicas = options.wait_replicas
        self.wait_ms = options.wait_timeout // 1_000_000

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        token = os.urandom(20).hex()
        started = self.clock()
        node, redis = self.nodes.master()
        if not redis.set(key, token, nx=True, px=ttl_ms):
            return None
        lease = Lease(key, token, validity_deadline(started, ttl_ms), (node,))
        if (
            self.wait_replicas
            and redis.execute_command("WAIT", self.wait_replicas, self.wait_ms) < self.wait_replicas
        ):
            self.release(lease)  # not on enough replicas in time: do not use it
            return None
        return lease

    def release(self, lease: Lease) -> bool:
        redis = self.nodes.for_release(lease.grants[0])
        return bool(redis.eval(COMPARE_AND_DELETE, 1, lease.key, lease.token))

    def close(self) -> None:
        self.nodes.close()
