"""A redis-py client for one endpoint that does exactly what it is asked, once.

redis-py's Redis client retries connection errors three times with backoff by default,
which would turn one lock attempt into several and a per-node timeout into seconds.
Retries are the worker's job, where each attempt is recorded. No handshake round trips
either (RESP2 needs no HELLO; no CLIENT SETINFO): under injected latency each would cost
a full delay.
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from lockharness.core.endpoints import Endpoint

DEFAULT_TIMEOUT_NS = 200_000_000


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
