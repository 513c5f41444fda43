"""A Redis Sentinel container (`redis-server /sentinel/sentinel.conf --sentinel`).

Its config lives in a per-sentinel directory of the run dir, bind-mounted at /sentinel:
Sentinel rewrites the file as it learns replicas, peers and failovers, so it must be its
own and writable (the container runs as the harness's user, who owns the directory).

Addresses are hostnames: every node announces its shared proxy as `toxiproxy:<port>`
(the service name on the run's network), which Sentinel takes only with resolve-hostnames,
and reports as such (not as the proxy container's IP) only with announce-hostnames.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockharness.cluster.sentinel import SentinelHandle
from lockharness.compose.engine import ENGINE_ERRORS
from lockharness.compose.engine import client as engine
from lockharness.compose.project import SENTINEL_PORT
from lockharness.core.endpoints import Endpoint
from lockharness.core.run_dir import RunDir


def sentinel_config(
    master_name: str,
    master: tuple[str, int],
    quorum: int,
    down_after_ms: int,
    failover_timeout_ms: int,
) -> str:
    """LocalSentinel's config, inside a container: any interface, hostnames allowed."""
    m, (host, port) = master_name, master
    return "\n".join(
        [
            f"port {SENTINEL_PORT}",
            "bind 0.0.0.0",
            "protected-mode no",  # the sentinel proxies reach it from Toxiproxy's container
            "daemonize no",
            'logfile ""',
            "dir /sentinel",
            # Before the monitor line: it names a host, which Sentinel refuses without this.
            "sentinel resolve-hostnames yes",
            "sentinel announce-hostnames yes",
            f"sentinel monitor {m} {host} {port} {quorum}",
            f"sentinel down-after-milliseconds {m} {down_after_ms}",
            f"sentinel failover-timeout {m} {failover_timeout_ms}",
            f"sentinel parallel-syncs {m} 1",
            "",
        ]
    )


class ContainerSentinel(SentinelHandle):
    def __init__(self, name: str, container: str, host_port: int, directory: Path) -> None:
        self.name = name
        self.container_name = container
        self.host_port = host_port  # published on 127.0.0.1; chosen again if it was taken
        self.directory = directory

    @property
    def endpoint(self) -> Endpoint:
        # Direct (no proxy): the harness observes through it, outside the fault domain.
        return Endpoint(self.name, "127.0.0.1", self.host_port)

    @property
    def pid(self) -> None:
        return None  # a container: removed by label, never by pid

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "container": self.container_name}

    def write_config(self, text: str) -> None:
        """A fresh config before each bring-up (Sentinel's rewrites of an old one would
        carry the previous attempt's ports)."""
        self.directory.mkdir(parents=True, exist_ok=True)  # before Docker makes it as root
        RunDir.sentinel_config(self.directory).write_text(text)

    def running(self) -> bool:
        try:
            return engine().containers.get(self.container_name).status == "running"
        except ENGINE_ERRORS:
            return False

    def log_tail(self, lines: int = 20) -> str:
        try:
            container = engine().containers.get(self.container_name)
            return bytes(container.logs(tail=lines)).decode(errors="replace")
        except ENGINE_ERRORS as e:
            return f"(no logs: {e})"
