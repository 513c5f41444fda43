"""BROKEN ON PURPOSE: the single-instance lock released by a plain DEL.

    release:  DEL key      (no token check)

A holder that outlives its TTL deletes whatever lock is there now, usually someone
else's. It exists to prove the checker says invalid; never use it for real.
"""

from __future__ import annotations

from lockharness.workloads.client_info import NODE_OPTION, TIMEOUT_OPTION
from lockharness.workloads.protocol import Lease
from lockharness.workloads.single import SingleInstanceLock


class UnsafeDelLock(SingleInstanceLock):
    """BROKEN on purpose: SET NX PX, release by plain DEL without a token check"""

    NAME = "unsafe-del"
    OPTIONS = {"timeout": TIMEOUT_OPTION, "node": NODE_OPTION}  # of single's, a static node only

    def release(self, lease: Lease) -> bool:
        return bool(self.nodes.for_release(lease.grants[0]).delete(lease.key))
