"""One redis container of the fault domain: the NodeHandle the nemesis drives.

Faults go through the Docker API: kill is SIGKILL to the container (its redis-server is
PID 1, so the container stops), restart starts the same container again (same published
port, same bind-mounted data dir), pause/resume use the freezer cgroup (`docker pause`:
the process stops as under SIGSTOP, and no signal it could see is sent).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import docker.errors
import redis
from docker.models.containers import Container

from compose.engine import client
from core.connect import single_try_client
from core.endpoints import Endpoint
from core.errors import ClusterError
from harness.cluster.aof import AofTracker, AofTruncation
from harness.cluster.process import pid_alive
from harness.cluster.redis_node import AOF_MODES

_ALIVE = ("running", "paused")  # a paused process still exists, as under SIGSTOP


def answers_ping(endpoint: Endpoint, timeout_s: float = 0.5) -> bool:
    client_ = single_try_client(endpoint, timeout_s)
    try:
        return bool(client_.ping())
    except redis.exceptions.RedisError:  # refused, reset, or loading its data set
        return False
    finally:
        client_.close()


class ContainerNode:
    def __init__(
        self, name: str, container: str, host_port: int, data_dir: Path, persistence: str
    ) -> None:
        self.name = name
        self.container_name = container
        self.host_port = host_port
        self.data_dir = data_dir
        self.persistence = persistence
        self.aof_tracker: AofTracker | None = None  # AOF modes, while the node is up
        self._pid: int | None = None  # its redis-server's pid on the host, while it is up
        self._paused = False  # by this handle: a frozen process dies only when thawed
        self._killed = False  # by this handle, and not started since

    @property
    def endpoint(self) -> Endpoint:
        # Published on the host's loopback: the harness checks nodes the way it does locally.
        return Endpoint(self.name, "127.0.0.1", self.host_port)

    def container(self) -> Container:
        try:
            return client().containers.get(self.container_name)
        except docker.errors.NotFound:
            raise ClusterError(f"node {self.name}: no container {self.container_name}") from None

    def status(self) -> str:
        return str(self.container().status)  # fetched afresh on each get

    def running(self) -> bool:
        if self._pid is not None:  # up since wait_ready: its process says, with no API call
            return pid_alive(self._pid)
        if self._killed:  # the engine may not have seen the exit yet
            return False
        try:
            return self.status() in _ALIVE
        except ClusterError:
            return False

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until it answers PING on its published port; then watch its AOF."""
        deadline = time.monotonic() + timeout_s
        while not answers_ping(self.endpoint):
            if time.monotonic() > deadline or not self.running():
                raise ClusterError(
                    f"redis container {self.container_name} ({self.status()}) did not answer "
                    f"PING within {timeout_s:.0f}s; last log lines:\n{self.log_tail()}"
                )
            time.sleep(0.02)
        self._pid = int(self.container().attrs["State"]["Pid"])  # its redis-server, on the host
        self._start_tracker()

    def kill(self, power_loss: bool = False) -> AofTruncation | None:
        """SIGKILL, and return once the container has stopped; with ``power_loss`` (aof-
        everysec), cut the AOF on the host back to its size a second before (as
        LocalRedisNode.kill does)."""
        if power_loss and self.persistence != "aof-everysec":
            raise ValueError(
                f"power_loss needs persistence aof-everysec, node {self.name} has "
                f"{self.persistence!r}"
            )
        now = time.monotonic()  # before the signal: the cut is >= 1 s before the death
        # SIGKILL straight to its redis-server, as the local backend does: an API round trip
        # first took 200-400 ms on a loaded machine, long enough for most holders to have
        # released by the time the node came back. A frozen (paused) process dies only
        # when thawed: the engine's kill does that.
        if not self._signal_kill():
            try:
                self.container().kill()
            except docker.errors.APIError as e:
                if "is not running" not in str(e):
                    raise ClusterError(f"killing {self.container_name}: {e}") from None
            self.container().wait(timeout=10)  # dead: nothing writes the AOF any more
        self._killed = True
        tracker = self._stop_tracker()
        if not power_loss:
            return None
        if tracker is None:
            raise ClusterError(f"node {self.name} has no AOF size history (was it up?)")
        return tracker.truncate_for_power_loss(now)

    def _signal_kill(self) -> bool:
        """SIGKILL the redis-server by its host pid; True once it is gone."""
        pid, self._pid = self._pid, None
        if pid is None or self._paused:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 1.0
        while pid_alive(pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    def restart(self, timeout_s: float = 10.0) -> None:
        """Start the killed container again: same port, same data dir."""
        if self.running():
            raise ClusterError(f"node {self.name} is still running; kill or stop it first")
        container = self.container()
        container.wait(timeout=10)  # the engine has seen it exit (at once, once it is dead)
        container.start()
        self._killed = False
        self.wait_ready(timeout_s)

    def pause(self) -> None:
        """As SIGSTOP to LocalRedisNode: nothing happens to a node that is not running."""
        container = self.container()
        if container.status == "running":
            container.pause()
            self._paused = True

    def resume(self) -> None:
        """As SIGCONT: nothing happens to a node that is not paused (the nemesis's heal
        resumes every node; the engine refuses to unpause a running container)."""
        container = self.container()
        if container.status == "paused":
            container.unpause()
        self._paused = False

    def exec(self, *argv: str) -> str:
        """Run a command in the container (the image holds only redis-server)."""
        result = self.container().exec_run(list(argv))
        if result.exit_code != 0:
            raise ClusterError(f"{argv} in {self.container_name} exited {result.exit_code}")
        return bytes(result.output).decode(errors="replace")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return bytes(self.container().logs(tail=lines)).decode(errors="replace")
        except (ClusterError, docker.errors.APIError) as e:
            return f"(no logs: {e})"

    def stop_watching(self) -> None:
        self._stop_tracker()

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
