"""A redis-py client for one endpoint that does exactly what it is asked, once.

redis-py's Redis client retries connection errors three times with backoff by default,
which would turn one lock attempt into several and a per-node timeout into seconds.
Retries are the worker's job, where each attempt is recorded. No handshake round trips
either (RESP2 needs no HELLO; no CLIENT SETINFO): under injected latency each would cost
a full delay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workloads.endpoints import Endpoint

if TYPE_CHECKING:
    from workloads.discovery import Discovery
    from workloads.protocol import Clock

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


class OneNodeClient:
    """What the single-node classic clients share: option ``node`` (1-based, default 1)
    and ``timeout`` (ns), one single-try connection, and the history's clock."""

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: dict[str, object],
        discovery: Discovery | None = None,  # one static node: nothing to discover
    ) -> None:
        timeout_s = int(options.get("timeout", DEFAULT_TIMEOUT_NS)) / 1e9  # type: ignore[call-overload]
        self.node = nodes[int(options.get("node", 1)) - 1]  # type: ignore[call-overload]
        self.redis = single_try_client(self.node, timeout_s)
        self.clock = clock

    def close(self) -> None:
        self.redis.close()
