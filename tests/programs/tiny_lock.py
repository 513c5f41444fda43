"""A tiny lock client speaking the JSON Lines protocol (docs/client-protocol.md), for the
protocol's tests: SET NX PX on the first node, released by Lua compare-and-delete,
extended by a compare-and-PEXPIRE. It says one line on stderr at init and at each refusal.
Version 1 unless the mode says 2; broken on purpose with one argument:

    tiny_lock.py                correct (version 1)
    tiny_lock.py v2             correct, version 2: `refused` with a reason; a binary value
                                (random bytes, sent as value_base64; the token is their hex)
    tiny_lock.py v2-lost        version 2; an extend is refused, with lost: true
    tiny_lock.py protocol-3     says it speaks protocol 3
    tiny_lock.py garbage        prints a line that is not JSON before each acquire reply
    tiny_lock.py hang           never replies to an acquire
    tiny_lock.py exit           exits (code 3) instead of replying to the second acquire
    tiny_lock.py exit-at-once   exits (code 3) instead of replying to any acquire
    tiny_lock.py slow-start     sleeps 2 s before reading init
    tiny_lock.py wrong-id       replies to acquire with another id
    tiny_lock.py refuse-init    refuses init
    tiny_lock.py no-abilities   says no abilities at init (it extends if asked, all the same)
"""

from __future__ import annotations

import base64
import json
import os
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


def log(message: str) -> None:
    sys.stderr.write(f"tiny-lock: {message}\n")
    sys.stderr.flush()


REQUIRED = {"acquire": ("key", "ttl_ms"), "release": ("lease",), "extend": ("lease", "ttl_ms")}


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "correct"
    v2 = mode.startswith("v2")
    if mode == "slow-start":
        time.sleep(2)
    node: redis.Redis | None = None
    acquires = 0
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            reply({"id": None, "error": "not a JSON line"})
            continue
        op, rid = request.get("op"), request.get("id")
        # A malformed request gets an error reply, and the program goes on serving.
        missing = [field for field in REQUIRED.get(op, ()) if field not in request]
        if missing:
            reply({"id": rid, "error": f"malformed {op}: no {', '.join(missing)}"})
            continue
        if op == "init":
            if mode == "refuse-init":
                reply({"id": rid, "error": "this program speaks no protocol of yours"})
                return 1
            first = request["nodes"][0]
            node = redis.Redis(host=first["host"], port=first["port"], socket_timeout=1)
            log(f"init: {first['name']} at {first['host']}:{first['port']}")
            abilities = [] if mode == "no-abilities" else ["extend"]
            ready = {"id": rid, "ok": True, "name": f"tiny-lock ({mode})", "abilities": abilities}
            if v2 or mode == "protocol-3":
                ready["protocol"] = 3 if mode == "protocol-3" else 2
            reply(ready)
        elif node is None:
            reply({"id": rid, "error": "init first"})
        elif op == "acquire":
            acquires += 1
            received = time.monotonic()
            if mode == "hang":
                time.sleep(3600)
            if (mode == "exit" and acquires == 2) or mode == "exit-at-once":
                return 3
            if mode == "garbage":
                print("acquiring...", flush=True)
            value: str | bytes = os.urandom(16) if v2 else uuid.uuid4().hex
            token = value.hex() if isinstance(value, bytes) else value
            granted = node.set(request["key"], value, nx=True, px=request["ttl_ms"])
            if not granted:
                log(f"acquire {request['key']}: held by another client")
                refusal = {"refused": "held by another client"} if v2 else {"granted": False}
                reply({"id": rid, **refusal})
                continue
            elapsed_ms = (time.monotonic() - received) * 1000
            rid = rid + 1000 if mode == "wrong-id" else rid
            stored = (
                {"value_base64": base64.b64encode(value).decode()}
                if isinstance(value, bytes)
                else {"value": value}
            )
            reply(
                {
                    "id": rid,
                    "granted": True,
                    "token": token,
                    "validity_ms": request["ttl_ms"] - elapsed_ms,
                    "redis_key": request["key"],
                    **stored,
                    "fencing": None,
                }
            )
        elif op == "release":
            lease = request["lease"]
            released = node.eval(RELEASE, 1, lease["key"], stored_value(lease["token"], v2))
            reply({"id": rid, "released": bool(released)})
        elif op == "extend":
            lease = request["lease"]
            if mode == "v2-lost":
                node.eval(RELEASE, 1, lease["key"], stored_value(lease["token"], v2))
                reply({"id": rid, "refused": "extend failed; the lock was deleted", "lost": True})
                continue
            args = (lease["key"], stored_value(lease["token"], v2), request["ttl_ms"])
            extended = node.eval(EXTEND, 1, *args)
            reply({"id": rid, "granted": bool(extended), "validity_ms": request["ttl_ms"]})
        elif op == "close":
            reply({"id": rid, "ok": True})
            return 0
        else:
            reply({"id": rid, "error": f"unknown op {op!r}"})
    return 0


def stored_value(token: str, v2: bool) -> str | bytes:
    """The value a token names: in version 2 mode, the bytes its hex spells (any token, a
    predecessor's too, so the value is derived, never looked up)."""
    return bytes.fromhex(token) if v2 else token


if __name__ == "__main__":
    sys.exit(main())
