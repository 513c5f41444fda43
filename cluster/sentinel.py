"""A Redis Sentinel process (`redis-server CONF --sentinel`) on a loopback port, and
what a sentinel of either backend does alike (SentinelHandle)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.ports import free_port
from lockharness.cluster.process import ManagedProcess, ServerProcess
from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError
from lockharness.core.run_dir import RunDir


class SentinelHandle:
    """One Redis Sentinel as the harness reaches it: directly, outside the fault domain.
    LocalSentinel (a process) and compose.sentinel.ContainerSentinel share this."""

    name: str

    if TYPE_CHECKING:  # each backend's own

        @property
        def endpoint(self) -> Endpoint: ...
        @property
        def pid(self) -> int | None: ...
        def running(self) -> bool: ...
        def log_tail(self, lines: int = ...) -> str: ...

    def client(self, timeout_s: float = 1.0) -> redis.Redis:
        return single_try_client(self.endpoint, timeout_s, decode_responses=True)

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        client = self.client(0.5)
        try:
            while time.monotonic() < deadline and self.running():
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    time.sleep(0.02)  # Docker's port forward accepts before Sentinel listens
        finally:
            client.close()
        raise ClusterError(f"sentinel {self.name} did not answer PING; log:\n{self.log_tail()}")

    def describe(self) -> dict[str, Any]:
        """Its entry in the cluster's describe()."""
        return {**self.endpoint.to_dict(), "pid": self.pid}


class LocalSentinel(ServerProcess, SentinelHandle):
    def __init__(
        self,
        name: str,
        binary: Path,
        directory: Path,
        log_path: Path,
        master_name: str,
        master: Endpoint,
        quorum: int,
        down_after_ms: int,
        failover_timeout_ms: int,
        ledger: ProcessLedger | None = None,
    ) -> None:
        self.name = name
        self.binary = binary
        self.directory = directory
        self.log_path = log_path
        self.master_name = master_name
        self.master = master  # the initial master, as every sentinel reaches it
        self.quorum = quorum
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.ledger = ledger
        self.port = free_port()
        self._process: ManagedProcess | None = None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "127.0.0.1", self.port)

    def _config(self) -> str:
        m = self.master_name
        return "\n".join(
            [
                f"port {self.port}",
                "bind 127.0.0.1",
                "daemonize no",
                'logfile ""',
                f"dir {self.directory}",
                f"sentinel monitor {m} {self.master.host} {self.master.port} {self.quorum}",
                f"sentinel down-after-milliseconds {m} {self.down_after_ms}",
                f"sentinel failover-timeout {m} {self.failover_timeout_ms}",
                f"sentinel parallel-syncs {m} 1",
                "",
            ]
        )

    def spawn(self) -> None:
        # Sentinel rewrites its config file as it learns: it must be its own, writable.
        self.directory.mkdir(parents=True, exist_ok=True)
        config = RunDir.sentinel_config(self.directory)
        config.write_text(self._config())
        argv = [str(self.binary), str(config), "--sentinel"]
        self._process = ManagedProcess(
            f"redis-sentinel {self.name}", argv, self.log_path, ledger=self.ledger
        )
        self._process.start()

    def log_tail(self, lines: int = 15) -> str:
        return self._process.log_tail(lines) if self._process else ""
