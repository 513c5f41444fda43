"""A redis-server process on a loopback port, with its own data dir and log file."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import redis

from harness.cluster.ports import free_port
from harness.cluster.process import ManagedProcess, ServerProcess
from harness.errors import ClusterError
from workloads.endpoints import Endpoint

# What each persistence mode means on the command line (DESIGN.md "Losing un-fsynced writes").
PERSISTENCE_ARGS: dict[str, list[str]] = {
    "none": ["--save", "", "--appendonly", "no"],
}

_START_ATTEMPTS = 5  # a free port can be taken by someone else before redis binds it


class LocalRedisNode(ServerProcess):
    """One node. The port is chosen at first start and kept across restarts,
    so proxies pointing at it stay valid."""

    def __init__(
        self, name: str, binary: Path, data_dir: Path, log_path: Path, persistence: str = "none"
    ) -> None:
        if persistence not in PERSISTENCE_ARGS:
            raise ValueError(f"unknown persistence mode {persistence!r}")
        self.name = name
        self.binary = binary
        self.data_dir = data_dir
        self.log_path = log_path
        self.persistence = persistence
        self.port: int | None = None
        self._process: ManagedProcess | None = None

    @property
    def endpoint(self) -> Endpoint:
        if self.port is None:
            raise ClusterError(f"node {self.name} has not been started")
        return Endpoint(self.name, "127.0.0.1", self.port)

    def _argv(self, port: int) -> list[str]:
        return [
            str(self.binary),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--logfile", "",  # log to stdout, which ManagedProcess sends to log_path
            "--daemonize", "no",
            *PERSISTENCE_ARGS[self.persistence],
        ]  # fmt: skip

    def spawn(self) -> None:
        """Start the process without waiting for it (see wait_ready)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        self._process = ManagedProcess(
            f"redis-server {self.name}", self._argv(self.port), self.log_path
        )
        self._process.start()

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until the node answers PING directly; retry on another port if bind failed."""
        for _ in range(_START_ATTEMPTS):
            if self._await_ping(timeout_s):
                return
            if self._process is not None and not self._process.running() and self._bind_failed():
                self.port = None  # somebody took the port between free_port() and bind
                self.spawn()
                continue
            break
        raise ClusterError(
            f"redis-server {self.name} did not answer PING within {timeout_s:.0f}s; "
            f"last log lines of {self.log_path}:\n{self._tail()}"
        )

    def start(self, timeout_s: float = 10.0) -> None:
        self.spawn()
        self.wait_ready(timeout_s)

    def _await_ping(self, timeout_s: float) -> bool:
        assert self.port is not None and self._process is not None
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=0.5)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline and self._process.running():
                try:
                    if client.ping():
                        return True
                except redis.exceptions.BusyLoadingError:
                    pass  # loading its data set; keep waiting
                except redis.exceptions.ConnectionError:
                    pass
                time.sleep(0.01)
            return False
        finally:
            client.close()

    def _bind_failed(self) -> bool:
        return "Address already in use" in self._tail()

    def _tail(self) -> str:
        return self._process.log_tail() if self._process else ""

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)
