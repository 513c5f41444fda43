"""The resource: a redis-server outside the fault domain that sees who is inside.

enter adds the caller's token to the key's occupant set and returns every occupant, so an
overlap is seen from the resource's side, independent of any client's clock.
"""

from __future__ import annotations

import redis

from workloads.endpoints import Endpoint

_ENTER = """
redis.call("hset", KEYS[1], ARGV[1], 1)
return redis.call("hkeys", KEYS[1])
"""


class Resource:
    def __init__(self, endpoint: Endpoint) -> None:
        # Never faulted, so a generous timeout: a failure here is a harness problem.
        self.redis = redis.Redis(
            host=endpoint.host, port=endpoint.port, socket_timeout=5, decode_responses=True
        )

    def enter(self, key: str, token: str) -> list[str]:
        """Occupants now, the caller included."""
        return list(self.redis.eval(_ENTER, 1, f"occupants:{key}", token))

    def exit(self, key: str, token: str) -> None:
        self.redis.hdel(f"occupants:{key}", token)

    def close(self) -> None:
        self.redis.close()
