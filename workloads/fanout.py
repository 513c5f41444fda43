"""Send one command to every node at once, then collect the replies against one deadline.

Commands go out on all sockets before any reply is read, so the nodes work in parallel
and a slow or dead node costs at most the timeout, not a timeout per node. No threads.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import redis
from redis.connection import Connection

from lockharness.core.endpoints import Endpoint

# What a node that is down, cut off or too slow looks like from here.
NODE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


class FanOut:
    def __init__(self, nodes: Sequence[Endpoint], timeout_s: float) -> None:
        self.nodes = list(nodes)
        self.timeout_s = timeout_s
        self._conns = [
            Connection(
                host=node.host,
                port=node.port,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                # No handshake round trips on (re)connect: RESP2 needs no HELLO, and no
                # CLIENT SETINFO. Under injected latency each would cost a full delay.
                protocol=2,
                driver_info=None,
            )
            for node in nodes
        ]

    def call_all(self, *args: object) -> list[object]:
        """One reply per node, in node order: the decoded reply, or the exception instead."""
        replies: list[object] = [None] * len(self._conns)
        sent: list[int] = []
        for i, conn in enumerate(self._conns):
            try:
                conn.send_command(*args)
                sent.append(i)
            except NODE_ERRORS as e:
                conn.disconnect()
                replies[i] = e
        deadline = time.monotonic() + self.timeout_s
        for i in sent:
            replies[i] = self._read(self._conns[i], deadline)
        return replies

    @staticmethod
    def _read(conn: Connection, deadline: float) -> object:
        try:
            # Past the deadline (an earlier node took it all), a reply already here still
            # counts: only one that has not come is a timeout.
            remaining = max(0.0, deadline - time.monotonic())
            if not conn.can_read(timeout=remaining):
                raise redis.exceptions.TimeoutError("no reply before the deadline")
            return conn.read_response()
        except redis.exceptions.ResponseError as e:
            return e  # the node answered with an error; the connection is still in sync
        except NODE_ERRORS as e:
            conn.disconnect()  # a late reply must not be read as the answer to the next command
            return e

    def close(self) -> None:
        for conn in self._conns:
            conn.disconnect()
