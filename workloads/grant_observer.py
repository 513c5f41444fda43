"""Which nodes granted a lease, observed after the acquire, for libraries that do not say
(the multi-node adapters and program clients that report no grants): one GET per node."""

from __future__ import annotations

from collections.abc import Sequence

from lockharness.core.endpoints import Endpoint
from lockharness.workloads.fanout import FanOut


class GrantObserver:
    """Which nodes hold ``redis_key`` with value ``token``, read right after a successful
    acquire: one GET sent to every node at once (one round trip, no retries).

    Only an observation: a node that does not answer in time is not listed, and a SET the
    library still has in flight may land after the read. The nemesis's `holders` target
    needs the granting nodes, and these libraries do not report them.
    """

    def __init__(self, nodes: Sequence[Endpoint], timeout_s: float) -> None:
        self.fanout = FanOut(nodes, timeout_s)

    def granted(self, redis_key: str, token: str | bytes) -> tuple[str, ...]:
        """``token``: the value stored, as text (compared as UTF-8) or as bytes."""
        replies = self.fanout.call_all("GET", redis_key)
        expected = token.encode() if isinstance(token, str) else token
        nodes = zip(self.fanout.nodes, replies, strict=True)
        return tuple(node.name for node, reply in nodes if reply == expected)

    def close(self) -> None:
        self.fanout.close()
