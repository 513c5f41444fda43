"""An example lock-client plug-in for lockharness, written from scratch as a user would.

The algorithm is redis.io's "correct implementation with a single instance":

    acquire:  SET key token NX PX ttl      -> held iff the reply is OK
    release:  EVAL compare-and-delete      -> deletes the key only if it still holds our token

A scenario names it by module and class; the module is found because it sits beside the
scenario file (my-lock.yaml):

    client:
      class: "my_lock:MyLock"
      options: {timeout: 100ms, node: 1}

Run it with `lockharness run examples/plugin/my-lock.yaml`. docs/clients.md's "Writing your
own lock client (plug-ins)" describes the protocol this class implements.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Annotated

import redis

# lockharness's public API (docs/api.md): all a plug-in needs, from the package itself.
from lockharness import (
    ClientOptions,  # the base of the options a scenario may give
    DeclaredClient,  # the declaration's defaults
    Endpoint,  # a node: name ("n1"), host, port
    Lease,  # what acquire hands back
    Timeout,  # a duration option: "100ms", read as int nanoseconds
    validity_deadline,  # until when a lease may be trusted
)
from msgspec import Meta
from redis.backoff import NoBackoff
from redis.retry import Retry

# Delete the key only if it still holds our token, in one step on the server. A GET then
# a DEL from the client could delete a lock someone else took in between.
RELEASE_SCRIPT = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end
"""

DEFAULT_TIMEOUT_NS = 100_000_000  # 100 ms: well below any sensible TTL


class MyLockOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The options a scenario may give under client.options, checked like a built-in
    client's before the run starts: a msgspec Struct (types, defaults, bounds, and a
    description each). A duration (Timeout) is written "100ms" and arrives as an int of
    nanoseconds."""

    timeout: Annotated[Timeout, Meta(description="socket timeout for each request")] = (
        DEFAULT_TIMEOUT_NS
    )
    node: Annotated[int, Meta(description="which node (1-based) holds the lock")] = 1


class MyLock(DeclaredClient):
    """Single-instance SET NX PX lock with a Lua compare-and-delete release (example)."""

    Options = MyLockOptions
    needs_masters = False  # one instance, not a lock spread over independent masters
    reentrant = False  # a second acquire by the same holder is refused

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Callable[[], int],
        options: MyLockOptions,  # read from the scenario, defaults filled in
        discovery: object = None,  # replicated topology only; this class ignores it
    ) -> None:
        # The harness builds one instance per client thread: no locking needed inside.
        self.node = nodes[options.node - 1]  # reached through this worker's proxy to it
        self.clock = clock  # the history's time base: ns since the run started
        timeout_s = options.timeout / 1e9
        self.redis = redis.Redis(
            host=self.node.host,
            port=self.node.port,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            # redis-py retries a failed command by default. The harness's worker retries
            # acquires itself, recording each attempt; a hidden retry here would make one
            # recorded attempt several real ones (and a timeout several timeouts).
            retry=Retry(NoBackoff(), 0),
        )

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        """Try once. A Lease if we now hold ``key``, None if someone else does. An
        exception (a timeout, a refused connection) is recorded as an info event: the
        attempt may or may not have taken the lock."""
        token = os.urandom(20).hex()  # unique per acquire: what release checks
        started = self.clock()  # before the request goes out, so the deadline errs early
        if not self.redis.set(key, token, nx=True, px=ttl_ms):
            return None
        # The key expires ttl after the server set it, which was after `started`; a
        # deadline counted from `started`, less redis.io's drift allowance (1% of the TTL
        # plus 2 ms), is never late.
        deadline = validity_deadline(started, ttl_ms)
        return Lease(key=key, token=token, deadline=deadline, grants=(self.node.name,))

    def release(self, lease: Lease) -> bool:
        """True if our lock was still there and is now gone; False if it had expired
        (and perhaps been taken by someone else, whose lock we leave alone)."""
        return bool(self.redis.eval(RELEASE_SCRIPT, 1, lease.key, lease.token))

    def close(self) -> None:
        self.redis.close()
