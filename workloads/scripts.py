"""Lua scripts shared by the token-checking clients."""

# Delete the key only if it still holds our token (redis.io: "Correct implementation
# with a single instance"); returns 1 if deleted, 0 otherwise.
COMPARE_AND_DELETE = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end
"""

# Set the key's TTL to ARGV[2] ms only if it still holds our token ARGV[1] (Redlock's
# "extend": the redis.io page suggests a Lua script like the release one); 1 if extended.
COMPARE_AND_PEXPIRE = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end
"""

# Reentrant acquire. The value is "owner:count". A free key becomes "owner:1"; the same
# owner (ARGV[1]) bumps the count and gets a fresh TTL (ARGV[2] ms); anyone else is
# refused. Returns the new count, or 0 if refused.
REENTRANT_ACQUIRE = """
local value = redis.call("get", KEYS[1])
local count = 1
if value then
    local owner, held = string.match(value, "^(.*):(%d+)$")
    if owner ~= ARGV[1] then
        return 0
    end
    count = tonumber(held) + 1
end
redis.call("set", KEYS[1], ARGV[1] .. ":" .. count, "px", ARGV[2])
return count
"""

# Reentrant release: the owner (ARGV[1]) drops one level, keeping the TTL; at 0 the key
# is deleted. Returns the remaining count, or -1 if the key is not the owner's.
REENTRANT_RELEASE = """
local value = redis.call("get", KEYS[1])
if not value then
    return -1
end
local owner, held = string.match(value, "^(.*):(%d+)$")
if owner ~= ARGV[1] then
    return -1
end
local count = tonumber(held) - 1
if count <= 0 then
    redis.call("del", KEYS[1])
    return 0
end
redis.call("set", KEYS[1], ARGV[1] .. ":" .. count, "keepttl")
return count
"""

# Fencing for Redlock: on a node that still holds our token ARGV[1] for KEYS[1], INCR the
# per-key counter KEYS[2] and return it; elsewhere touch nothing and return false (nil).
FENCE_INCR = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("incr", KEYS[2])
else
    return false
end
"""
