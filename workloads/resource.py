"""The resource: a redis-server outside the fault domain that sees who is inside.

enter adds the caller's token to the key's occupant set and returns every occupant, so an
overlap is seen from the resource's side, independent of any client's clock.

With a fencing token, the resource also behaves like storage that checks fencing tokens:
it remembers the highest token it has seen per key and rejects a write whose token is
lower. A section writes twice: on enter (rejected: the caller is not let in) and on exit,
its last write after the work (rejected: the work is not committed). A client paused
inside its section wakes up to that second check. Without a token every write goes in.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from lockharness.core.endpoints import Endpoint

# The fencing check, shared by both writes. KEYS[2]: highest-token key; ARGV[2]: the
# write's fencing token ("" for none). Leaves `accepted` (1/0) and `highest` (the highest
# token seen before this write, false for none).
_FENCE = """
local highest = redis.call("get", KEYS[2])
local accepted = 1
if ARGV[2] ~= "" then
    local fencing = tonumber(ARGV[2])
    if highest and fencing < tonumber(highest) then
        accepted = 0
    elseif not highest or fencing > tonumber(highest) then
        redis.call("set", KEYS[2], ARGV[2])
    end
end
"""
# KEYS: occupants hash, highest-token key. ARGV: token, fencing token.
# Returns {accepted, highest before ("" for none), occupants...}.
_ENTER = (
    _FENCE
    + """
if accepted == 1 then redis.call("hset", KEYS[1], ARGV[1], 1) end
return {accepted, highest or "", unpack(redis.call("hkeys", KEYS[1]))}
"""
)
# The caller leaves whether or not its last write is taken. Returns {accepted, highest}.
_EXIT = (
    _FENCE
    + """
redis.call("hdel", KEYS[1], ARGV[1])
return {accepted, highest or ""}
"""
)


@dataclass(frozen=True)
class Write:
    accepted: bool
    highest: int | None  # the highest fencing token seen before this write


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

    def exit(self, key: str, token: str, fencing: int | None = None) -> Write:
        keys = (f"occupants:{key}", f"highest-fencing:{key}")
        accepted, highest = self.redis.eval(
            _EXIT, 2, *keys, token, "" if fencing is None else fencing
        )
        return Write(bool(accepted), int(highest) if highest else None)

    def close(self) -> None:
        self.redis.close()
