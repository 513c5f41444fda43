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
