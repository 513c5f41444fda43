"""One OS process the harness owns: start, signal, stop, and never leave it behind."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.spawner import spawn
from lockharness.core.interrupts import deferred

log = logging.getLogger("lockharness.cluster")


class ManagedProcess:
    """A child process with its output in a log file.

    Children get their own session so a terminal's Ctrl-C reaches only the controller,
    which then tears everything down in order (clients first, servers last). They die
    with the controller if it dies without a teardown (``cluster.spawner``), and
    each start is written to the run's ledger, where ``lockharness gc`` finds it.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        ledger: ProcessLedger | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env else {}  # added to the harness's own environment
        self.ledger = ledger
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # A stop signal between the fork and the assignment would lose the child: deferred.
        with deferred(), self.log_path.open("ab") as out:
            self._popen = spawn(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **self.env} if self.env else None,
            )
            if self.ledger is not None:
                self.ledger.started(self.name, self._popen.pid, self.argv)
        log.info("started %s pid %d: %s", self.name, self._popen.pid, " ".join(self.argv))

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def signal(self, signum: int) -> None:
        if self.running():
            assert self._popen is not None
            self._popen.send_signal(signum)

    def signal_group(self, signum: int) -> None:
        """``signum`` to the process and the children it started (its own session: a worker
        and its client programs freeze and resume together, as one client does in a GC
        pause)."""
        if self.running():
            assert self._popen is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._popen.pid, signum)

    def kill(self) -> None:
        """SIGKILL and reap: the process is gone when this returns."""
        if self._popen is None:
            return
        if self._popen.poll() is None:
            self._popen.kill()
        self._popen.wait()

    def terminate(self) -> None:
        """Ask it to exit (SIGTERM) without waiting; a paused process is continued first."""
        if self.running():
            assert self._popen is not None
            self._popen.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
            self._popen.terminate()

    def wait_or_kill(self, grace_s: float = 2.0) -> None:
        """Wait up to ``grace_s`` for it to exit, then SIGKILL; reaped either way."""
        if self._popen is None:
            return
        try:
            self._popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop in %.1fs; killing it", self.name, grace_s)
            self.kill()

    def stop(self, grace_s: float = 2.0) -> None:
        self.terminate()
        self.wait_or_kill(grace_s)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class ServerProcess:
    """A server the cluster owns: at most one live ManagedProcess at a time (restarts
    replace it). Subclasses build and start ``_process``; this is the common handling."""

    _process: ManagedProcess | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def running(self) -> bool:
        return self._process is not None and self._process.running()

    def signal(self, signum: int) -> None:
        if self._process:
            self._process.signal(signum)

    def kill(self) -> None:
        """SIGKILL: the process is gone when this returns."""
        if self._process:
            self._process.kill()

    def terminate(self) -> None:
        if self._process:
            self._process.terminate()

    def wait_or_kill(self) -> None:
        if self._process:
            self._process.wait_or_kill()

    def stop(self) -> None:
        self.terminate()
        self.wait_or_kill()


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (zombies hold no ports or files).

    A thread-group leader shows as a zombie as soon as it has exited, while its other
    threads (redis's background threads) may still be exiting and holding its sockets:
    that counts as alive until its last thread is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[1].split()[0] != "Z":
        return True
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False
