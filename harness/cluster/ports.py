"""Free loopback ports."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1.

    Another process may grab it before our server binds it; servers that fail to bind
    are restarted on a new port by their owners, which is why this stays a plain helper.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
