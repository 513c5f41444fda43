"""BROKEN ON PURPOSE: the single-instance lock released by a plain DEL.

    release:  DEL key      (no token check)

A holder that outlives its TTL deletes whatever lock is there now, usually someone
else's. It exists to prove the checker says invalid; never use it for real.
"""

from __future__ import annotations

from workloads.protocol import Lease
from workloads.single import SingleInstanceLock


class UnsafeDelLock(SingleInstanceLock):
    def release(self, lease: Lease) -> bool:
        return bool(self.nodes.for_release(lease.grants[0]).delete(lease.key))
