"""One redis container of the fault domain: the NodeHandle the nemesis drives.

The container's PID 1 is a supervisor (compose/respawn.c) with redis-server as its child,
and faults act on the process, as Jepsen's do on a machine: kill SIGKILLs the redis-server
by its host pid and the container stays up; restart is SIGUSR1 to the supervisor, which
starts redis-server again (same port, same bind-mounted data dir) in milliseconds, where
starting a stopped container took 0.5-1 s on a loaded machine. pause/resume use the freezer
cgroup (`docker pause`: supervisor and server stop as under SIGSTOP, and no signal they
could see is sent); a paused node is killed by the engine (which thaws it), so the
container is gone and restart starts it again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import docker.errors
from docker.models.containers import Container

from lockharness.cluster.aof import AofTracker, AofTruncation
from lockharness.cluster.process import pid_alive
from lockharness.cluster.proxied import answers_ping
from lockharness.cluster.redis_node import AofWatch
from lockharness.compose.engine import ENGINE_ERRORS, client
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError

_ALIVE = ("running", "paused")  # a paused process still exists, as under SIGSTOP


def _children(pid: int) -> list[int]:
    """Host pids of ``pid``'s children: its /proc children list, or (a kernel without
    CONFIG_PROC_CHILDREN) a scan of /proc for that parent."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        pass
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and int(stat[1]) == pid:
            found.append(int(entry.name))
    return found


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from its state on (field 3), or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses


def _newest_child(pid: int) -> int | None:
    """The live child ``pid`` started last: redis-server under its supervisor, not the
    orphaned forks (an AOF rewrite) of one killed before, which the supervisor inherits."""
    started = {}
    for child in _children(pid):
        stat = _stat(child)
        if stat is not None and stat[0] != "Z":
            started[child] = int(stat[19])  # field 22: start time, in clock ticks since boot
    return max(started, key=started.__getitem__) if started else None


class ContainerNode(AofWatch):
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
        self._supervisor: int | None = None  # the container's PID 1 on the host (respawn)
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
        except ENGINE_ERRORS as e:  # an engine slow or gone: said, as a missing container is
            raise ClusterError(f"node {self.name}: the engine did not answer: {e!r}") from e

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
        supervisor = self._supervisor_pid()
        seen = False  # a redis-server under the supervisor: one that then goes has died
        while not answers_ping(self.endpoint):
            child = _newest_child(supervisor)
            seen = seen or child is not None
            if time.monotonic() > deadline or not pid_alive(supervisor) or (seen and not child):
                raise ClusterError(
                    f"redis container {self.container_name} ({self.status()}) did not answer "
                    f"PING within {timeout_s:.0f}s; last log lines:\n{self.log_tail()}"
                )
            time.sleep(0.01)
        self._pid = _newest_child(supervisor)  # the server the supervisor started last
        if self._pid is None:
            raise ClusterError(f"node {self.name}: no redis-server under its supervisor")
        self._start_tracker()

    def _supervisor_pid(self) -> int:
        """The container's PID 1 on the host: asked of the engine once per container start."""
        if self._supervisor is None or not pid_alive(self._supervisor):
            self._supervisor = int(self.container().attrs["State"]["Pid"])
            if self._supervisor == 0:  # not running
                self._supervisor = None
                raise ClusterError(
                    f"node {self.name}: container {self.container_name} is not "
                    f"running ({self.status()})"
                )
        return self._supervisor

    def kill(self, power_loss: bool = False) -> AofTruncation | None:
        """SIGKILL its redis-server, and return once it is gone (the container stays up);
        with ``power_loss`` (aof-everysec), cut the AOF on the host back to its size a
        second before (as LocalRedisNode.kill does)."""
        if power_loss and self.persistence != "aof-everysec":
            raise ValueError(
                f"power_loss needs persistence aof-everysec, node {self.name} has "
                f"{self.persistence!r}"
            )
        now = time.monotonic()  # before the signal: the cut is >= 1 s before the death
        # SIGKILL straight to its redis-server, as the local backend does: an API round trip
        # first took 200-400 ms on a loaded machine, long enough for most holders to have
        # released by the time the node came back. A frozen (paused) process dies only
        # when thawed: the engine's kill does that, to the supervisor too.
        if not self._signal_kill():
            try:
                self.container().kill()
            except docker.errors.APIError as e:
                if "is not running" not in str(e):
                    raise ClusterError(f"killing {self.container_name}: {e}") from None
            self.container().wait(timeout=10)  # dead: nothing writes the AOF any more
            self._supervisor = None
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
        """Start its redis-server again: same port, same data dir."""
        if self.running():
            raise ClusterError(f"node {self.name} is still running; kill or stop it first")
        if self._supervisor is not None and pid_alive(self._supervisor):
            self._respawn(self._supervisor, timeout_s)
        else:  # the engine killed the container (a paused node): start it again
            self._supervisor = None
            container = self.container()
            container.wait(timeout=10)  # the engine has seen it exit (at once, once it is dead)
            container.start()
        self._killed = False
        self.wait_ready(timeout_s)

    def _respawn(self, supervisor: int, timeout_s: float) -> None:
        """SIGUSR1 to the supervisor until it has a new child. Sent again after a while: a
        SIGUSR1 taken while the killed server is not yet reapable is a no-op (it runs)."""
        before = set(_children(supervisor))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(supervisor, signal.SIGUSR1)
            except ProcessLookupError:
                raise ClusterError(f"node {self.name}: its supervisor is gone") from None
            again = time.monotonic() + 0.2
            while time.monotonic() < again:
                if set(_children(supervisor)) - before:
                    return
                time.sleep(0.002)
        raise ClusterError(
            f"node {self.name}: its supervisor started no redis-server within "
            f"{timeout_s:.0f}s; last log lines:\n{self.log_tail()}"
        )

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
        """Run a command in the container (the image holds only redis-server and respawn)."""
        result = self.container().exec_run(list(argv))
        if result.exit_code != 0:
            raise ClusterError(f"{argv} in {self.container_name} exited {result.exit_code}")
        return bytes(result.output).decode(errors="replace")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return bytes(self.container().logs(tail=lines)).decode(errors="replace")
        except (ClusterError, *ENGINE_ERRORS) as e:
            return f"(no logs: {e})"

    def stop_watching(self) -> None:
        self._stop_tracker()
