"""Toxiproxy inside its container: wait for the API, create every proxy in one request.

ToxiproxyAPI.create_proxy listens on 127.0.0.1, which inside a container only the
container itself reaches; here each proxy listens on 0.0.0.0:<port> (the port Docker
publishes on the host's 127.0.0.1) and dials its node by service name on the run's
network. One POST /populate makes them all, instead of one request per proxy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from lockharness.core.errors import ClusterError


@dataclass(frozen=True)
class ProxyPlan:
    name: str
    listen_port: int  # the same inside the container and on the host's loopback
    upstream: str  # "n3:6379": the service name resolves on the run's network


def wait_api(api_port: int, alive: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Until GET /version answers on the published API port, while ``alive()``."""
    url = f"http://127.0.0.1:{api_port}/version"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and alive():
        try:
            if requests.get(url, timeout=0.5).ok:
                return
        except requests.RequestException:
            pass  # not listening yet (Docker's proxy accepts, then drops the connection)
        time.sleep(0.02)
    raise ClusterError(f"Toxiproxy's API did not answer on 127.0.0.1:{api_port} in {timeout_s}s")


def populate(api_port: int, proxies: list[ProxyPlan]) -> None:
    body: list[dict[str, Any]] = [
        {
            "name": p.name,
            "listen": f"0.0.0.0:{p.listen_port}",
            "upstream": p.upstream,
            "enabled": True,
        }
        for p in proxies
    ]
    try:
        response = requests.post(f"http://127.0.0.1:{api_port}/populate", json=body, timeout=10)
    except requests.RequestException as e:
        raise ClusterError(f"Toxiproxy /populate did not answer: {e!r}") from e
    if not response.ok:
        raise ClusterError(f"Toxiproxy /populate failed ({response.status_code}): {response.text}")
