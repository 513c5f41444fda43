"""A tiny lock client speaking the JSON Lines protocol (docs/client-protocol.md), for the
protocol's tests: SET NX PX on the first node, released by Lua compare-and-delete,
extended by a compare-and-PEXPIRE. Broken on purpose with one argument:

    tiny_lock.py                correct
    tiny_lock.py garbage        prints a line that is not JSON before each acquire reply
    tiny_lock.py hang           never replies to an acquire
    tiny_lock.py exit           exits instead of replying to the second acquire
    tiny_lock.py slow-start     sleeps 2 s before reading init
    tiny_lock.py wrong-id       replies to acquire with another id
    tiny_lock.py refuse-init    refuses init
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import redis

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


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "correct"
    if mode == "slow-start":
        time.sleep(2)
    node: redis.Redis | None = None
    acquires = 0
    for line in sys.stdin:
        request = json.loads(line)
        op, rid = request.get("op"), request.get("id")
        if op == "init":
            if mode == "refuse-init":
                reply({"id": rid, "error": "this program speaks no protocol of yours"})
                return 1
            first = request["nodes"][0]
            node = redis.Redis(host=first["host"], port=first["port"], socket_timeout=1)
            reply({"id": rid, "ok": True, "name": f"tiny-lock ({mode})", "abilities": ["extend"]})
        elif node is None:
            reply({"id": rid, "error": "init first"})
        elif op == "acquire":
            acquires += 1
            received = time.monotonic()
            if mode == "hang":
                time.sleep(3600)
            if mode == "exit" and acquires == 2:
                return 3
            if mode == "garbage":
                print("acquiring...", flush=True)
            token = uuid.uuid4().hex
            granted = node.set(request["key"], token, nx=True, px=request["ttl_ms"])
            if not granted:
                reply({"id": rid, "granted": False})
                continue
            elapsed_ms = (time.monotonic() - received) * 1000
            rid = rid + 1000 if mode == "wrong-id" else rid
            reply(
                {
                    "id": rid,
                    "granted": True,
                    "token": token,
                    "validity_ms": request["ttl_ms"] - elapsed_ms,
                    "redis_key": request["key"],
                    "value": token,
                    "fencing": None,
                }
            )
        elif op == "release":
            lease = request["lease"]
            released = node.eval(RELEASE, 1, lease["key"], lease["token"])
            reply({"id": rid, "released": bool(released)})
        elif op == "extend":
            lease = request["lease"]
            extended = node.eval(EXTEND, 1, lease["key"], lease["token"], request["ttl_ms"])
            reply({"id": rid, "granted": bool(extended), "validity_ms": request["ttl_ms"]})
        elif op == "close":
            reply({"id": rid, "ok": True})
            return 0
        else:
            reply({"id": rid, "error": f"unknown op {op!r}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
