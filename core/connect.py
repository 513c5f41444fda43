"""A redis-py client for one endpoint that does exactly what it is asked, once.

redis-py's Redis client retries connection errors three times with backoff by default,
which would turn one lock attempt into several and a per-node timeout into seconds.
Retries are the worker's job, where each attempt is recorded. No handshake round trips
either (RESP2 needs no HELLO; no CLIENT SETINFO): under injected latency each would cost
a full delay.

Inside ``counting(sends)`` (a worker's client, while it is built and while it runs), every
redis-py connection made counts, in ``sends``, the commands it begins to send, from
whatever thread uses it: a lock call during which none began (a refused or timed-out
connect, an error before any command) cannot have changed any node, so the worker records
its error as a certain failure, not an outcome unknown (for a client that talks to Redis
through redis-py only: DeclaredClient.redis_py_only).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from lockharness.core.endpoints import Endpoint

DEFAULT_TIMEOUT_NS = 200_000_000


class Sends:
    """How many commands connections began to send, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def began(self) -> None:
        with self._lock:
            self.count += 1


# Connections made outside any ``counting``: a send on one is a send nobody can place, so
# while one happens no call counts as having sent nothing.
ELSEWHERE = Sends()
_counting = threading.local()  # .sends: the Sends of the client built or run in this thread
_patch_lock = threading.Lock()


@contextmanager
def counting(sends: Sends) -> Iterator[None]:
    """Every redis-py connection made in this thread meanwhile (by single_try_client, a
    Sentinel's, a library's own) counts in ``sends`` the commands it begins to send."""
    _count_every_connection()
    before = getattr(_counting, "sends", None)
    _counting.sends = sends
    try:
        yield
    finally:
        _counting.sends = before


def _count_every_connection() -> None:
    """Once per process: each redis-py connection pool takes the Sends of the thread that
    made it (a client is made where its lock client is built), gives it to the connections
    it makes in any thread, and each marks it before a command leaves (a connect that
    fails sends nothing)."""
    with _patch_lock:
        pool, connection = redis.connection.ConnectionPool, redis.connection.AbstractConnection
        if getattr(pool, "_lockharness_counts", False):
            return
        pool_init, make, send = pool.__init__, pool.make_connection, connection.send_packed_command

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            pool_init(self, *args, **kwargs)
            self._lockharness_sends = getattr(_counting, "sends", None) or ELSEWHERE

        def make_connection(self: Any) -> Any:
            made = make(self)
            made._lockharness_sends = getattr(self, "_lockharness_sends", ELSEWHERE)  # type: ignore[attr-defined]
            return made

        def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
            if not self._sock:  # connected first: a refusal here sent nothing of it
                self.connect_check_health(check_health=False)
            getattr(self, "_lockharness_sends", ELSEWHERE).began()
            send(self, command, check_health)

        pool.__init__ = __init__  # type: ignore[method-assign]
        pool.make_connection = make_connection  # type: ignore[method-assign]
        connection.send_packed_command = send_packed_command  # type: ignore[method-assign]
        pool._lockharness_counts = True  # type: ignore[attr-defined]


def single_try_client(endpoint: Endpoint, timeout_s: float, **options: object) -> redis.Redis:
    return redis.Redis(
        host=endpoint.host,
        port=endpoint.port,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
        protocol=2,
        driver_info=None,
        **options,  # type: ignore[arg-type]
    )
