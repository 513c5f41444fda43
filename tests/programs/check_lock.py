"""A lock client for `lockharness client-check`'s tests: SET NX PX on the first node under
a prefixed key (``mutex:<key>``, as many libraries store it, reported as ``redis_key``),
released by a compare-and-delete, extended by a compare-and-PEXPIRE. Correct with no
argument; with one, it breaks one rule of the protocol, and client-check must fail that
rule's step and no other:

    hide-prefix        reports the worker's key as redis_key, not the key it stored
    long-validity      a validity twice the TTL
    grant-held         grants a key someone holds (SET without NX)
    foreign-release    releases whatever holds the key (a plain DEL)
    release-twice      says released: true again for a lease it released
    extend-noop        says granted to an extend without doing it
    own-leases-only    serves only the leases this instance granted (not a predecessor's)
    same-token         the same token again for a key it acquired before
    crash-malformed    crashes on a request it cannot serve
    strict-init        refuses init when a node does not answer
    close-stays        answers close but keeps running

and two that speak protocol version 2 (say so in their init reply): ``v2``, correct, which
refuses a held key with a reason; ``announce-2``, which still answers ``granted: false``
(version 1's refusal), so the version-2 step fails.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import redis

PREFIX = "mutex:"
RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)
EXTEND = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
)


def reply(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Lock:
    def __init__(self, mode: str, nodes: list[dict[str, object]]) -> None:
        self.mode = mode
        first = nodes[0]
        self.node = redis.Redis(host=str(first["host"]), port=int(str(first["port"])))
        self.granted: set[str] = set()  # tokens this instance handed out
        self.released: set[str] = set()  # and released
        self.tokens: dict[str, str] = {}  # same-token: the token of each key it acquired

    def acquire(self, request: dict[str, object]) -> dict[str, object]:
        key, ttl = request.get("key"), request.get("ttl_ms")
        if not isinstance(key, str) or not isinstance(ttl, int):
            if self.mode == "crash-malformed":
                raise SystemExit(f"no key or ttl_ms in {request}")
            return {"error": "acquire needs key (a string) and ttl_ms (an integer)"}
        received = time.monotonic()
        token = self.tokens.get(key) or uuid.uuid4().hex
        if self.mode == "same-token":
            self.tokens[key] = token  # and the next acquire of the key gets it again
        nx = self.mode != "grant-held"
        if not self.node.set(PREFIX + key, token, nx=nx, px=ttl):
            if self.mode == "v2":
                return {"refused": f"{PREFIX + key} is held by another client"}
            return {"granted": False}
        self.granted.add(token)
        validity = ttl - (time.monotonic() - received) * 1000
        reported = key if self.mode == "hide-prefix" else PREFIX + key
        return {
            "granted": True,
            "token": token,
            "validity_ms": validity * 2 if self.mode == "long-validity" else validity,
            "redis_key": reported,
            "value": token,
            "fencing": None,
        }

    def release(self, lease: dict[str, str]) -> dict[str, object]:
        key, token = PREFIX + lease["key"], lease["token"]
        if self.mode == "own-leases-only" and token not in self.granted:
            return {"released": False}
        if self.mode == "release-twice" and token in self.released:
            return {"released": True}
        if self.mode == "foreign-release":
            return {"released": bool(self.node.delete(key))}
        released = bool(self.node.eval(RELEASE, 1, key, token))
        if released:
            self.released.add(token)
        return {"released": released}

    def extend(self, lease: dict[str, str], ttl: int) -> dict[str, object]:
        key, token = PREFIX + lease["key"], lease["token"]
        if self.mode == "extend-noop":
            return {"granted": True, "validity_ms": ttl}
        if self.mode == "own-leases-only" and token not in self.granted:
            return {"granted": False}
        extended = self.node.eval(EXTEND, 1, key, token, ttl)
        return {"granted": bool(extended), "validity_ms": ttl}


def init(mode: str, request: dict[str, object]) -> Lock | str:
    nodes = request["nodes"]
    assert isinstance(nodes, list)
    if mode == "strict-init":
        for node in nodes:
            try:
                redis.Redis(host=node["host"], port=node["port"], socket_timeout=1).ping()
            except redis.RedisError as e:
                return f"node {node['name']} does not answer: {e}"
    return Lock(mode, nodes)


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "correct"
    lock: Lock | None = None
    for line in sys.stdin:
        request = json.loads(line)
        op, rid = request.get("op"), request.get("id")
        if op == "init":
            started = init(mode, request)
            if isinstance(started, str):
                reply({"id": rid, "error": started})
                return 1
            lock = started
            said: dict[str, object] = {"ok": True, "name": f"check-lock ({mode})"}
            said |= {"abilities": ["extend"]}
            if mode in ("announce-2", "v2"):
                said["protocol"] = 2
            reply({"id": rid, **said})
        elif lock is None:
            reply({"id": rid, "error": "init first"})
        elif op == "acquire":
            reply({"id": rid, **lock.acquire(request)})
        elif op == "release":
            reply({"id": rid, **lock.release(request["lease"])})
        elif op == "extend":
            reply({"id": rid, **lock.extend(request["lease"], request["ttl_ms"])})
        elif op == "close":
            reply({"id": rid, "ok": True})
            if mode != "close-stays":
                return 0
        elif mode == "crash-malformed":
            return 2
        else:
            reply({"id": rid, "error": f"unknown op {op!r}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
