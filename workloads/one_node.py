"""The base the single-node classic clients share (one node, one single-try connection)."""

from __future__ import annotations

from collections.abc import Sequence

from lockharness.core.connect import DEFAULT_TIMEOUT_NS, single_try_client
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.protocol import Clock


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
