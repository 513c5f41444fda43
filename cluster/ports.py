"""Free loopback ports."""

from __future__ import annotations

import socket
from collections.abc import Collection


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1.

    Another process may grab it before our server binds it; servers that fail to bind
    are restarted on a new port by their owners, which is why this stays a plain helper.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_except(taken: Collection[int]) -> int:
    """A free port that is not one of ``taken``: ports chosen earlier but not bound yet
    are free to the kernel too, which would hand the same one out again."""
    while (port := free_port()) in taken:
        pass
    return port
