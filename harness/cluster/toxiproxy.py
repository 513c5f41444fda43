"""The Toxiproxy server process, and a per-server handle on toxiproxy-python.

toxiproxy-python keeps the API's host and port as class attributes of ``APIConsumer``
(global state shared by every caller in the process). ``ToxiproxyAPI`` owns its own
host/port and points the library at them only for the duration of one call, under a
lock, so two servers in one process (tests, benchmarks) never cross wires.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import toxiproxy.api
from toxiproxy import Toxiproxy
from toxiproxy.proxy import Proxy

from harness.cluster.ports import free_port
from harness.cluster.process import ManagedProcess, ServerProcess
from harness.errors import ClusterError
from workloads.endpoints import Endpoint

_LIBRARY_LOCK = threading.Lock()


@dataclass(frozen=True)
class ProxyInfo:
    name: str
    listen: Endpoint  # where clients connect (named after the upstream node)
    upstream: str
    enabled: bool


class ToxiproxyAPI:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    @contextmanager
    def _bound(self) -> Iterator[Toxiproxy]:
        with _LIBRARY_LOCK:
            consumer = toxiproxy.api.APIConsumer
            saved = (consumer.host, consumer.port)
            consumer.host, consumer.port = self.host, self.port
            try:
                yield Toxiproxy()
            finally:
                consumer.host, consumer.port = saved

    def version(self) -> str:
        with self._bound() as server:
            raw = server.version()
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def create_proxy(self, name: str, upstream: Endpoint, node: str) -> ProxyInfo:
        """A proxy listening on a free loopback port (Toxiproxy picks it for listen :0)."""
        with self._bound() as server:
            proxy = server.create(
                upstream=f"{upstream.host}:{upstream.port}", name=name, listen="127.0.0.1:0"
            )
        return _info(proxy, node)

    def _proxy(self, server: Toxiproxy, name: str) -> Proxy:
        proxy = server.get_proxy(name)
        if proxy is None:
            raise ClusterError(f"toxiproxy has no proxy named {name}")
        return proxy

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Disabling closes the listener and every open connection through it."""
        with self._bound() as server:
            proxy = self._proxy(server, name)
            if enabled:
                proxy.enable()
            else:
                proxy.disable()

    def add_toxic(
        self,
        proxy_name: str,
        toxic_type: str,
        attributes: dict[str, Any],
        *,
        stream: str = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
    ) -> str:
        toxic_name = name or f"{toxic_type}_{stream}"
        with self._bound() as server:
            self._proxy(server, proxy_name).add_toxic(
                type=toxic_type,
                name=toxic_name,
                stream=stream,
                toxicity=toxicity,
                attributes=attributes,
            )
        return toxic_name

    def remove_toxic(self, proxy_name: str, toxic_name: str) -> None:
        with self._bound() as server:
            self._proxy(server, proxy_name).destroy_toxic(toxic_name)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        with self._bound() as server:
            server.reset()

    def proxies(self) -> dict[str, dict[str, Any]]:
        # toxiproxy-python's Proxy objects drop the toxics list; ask the API directly.
        response = requests.get(f"http://{self.host}:{self.port}/proxies", timeout=5)
        response.raise_for_status()
        return dict(response.json())


def _info(proxy: Proxy, node: str) -> ProxyInfo:
    host, _, port = proxy.listen.rpartition(":")
    return ProxyInfo(proxy.name, Endpoint(node, host, int(port)), proxy.upstream, proxy.enabled)


class ToxiproxyServer(ServerProcess):
    """toxiproxy-server on a free loopback API port."""

    def __init__(self, binary: Path, log_path: Path) -> None:
        self.binary = binary
        self.log_path = log_path
        self.port: int | None = None
        self._process: ManagedProcess | None = None

    @property
    def api(self) -> ToxiproxyAPI:
        if self.port is None:
            raise ClusterError("toxiproxy-server has not been started")
        return ToxiproxyAPI("127.0.0.1", self.port)

    def spawn(self) -> None:
        self.port = free_port()
        argv = [str(self.binary), "-host", "127.0.0.1", "-port", str(self.port)]
        self._process = ManagedProcess("toxiproxy-server", argv, self.log_path)
        self._process.start()

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/version"
        while time.monotonic() < deadline and self._process.running():
            try:
                if requests.get(url, timeout=0.5).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.01)
        raise ClusterError(
            f"toxiproxy-server did not answer on port {self.port} within {timeout_s:.0f}s; "
            f"last lines of {self.log_path}:\n{self._process.log_tail()}"
        )
