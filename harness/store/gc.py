"""`lockharness gc`: find and stop what earlier runs left running.

Children die with their controller on Linux (cluster.spawner), and a Compose run's
reaper removes its containers (compose.reaper), so this is the net under those nets: for a
platform without the guarantee, a reaper killed too, or processes a run started some
other way. Every run directory's cluster.json names the controller and each child
with its start time; a process is stopped only if it is still that very process (same
pid, start time, executable and program) and its controller is gone. A live run in the
same store, or an unrelated process that reused a pid, is never touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lockharness.cluster.ledger import LedgerView, ProcessRecord, mark_stopped, read_ledger
from lockharness.core.errors import BadInput, ClusterError
from lockharness.core.run_dir import RunDir
from lockharness.harness.store.layout import stored_runs

log = logging.getLogger("lockharness")

_GRACE_S = 2.0  # for SIGTERM, then again for SIGKILL
_POLL_S = 0.02


@dataclass(frozen=True)
class Leftover:
    run_dir: Path
    record: ProcessRecord

    def describe(self) -> str:
        return f"{self.record.name} pid {self.record.pid} ({self.run_dir})"


@dataclass
class Survey:
    leftovers: list[Leftover] = field(default_factory=list)
    live_runs: list[Path] = field(default_factory=list)  # their controller is still alive
    dead_runs: list[Path] = field(default_factory=list)  # cluster.json of dead controllers
    unstoppable: list[Leftover] = field(default_factory=list)  # survived SIGKILL (gc only)
    # Compose runs: what the engine still holds for each dead run ("container NAME", ...).
    containers: dict[Path, list[str]] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)  # by gc: containers, networks, volumes


def _ledgers(store: Path) -> Iterator[LedgerView]:
    """store/<name>/<run>/cluster.json of every run not known to have stopped cleanly."""
    for run in stored_runs(store):
        if not run.ledger.exists():
            continue
        view = read_ledger(run.ledger)
        if view is not None and not view.stopped:
            yield view


def survey(store: Path) -> Survey:
    """What earlier runs in ``store`` left running; touches nothing."""
    found = Survey()
    for view in _ledgers(store):
        if view.controller is not None and view.controller.is_running():
            found.live_runs.append(view.path.parent)
            continue
        found.dead_runs.append(view.path)
        found.leftovers += [Leftover(view.path.parent, r) for r in view.processes if r.is_running()]
        held = _containers(view.path.parent)
        if held:
            found.containers[view.path.parent] = held
    return found


def _containers(run_dir: Path) -> list[str]:
    """What a Compose run left in the engine (a local run wrote no compose.yaml)."""
    if not RunDir(run_dir).compose_file.exists():
        return []
    from lockharness.compose import cleanup  # the Docker SDK, only for a Compose run

    try:
        return cleanup.leftovers(run_dir)
    except BadInput:  # no engine answers: then it holds nothing of ours either
        return []
    except ClusterError as e:  # it answered, then failed: said, and the survey goes on
        log.warning("%s", e)
        return []


def _signal(record: ProcessRecord, signum: int) -> None:
    if record.is_running():  # proven again right before each signal
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signum)


def _wait_gone(leftovers: list[Leftover], timeout_s: float) -> list[Leftover]:
    deadline = time.monotonic() + timeout_s
    pending = [leftover for leftover in leftovers if leftover.record.is_running()]
    while pending and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        pending = [leftover for leftover in pending if leftover.record.is_running()]
    return pending


def stop(leftovers: list[Leftover], grace_s: float = _GRACE_S) -> list[Leftover]:
    """SIGTERM (after SIGCONT: a paused process cannot act on it), SIGKILL whatever still
    runs after ``grace_s``; returns those that survived even that."""
    for leftover in leftovers:
        _signal(leftover.record, signal.SIGCONT)
        _signal(leftover.record, signal.SIGTERM)
    pending = _wait_gone(leftovers, grace_s)
    for leftover in pending:
        _signal(leftover.record, signal.SIGKILL)
    return _wait_gone(pending, grace_s)


def collect(store: Path, dry_run: bool = False) -> Survey:
    """Stop every leftover in ``store`` (unless ``dry_run``), and mark the runs that are
    then wholly gone as stopped, so that later surveys skip them."""
    found = survey(store)
    if dry_run:
        return found
    found.unstoppable = stop(found.leftovers)
    if found.containers:
        from lockharness.compose import cleanup

        for run_dir in found.containers:
            try:
                found.removed += cleanup.remove_run(run_dir)
            except ClusterError as e:  # the next gc tries again
                log.warning("%s", e)
    survivors = {leftover.run_dir for leftover in found.unstoppable}
    for path in found.dead_runs:
        if path.parent not in survivors:
            mark_stopped(path)
    return found
