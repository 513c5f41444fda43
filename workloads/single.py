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

from lockharness.core.discovery import Discovery, master_finder
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import DISCOVERY_OPTION, TIMEOUT_OPTION
from lockharness.workloads.protocol import Clock, Lease
from lockharness.workloads.scripts import COMPARE_AND_DELETE
from lockharness.workloads.validity import validity_deadline

DEFAULT_TIMEOUT_NS = 200_000_000
DEFAULT_WAIT_NS = 100_000_000


class SingleInstanceLock:
    """SET key token NX PX ttl on one node; release by Lua compare-and-delete"""

    NAME = "single"
    OPTIONS = {
        "timeout": TIMEOUT_OPTION,
        "node": ("int", "which node (1-based) holds the lock (discovery: static)"),
        "discovery": DISCOVERY_OPTION,
        "wait_replicas": ("int", "WAIT for this many replicas after acquiring (0: no)"),
        "wait_timeout": ("duration", "how long WAIT may take (default 100ms)"),
    }

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: dict[str, object],
        discovery: Discovery | None = None,
    ) -> None:
        timeout_s = int(options.get("timeout", DEFAULT_TIMEOUT_NS)) / 1e9  # type: ignore[call-overload]
        mode, node = str(options.get("discovery", "static")), int(options.get("node", 1))  # type: ignore[call-overload]
        # Which node is "the" instance: fixed, or the master Sentinel or a pointer names.
        self.nodes = master_finder(mode, nodes, node, discovery, timeout_s)
        self.clock = clock
        self.wait_replicas = int(options.get("wait_replicas", 0))  # type: ignore[call-overload]
        self.wait_ms = int(options.get("wait_timeout", DEFAULT_WAIT_NS)) // 1_000_000  # type: ignore[call-overload]

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
