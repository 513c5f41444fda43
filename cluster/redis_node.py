"""A redis-server process on a loopback port, with its own data dir and log file."""

from __future__ import annotations

import signal
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import redis

from lockharness.cluster.aof import AofTracker, AofTruncation
from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.ports import free_port, free_port_except, release_port
from lockharness.cluster.process import ManagedProcess, ServerProcess
from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError

# What each persistence mode means on the command line (docs/design.md "Losing un-fsynced writes").
# Both AOF modes: load a torn tail after a power-loss truncation instead of refusing to
# start; never rewrite, so the incr file the AofTracker watches is not rotated under it;
# plain RESP in the AOF, no RDB preamble.
_AOF_COMMON = [
    "--save",
    "",
    "--appendonly",
    "yes",
    "--aof-load-truncated",
    "yes",
    "--auto-aof-rewrite-percentage",
    "0",
    "--aof-use-rdb-preamble",
    "no",
]
PERSISTENCE_ARGS: dict[str, list[str]] = {
    "none": ["--save", "", "--appendonly", "no"],  # a restart comes back empty
    "aof-always": [*_AOF_COMMON, "--appendfsync", "always"],
    "aof-everysec": [*_AOF_COMMON, "--appendfsync", "everysec"],
}
AOF_MODES = frozenset({"aof-always", "aof-everysec"})

_START_ATTEMPTS = 5  # a free port can be taken by someone else before redis binds it


class AofWatch:
    """What a node of either backend does with its AOF while it is up: track its size over
    time, so that a power loss can cut back what was not fsynced (cluster.aof)."""

    persistence: str
    data_dir: Path
    aof_tracker: AofTracker | None

    def _start_tracker(self) -> None:
        self._stop_tracker()
        if self.persistence in AOF_MODES:
            self.aof_tracker = AofTracker(self.data_dir)
            self.aof_tracker.start()

    def _stop_tracker(self) -> AofTracker | None:
        tracker, self.aof_tracker = self.aof_tracker, None
        if tracker is not None:
            tracker.stop()
        return tracker


class LocalRedisNode(ServerProcess, AofWatch):
    """One node. The port is chosen at first start and kept across restarts,
    so proxies pointing at it stay valid."""

    def __init__(
        self,
        name: str,
        binary: Path,
        data_dir: Path,
        log_path: Path,
        persistence: str = "none",
        env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        ledger: ProcessLedger | None = None,
    ) -> None:
        if persistence not in PERSISTENCE_ARGS:
            raise ValueError(f"unknown persistence mode {persistence!r}")
        self.name = name
        self.binary = binary
        self.data_dir = data_dir
        self.log_path = log_path
        self.persistence = persistence
        self.env = dict(env) if env else {}  # e.g. LD_PRELOAD of the clock shim
        self.extra_args = list(extra_args)  # e.g. replication: announce address, replicaof
        self.ledger = ledger
        self.port: int | None = None
        self._port_pinned = False  # once it has served on a port, never move (proxies)
        self._process: ManagedProcess | None = None
        self.aof_tracker: AofTracker | None = None  # AOF modes, while the node is up

    @property
    def endpoint(self) -> Endpoint:
        if self.port is None:
            raise ClusterError(f"node {self.name} has not been started")
        return Endpoint(self.name, "127.0.0.1", self.port)

    def _argv(self, port: int) -> list[str]:
        return [
            str(self.binary),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--logfile",
            "",  # log to stdout, which ManagedProcess sends to log_path
            "--daemonize",
            "no",
            *PERSISTENCE_ARGS[self.persistence],
            *self.extra_args,
        ]

    def reserve_port(self, taken: Collection[int] = ()) -> int:
        """Choose the port before the first start (when others must know it in advance),
        other than ``taken`` (chosen for others, not bound yet); it is pinned: a failed
        bind is then an error rather than a move."""
        if self.port is None:
            self.port = free_port_except(taken)
            self._port_pinned = True
        return self.port

    def spawn(self) -> None:
        """Start the process without waiting for it (see wait_ready)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        self._process = ManagedProcess(
            f"redis-server {self.name}",
            self._argv(self.port),
            self.log_path,
            self.env,
            self.ledger,
        )
        self._process.start()

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until the node answers PING directly; retry on another port if bind failed."""
        for _ in range(_START_ATTEMPTS):
            if self._await_ping(timeout_s):
                self._port_pinned = True
                self._start_tracker()
                return
            if (
                not self._port_pinned
                and self._process is not None
                and not self._process.running()
                and self._bind_failed()
            ):
                if self.port is not None:  # a program (not lockharness) bound it first
                    release_port(self.port)
                self.port = None
                self.spawn()
                continue
            break
        code = None if self._process is None else self._process.exit_code()
        what = (
            "did not answer PING" if code is None else f"exited (code {code}) before answering PING"
        )
        raise ClusterError(
            f"redis-server {self.name} {what} within {timeout_s:.0f}s; "
            f"last log lines of {self.log_path}:\n{self._tail()}"
        )

    def start(self, timeout_s: float = 10.0) -> None:
        self.spawn()
        self.wait_ready(timeout_s)

    def restart(self, timeout_s: float = 10.0) -> None:
        """Start a stopped or killed node again: same port, same data dir."""
        if self.running():
            raise ClusterError(f"node {self.name} is still running; kill or stop it first")
        if self.port is None:
            raise ClusterError(f"node {self.name} was never started")
        self.start(timeout_s)

    # A node's kill may also cut its AOF, as a power loss does, and says what it cut.
    def kill(self, power_loss: bool = False) -> AofTruncation | None:  # type: ignore[override]
        """SIGKILL, reaped on return.

        A plain SIGKILL loses nothing Redis already write()-ed: those bytes sit in the page
        cache, which survives the process, so even `appendfsync everysec` keeps them. Only
        ``power_loss`` (aof-everysec only) drops the un-fsynced tail, by truncating the AOF
        to its size at least a second before the kill; what it cut is returned.
        """
        if power_loss and self.persistence != "aof-everysec":
            raise ValueError(
                f"power_loss needs persistence aof-everysec, node {self.name} has "
                f"{self.persistence!r}"
            )
        now = time.monotonic()  # before the signal: the cut is >= 1 s before the death
        super().kill()
        tracker = self._stop_tracker()
        if not power_loss:
            return None
        if tracker is None:
            raise ClusterError(f"node {self.name} has no AOF size history (was it up?)")
        return tracker.truncate_for_power_loss(now)

    def terminate(self) -> None:
        self._stop_tracker()
        super().terminate()

    def _await_ping(self, timeout_s: float) -> bool:
        assert self.port is not None and self._process is not None
        client = single_try_client(Endpoint(self.name, "127.0.0.1", self.port), 0.5)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline and self._process.running():
                try:
                    if client.ping():
                        return True
                except redis.exceptions.BusyLoadingError:
                    pass  # loading its data set; keep waiting
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                    pass  # not listening yet, or too busy starting to answer in 0.5 s
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
