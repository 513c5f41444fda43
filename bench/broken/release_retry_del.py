"""BROKEN ON PURPOSE: a single-instance lock whose release falls back to a plain DEL.

    release(lease):
        EVAL compare-and-delete key token
        on a timeout: DEL key                   # "make sure it is gone"

The mistake: a release whose reply was lost has most likely run already. By the time the
fallback DEL arrives the key may be another client's, and deleting it lets a third in.
"""

from __future__ import annotations

from redis.exceptions import ConnectionError, TimeoutError

from lockharness.workloads.clients.single import SingleInstanceLock
from lockharness.workloads.protocol import Lease
from lockharness.workloads.scripts import COMPARE_AND_DELETE


class ReleaseRetryDel(SingleInstanceLock):
    """BROKEN on purpose: a release that times out is retried as a plain DEL"""

    def release(self, lease: Lease) -> bool:
        redis = self.nodes.for_release(lease.grants[0])
        try:
            return bool(redis.eval(COMPARE_AND_DELETE, 1, lease.key, lease.token))
        except (TimeoutError, ConnectionError):
            return bool(redis.delete(lease.key))  # the key must not outlive us
