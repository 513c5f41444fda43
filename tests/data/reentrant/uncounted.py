"""A reentrant lock whose release ignores the hold count: any release by the owner deletes
the key, so an inner release frees the lock while the outer hold goes on (the mistake
go-zero's RedisLock fixed in #1338). Written here, for the test that a reentrant client's
holders re-enter under the built-in models (tests/test_explore_nesting.py)."""

from __future__ import annotations

from lockharness.workloads.clients.reentrant import ReentrantLock
from lockharness.workloads.protocol import Lease

OWNER_DEL = """
local value = redis.call("get", KEYS[1])
if value and string.match(value, "^(.*):%d+$") == ARGV[1] then
    return redis.call("del", KEYS[1])
end
return -1
"""


class UncountedRelease(ReentrantLock):
    """reentrant acquire, but a release by the owner deletes the key whatever its count"""

    name = "uncounted-release"

    def release(self, lease: Lease) -> bool:
        gone = int(self.redis.eval(OWNER_DEL, 1, lease.key, lease.token)) >= 0
        self.tokens.pop(lease.key, None)
        return gone
