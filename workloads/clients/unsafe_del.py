"""BROKEN ON PURPOSE: the single-instance lock released by a plain DEL.

    release:  DEL key      (no token check)

A holder that outlives its TTL deletes whatever lock is there now, usually someone
else's. It exists to prove the checker says invalid; never use it for real.
"""

from __future__ import annotations

from collections.abc import Sequence

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.clients.single import SingleInstanceLock, SingleOptions
from lockharness.workloads.one_node import OneNodeOptions
from lockharness.workloads.protocol import Clock, Lease


class UnsafeDelLock(SingleInstanceLock):
    """BROKEN on purpose: SET NX PX, release by plain DEL without a token check"""

    name = "unsafe-del"
    redis_py_only = True
    rank = 2
    Options = OneNodeOptions  # of single's options, a static node only

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: OneNodeOptions,
        discovery: Discovery | None = None,
    ) -> None:
        single = SingleOptions(timeout=options.timeout, node=options.node)
        super().__init__(nodes, clock, single, discovery)

    def release(self, lease: Lease) -> bool:
        return bool(self.nodes.for_release(lease.grants[0]).delete(lease.key))
