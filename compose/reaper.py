"""A run's containers die with the controller, however it dies.

Containers are the engine's children, not the controller's: the parent-death signal that
takes local servers and workers with a killed controller (cluster.spawner) cannot reach
them. So before a Compose cluster creates anything it starts a reaper: a small process in
a session of its own (a killed process group, a terminal's Ctrl-C and a CI time-out do not
reach it), whose stdin is the read end of a pipe. The write end is held by the controller
alone (os.pipe's descriptors are close-on-exec: no server, worker or compose command it
starts inherits it), and the kernel closes it when the controller's process ends, however
it ends: SIGKILL, the OOM killer, a crash of Python. The reaper then reads EOF, removes the
run's containers, networks and volumes by label (compose.cleanup) until nothing is left,
and exits. A teardown that completed writes DONE before closing: the reaper exits at once.

It needs no heartbeat, no polling of the controller and nothing inside the containers,
and a controller that stops for minutes (paused, swapping) is not mistaken for a dead one.

The controller's side is ``Reaper``; the process's is
``python -m lockharness.compose.reaper RUN_DIR CONTROLLER_PID``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from lockharness.cluster.ledger import ProcessLedger
from lockharness.core.errors import ClusterError
from lockharness.core.interrupts import deferred
from lockharness.core.run_dir import RunDir

log = logging.getLogger("lockharness.cluster")

DONE = b"done"  # teardown removed everything itself: exit without looking
READY = b"ready\n"  # the engine answered: the reaper can remove things the moment it must
# A compose command killed with the controller may have had a request in flight, which
# the engine still carries out: a container created just after a sweep. So the reaper
# sweeps until the run has been gone this long.
SETTLE_S = 1.0
GIVE_UP_S = 120.0  # an engine that will not answer: say so in reaper.log, and exit
_SWEEP_EVERY_S = 0.2
_READY_WITHIN_S = 60.0  # a Python start and the engine's first answer, on a loaded machine
_EXIT_WITHIN_S = 10.0


class Reaper:
    """The controller's end of the pipe. ``start`` it before anything is created,
    ``confirm`` once the cluster is up, ``release`` at the end of teardown."""

    def __init__(self, popen: subprocess.Popen[bytes], lifeline: int, log_path: Path) -> None:
        self.popen = popen
        self._lifeline: int | None = lifeline  # the write end: closed, or the process gone
        self.log_path = log_path

    @classmethod
    def start(cls, run_dir: Path, ledger: ProcessLedger) -> Reaper:
        log_path = RunDir(run_dir).reaper_log
        argv = [sys.executable, "-m", "lockharness.compose.reaper", str(run_dir), str(os.getpid())]
        read_end, write_end = os.pipe()  # both close-on-exec (PEP 446)
        # Not cluster.spawner's spawn: the reaper must outlive us, not die with us. A stop
        # signal between the fork and the assignment would lose track of it: deferred.
        with deferred(), log_path.open("ab") as out:
            try:
                popen = subprocess.Popen(
                    argv,
                    stdin=read_end,
                    stdout=subprocess.PIPE,
                    stderr=out,
                    start_new_session=True,
                )
            except BaseException:
                os.close(write_end)
                raise
            finally:
                os.close(read_end)  # the reaper's now: EOF depends on write ends only
            ledger.started("reaper", popen.pid, argv)  # gc can stop a stuck one
        log.info("started reaper pid %d for %s", popen.pid, run_dir)
        return cls(popen, write_end, log_path)

    def confirm(self, timeout_s: float = _READY_WITHIN_S) -> None:
        """The reaper is watching (the engine answered it), or ClusterError with its log."""
        assert self.popen.stdout is not None
        ready, _, _ = select.select([self.popen.stdout], [], [], timeout_s)
        line = self.popen.stdout.readline() if ready else b""
        self.popen.stdout.close()
        if line != READY:
            self.release(done=True)  # nothing of ours will be left to it
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise ClusterError(f"the reaper did not start ({self.log_path}):\n{tail}")

    def release(self, done: bool) -> None:
        """Close our end. ``done``: teardown left nothing, so the reaper exits at once and is
        waited for. Otherwise it removes what is left on its own, as after our death."""
        if self._lifeline is None:
            return
        with contextlib.suppress(BrokenPipeError):  # it died already
            if done:
                os.write(self._lifeline, DONE)
        os.close(self._lifeline)
        self._lifeline = None
        if self.popen.stdout is not None and not self.popen.stdout.closed:
            self.popen.stdout.close()
        if not done:
            return
        try:
            self.popen.wait(timeout=_EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            log.warning("reaper pid %d did not exit; killing it", self.popen.pid)
            self.popen.kill()
            self.popen.wait()


# -- the process ---------------------------------------------------------------------------


def reap(run_dir: Path) -> bool:
    """Sweep until nothing of the run has been left for SETTLE_S; False if the engine
    would not let us within GIVE_UP_S."""
    from lockharness.compose.cleanup import leftovers, remove_run

    started = time.monotonic()
    clear_since: float | None = None
    while time.monotonic() - started < GIVE_UP_S:
        try:
            removed = remove_run(run_dir)
            left = leftovers(run_dir)
        except Exception as e:  # the engine's errors (a network still in use...): again
            logging.warning("sweep failed, sweeping again: %s", e)
            removed, left = [], ["?"]
        if removed:
            logging.info("removed %s", ", ".join(removed))
        now = time.monotonic()
        if left:
            clear_since = None
        elif clear_since is None:
            clear_since = now
            logging.info("nothing of the run left after %.2f s", now - started)
        elif now - clear_since >= SETTLE_S:
            return True
        time.sleep(_SWEEP_EVERY_S)
    logging.error("gave up after %.0f s: run `lockharness gc`", GIVE_UP_S)
    return False


def main(argv: list[str]) -> int:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s reaper: %(message)s"
    )
    run_dir, controller = Path(argv[0]), int(argv[1])
    from lockharness.compose.engine import client  # the Docker SDK: before the wait

    try:
        client()  # connected now: the sweep must not wait for a first connection
    except Exception as e:
        logging.error("no engine: %s", e)
        return 1
    logging.info("watching controller pid %d for %s", controller, run_dir)
    # A controller killed meanwhile reads no more: the pipe is broken, and we go on.
    with contextlib.suppress(BrokenPipeError):
        os.write(sys.stdout.fileno(), READY)
    # Off the pipe: the controller may be gone when Python flushes stdout at exit.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    word = sys.stdin.buffer.read()  # until the controller's end is closed, however
    if word == DONE:
        logging.info("teardown done: exiting")
        return 0
    logging.info("controller pid %d gone without a teardown: removing the run", controller)
    return 0 if reap(run_dir) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
