"""BROKEN ON PURPOSE: a single-instance lock released by GET, compare, then DEL.

    release(lease):
        if GET key == token: DEL key        # two round trips, not one script

The mistake: the check and the delete are two steps. A release at the lease's edge whose
GET still sees our token, and whose DEL arrives after the key expired and another client
took it, deletes that client's lock; a third gets in beside it.
"""

from __future__ import annotations

from lockharness.workloads.clients.single import SingleInstanceLock
from lockharness.workloads.protocol import Lease


class GetThenDel(SingleInstanceLock):
    """BROKEN on purpose: release by GET then DEL from the client"""

    def release(self, lease: Lease) -> bool:
        redis = self.nodes.for_release(lease.grants[0])
        if redis.get(lease.key) != lease.token.encode():
            return False
        return bool(redis.delete(lease.key))
