"""The resource: a redis-server outside the fault domain that sees who is inside.

enter adds the caller's token to the key's occupant set and returns every occupant, so an
overlap is seen from the resource's side, independent of any client's clock.

With a fencing token, the resource also behaves like storage that checks fencing tokens:
it remembers the highest token it has seen per key and rejects a write whose token is
lower (the caller is then not let in). Without one, every write is let in.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from workloads.endpoints import Endpoint

# KEYS: occupants hash, highest-token key. ARGV: token, fencing token ("" for none).
# Returns {accepted (1/0), highest token seen before ("" for none), occupants...}.
_ENTER = """
local highest = redis.call("get", KEYS[2])
if ARGV[2] ~= "" then
    local fencing = tonumber(ARGV[2])
    if highest and fencing < tonumber(highest) then
        return {0, highest, unpack(redis.call("hkeys", KEYS[1]))}
    end
    if not highest or fencing > tonumber(highest) then
        redis.call("set", KEYS[2], ARGV[2])
    end
end
redis.call("hset", KEYS[1], ARGV[1], 1)
return {1, highest or "", unpack(redis.call("hkeys", KEYS[1]))}
"""


@dataclass(frozen=True)
class Entry:
    occupants: list[str]  # who is inside now (the caller too, if accepted)
    accepted: bool
    highest: int | None  # the highest fencing token seen before this write


class Resource:
    def __init__(self, endpoint: Endpoint) -> None:
        # Never faulted, so a generous timeout: a failure here is a harness problem.
        self.redis = redis.Redis(
            host=endpoint.host, port=endpoint.port, socket_timeout=5, decode_responses=True
        )

    def enter(self, key: str, token: str, fencing: int | None = None) -> Entry:
        keys = (f"occupants:{key}", f"highest-fencing:{key}")
        reply = self.redis.eval(_ENTER, 2, *keys, token, "" if fencing is None else fencing)
        accepted, highest, *occupants = reply
        return Entry(list(occupants), bool(accepted), int(highest) if highest else None)

    def exit(self, key: str, token: str) -> None:
        self.redis.hdel(f"occupants:{key}", token)

    def close(self) -> None:
        self.redis.close()
