"""The base the single-node classic clients share (one node, one single-try connection)."""

from __future__ import annotations

from collections.abc import Sequence

from lockharness.core.connect import DEFAULT_TIMEOUT_NS, single_try_client
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import ClientOptions, NodeNumber, SocketTimeout
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Clock


class OneNodeOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timeout: SocketTimeout = DEFAULT_TIMEOUT_NS
    node: NodeNumber = 1


class OneNodeClient(DeclaredClient):
    """What the single-node classic clients share: option ``node`` (1-based, default 1)
    and ``timeout`` (ns), one single-try connection, and the history's clock."""

    Options = OneNodeOptions

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: OneNodeOptions,
        discovery: Discovery | None = None,  # one static node: nothing to discover
    ) -> None:
        self.node = nodes[options.node - 1]
        self.redis = single_try_client(self.node, options.timeout / 1e9)
        self.clock = clock

    def close(self) -> None:
        self.redis.close()
