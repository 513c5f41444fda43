"""Parallel jobs: J ordinary runs at once on one host, each in a child process of its own.

Each job is harness/parallel/job.py on a run directory the controller made (the resolved scenario
written in it), so it has its own ports (held across processes: cluster/ports.py), its own
processes and run directory, and says its verdict in its own results.json, read back with
``load_outcome``. A job is started with the parent-death guard (cluster/spawner.py): a
SIGKILLed controller takes its jobs with it, and each job its cluster.

A stop signal to the controller is forwarded to every running job; each tears down and
checks what it recorded, as `lockharness run` does, and the controller waits for them
(shielded: a second signal cannot cut that wait short). A job that cannot start, or ends
without results.json, is an unknown outcome with the reason: never a crash of the
controller, never a verdict.

How many at once by default: harness/parallel/job_slots.py.
"""

from __future__ import annotations

import logging
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lockharness.checker import CheckResult, Verdict
from lockharness.cluster.process import ManagedProcess
from lockharness.core.errors import BadInput
from lockharness.core.interrupts import deferred, shielded
from lockharness.core.run_dir import RunDir
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.run.stored_run import load_outcome
from lockharness.harness.scenario import Scenario, to_yaml
from lockharness.harness.store.layout import create_run_dir

log = logging.getLogger("lockharness")

_POLL_S = 0.1
_STOP_WAIT_S = 600.0  # a stopped job's teardown and check; past it, SIGKILL (its cluster dies too)


@dataclass
class Job:
    """One run going on in a child process."""

    key: int  # the caller's: a case's or trial's position
    scenario: Scenario
    run_dir: Path
    process: ManagedProcess
    started_at: float  # unix time
    t0: float  # monotonic

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.t0


@dataclass
class Finished:
    job: Job
    outcome: RunOutcome
    elapsed_s: float


def failed_outcome(run_dir: Path, scenario: Scenario, why: str, interrupted: bool) -> RunOutcome:
    """A job without a result of its own: unknown, with the reason (never a verdict)."""
    result = CheckResult(Verdict.UNKNOWN, reasons=[why])
    return RunOutcome(run_dir, scenario, result, interrupted=interrupted, problems=[why])


class JobPool:
    """Runs started as child processes, at most ``slots`` at once; ``poll`` hands back
    the finished ones with their outcomes."""

    def __init__(self, slots: int, store: Path, binaries: Binaries, scratch: Path) -> None:
        self.slots = slots
        self.store = store
        self.binaries = binaries
        self.scratch = scratch  # the jobs' own output (a temporary directory)
        self.running: dict[int, Job] = {}
        self._ended: list[Finished] = []  # jobs that could not start
        self.stopping = False  # a stop signal was forwarded: a job's end is an interruption

    @property
    def busy(self) -> bool:
        """Jobs running, or ended and not yet handed back."""
        return bool(self.running or self._ended)

    @property
    def free(self) -> int:
        return self.slots - len(self.running)

    def start(self, key: int, scenario: Scenario) -> None:
        """Start ``scenario`` as job ``key``; its run directory is made here, now. A job
        that cannot start ends at once (``poll`` hands it back, unknown, with why)."""
        run_dir = self.store / scenario.name
        # Its own session (a terminal's Ctrl-C reaches the controller only, which forwards
        # it), bound to the controller's life; the start itself is not cut by a signal.
        process = ManagedProcess(f"job-{key}", [], self.scratch / f"job-{key}.log")
        job = Job(key, scenario, run_dir, process, time.time(), time.monotonic())
        # A stop signal meanwhile is raised once the job is known (and so stopped too).
        with deferred():
            try:
                made = create_run_dir(self.store, scenario.name)
                job.run_dir = made.path
                made.scenario.write_text(to_yaml(scenario))
                process.argv = self._argv(made.path)
                process.start()
            except OSError as e:
                why = f"the job could not start: {e}"
                failed = failed_outcome(job.run_dir, scenario, why, False)
                self._ended.append(Finished(job, failed, 0.0))
                return
            self.running[key] = job

    def _argv(self, run_dir: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "lockharness.harness.parallel.job",
            str(run_dir),
            "--store",
            str(self.store),
            "--redis-server",
            str(self.binaries.redis_server),
            "--toxiproxy-server",
            str(self.binaries.toxiproxy_server),
        ]

    def poll(self) -> list[Finished]:
        """The jobs that have ended since the last call, with their outcomes."""
        done, self._ended = self._ended, []
        for key, job in list(self.running.items()):
            code = job.process.exit_code()
            if code is None:
                continue
            del self.running[key]
            done.append(Finished(job, self.outcome(job, code), job.elapsed_s))
        return done

    def outcome(self, job: Job, code: int) -> RunOutcome:
        """What the job's run directory says; unknown with the reason when it says nothing."""
        files = RunDir(job.run_dir)
        if files.results.is_file():
            try:
                return load_outcome(job.run_dir, with_replay=True)
            except BadInput as e:
                why = f"the job's results could not be read back: {e}"
                return failed_outcome(job.run_dir, job.scenario, why, self.stopping)
        said = job.process.log_tail(3).strip().replace("\n", " | ")
        why = f"the job ended (exit code {code}) without {RunDir.RESULTS}"
        if said:
            why += f": {said}"
        return failed_outcome(job.run_dir, job.scenario, why, self.stopping)

    def stop(self, signum: int) -> None:
        """Forward a stop signal to every running job (each tears down and checks)."""
        self.stopping = True
        for job in self.running.values():
            job.process.signal(signum)

    def wait(self) -> Iterator[Finished]:
        """Every running job's end, as each comes; a job stuck past ``_STOP_WAIT_S`` after a
        stop is killed (its own children die with it)."""
        since = time.monotonic()
        while self.running or self._ended:
            yield from self.poll()
            if self.stopping and time.monotonic() - since > _STOP_WAIT_S:
                for job in self.running.values():
                    log.error("job %s did not stop in %.0fs: killing it", job.key, _STOP_WAIT_S)
                    job.process.kill()
            time.sleep(_POLL_S)

    def kill_all(self) -> None:
        """The last resort (an error in the controller): no job outlives it."""
        for job in self.running.values():
            job.process.kill()


def stop_signal(interrupt: KeyboardInterrupt) -> int:
    """The signal a KeyboardInterrupt stands for (core.interrupts), SIGINT if none."""
    return int(getattr(interrupt, "stop_signal", signal.SIGINT))


@contextmanager
def job_pool(slots: int, store: Path, binaries: Binaries) -> Iterator[JobPool]:
    """A pool whose jobs never outlive the block: on the way out, whatever the cause,
    the running ones are stopped and waited for (shielded)."""
    with tempfile.TemporaryDirectory(prefix="lockharness-jobs-") as scratch:
        pool = JobPool(slots, store, binaries, Path(scratch))
        try:
            yield pool
        finally:
            if pool.running:
                with shielded():
                    pool.stop(signal.SIGTERM)
                    for _ in pool.wait():
                        pass
