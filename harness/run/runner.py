"""One run: cluster up, workers go, history recorded, everything down, history checked.

Teardown is in a finally block that no stop signal can cut short, so a run never leaves a
process behind: not on success, not on an exception, not on Ctrl-C or SIGTERM/HUP/QUIT,
not when a worker dies; and should the controller itself die, its children die with it
(cluster.spawner).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from lockharness.checker import CheckResult, check_history
from lockharness.cluster.base import Cluster, Replicated
from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.process import ManagedProcess
from lockharness.core.clock import ClockControl
from lockharness.core.errors import BadInput, ClusterError
from lockharness.core.history import INFO, NEMESIS, Event
from lockharness.core.interrupts import shielded
from lockharness.core.live import LiveHistory
from lockharness.core.log_bound import LogCut
from lockharness.core.run_dir import RunDir
from lockharness.core.shards import merge_into
from lockharness.faults import registry
from lockharness.faults.anchor import AnchorGate
from lockharness.faults.base import FaultContext
from lockharness.faults.deaths import Cause, WorkerDeaths
from lockharness.faults.nemesis import Nemesis
from lockharness.harness.reports import write_reports
from lockharness.harness.run.backends import make_cluster
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.run.cluster_start import NOT_STARTED, ClusterNotStarted, start_cluster
from lockharness.harness.run.node_record import NodeRecord
from lockharness.harness.run.progress import ProgressLine
from lockharness.harness.run.recheck import (
    node_quorum,
    node_truth,
    program_hangs,
    program_restarts,
)
from lockharness.harness.run.replay import write_replay
from lockharness.harness.run.runlog import run_log
from lockharness.harness.scenario import Scenario, resolve_scenario, to_yaml
from lockharness.harness.scenario.judgment import RunFacts, exit_code, judge
from lockharness.harness.store.layout import create_run_dir, update_latest
from lockharness.workloads.anchor_gate import GateTask
from lockharness.workloads.plugins import PLUGIN_PATH_ENV
from lockharness.workloads.recorder import Recorder
from lockharness.workloads.task import WorkerTask, encode_task
from lockharness.workloads.worker import CRASH_EXIT_CODE, HISTORY_FAILED_EXIT_CODE

log = logging.getLogger("lockharness")

_POLL_S = 0.1
_WORKER_STOP_GRACE_S = 5.0  # on top of hold_max: a worker finishes its cycle first


@dataclass
class RunOutcome:
    run_dir: Path
    scenario: Scenario
    result: CheckResult
    interrupted: bool = False
    worker_exits: dict[int, int | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # the execution's: valid -> unknown
    logs_cut: list[LogCut] = field(default_factory=list)  # logs kept to their head (log cap)
    # The scenario its replay.yaml holds (None: not written), handed back in memory.
    replay: Scenario | None = None

    @property
    def as_expected(self) -> bool:
        return self.scenario.expectation.met_by(self.result)

    @property
    def exit_code(self) -> int:
        return exit_code(self.result, self.scenario.expectation, self.interrupted)


# How a run's reason says its clients never started (a program that cannot start, a
# library missing in the workers): explore counts such trials as it counts clusters.
CLIENTS_NOT_READY = "before its clients were ready"
# How a run's reason begins when the harness itself failed mid-run (a control call that
# raised, a bug of ours): the run is unknown, never a verdict on the lock.
HARNESS_FAILED = "the harness failed"


# Runs in a row the harness could not run (a cluster, its clients, the harness itself):
# then explore and suite stop, unknown, saying why; one such run is only unknown.
HARNESS_FAILURES_IN_A_ROW = 3


def harness_could_not_run(reason: str) -> bool:
    """The reason says the harness, not the lock, kept this run from testing anything:
    explore and suite stop after several such runs in a row."""
    return reason.startswith((NOT_STARTED, HARNESS_FAILED)) or CLIENTS_NOT_READY in reason


def failing_in_a_row(first_reasons: Sequence[str | None], runs: str) -> str | None:
    """Why a night stops (explore's trials, suite's ``runs``): the first reasons of its
    latest runs (None for a run that was not unknown), in the order they ended, all say
    the harness could not run them."""
    failed = [
        reason
        for reason in first_reasons[-HARNESS_FAILURES_IN_A_ROW:]
        if reason is not None and harness_could_not_run(reason)
    ]
    if len(failed) < HARNESS_FAILURES_IN_A_ROW:
        return None
    return f"{len(failed)} {runs} in a row could not run: {failed[-1]}"


def harness_failed(e: BaseException) -> str:
    """A run's reason when the harness itself raised ``e``: its kind and first line."""
    return f"{HARNESS_FAILED}: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}"


class WorkerDied(Exception):
    """A worker process exited before the run's end."""


def resolve_seed(scenario: Scenario) -> Scenario:
    if scenario.seed is not None:
        return scenario
    return dataclasses.replace(scenario, seed=random.SystemRandom().randrange(2**31))


def _worker_tasks(
    scenario: Scenario,
    cluster: Cluster,
    run_dir: RunDir,
    t0_ns: int,
    anchor_gate: GateTask | None = None,
) -> list[WorkerTask]:
    """Each worker's task: the scenario's typed workload and client, and its own part."""
    w, client = scenario.workload, scenario.client.task()
    assert scenario.seed is not None
    return [
        WorkerTask(
            worker=worker,
            first_process=(worker - 1) * w.threads,
            nodes=tuple(cluster.worker_endpoints(worker)),
            resource=cluster.resource,
            discovery=cluster.discovery(worker) if isinstance(cluster, Replicated) else None,
            client=client,
            workload=w,
            t0_ns=t0_ns,
            go_path=str(run_dir.go),
            end_ns=scenario.duration_ns,
            seed=scenario.seed,
            history_path=str(run_dir.shard(worker)),
            anchor_gate=anchor_gate,
        )
        for worker in range(1, w.workers + 1)
    ]


def _worker_env(scenario: Scenario) -> dict[str, str]:
    """A plug-in client's directories, so that each worker imports the same module file
    the scenario loader checked: ahead of the worker's own sys.path (whose first entry,
    under -m, is the cwd, which could hold another module of that name)."""
    path = scenario.client.path
    plugin = {PLUGIN_PATH_ENV: os.pathsep.join(path)} if path else {}
    return plugin | scenario.client.worker_env()  # another release of its library


def _start_workers(
    tasks: list[WorkerTask], run_dir: RunDir, env: dict[str, str], ledger: ProcessLedger
) -> list[ManagedProcess]:
    workers = []
    for task in tasks:
        name = f"worker-w{task.worker}"
        config_path = run_dir.worker_config(task.worker)
        config_path.write_bytes(encode_task(task))
        argv = [sys.executable, "-m", "lockharness.workloads.worker", str(config_path)]
        log_path = run_dir.worker_log(task.worker)
        worker = ManagedProcess(name, argv, log_path, env, ledger)
        worker.start()
        workers.append(worker)
    return workers


_READY_TIMEOUT_S = 120.0  # a JVM client on a loaded machine takes seconds; minutes is broken


def _await_ready(workers: list[ManagedProcess], run_dir: RunDir, console: Console) -> None:
    """Wait until every worker has built its clients; a worker that dies first is
    WorkerDied."""
    waiting_since = time.monotonic()
    said = False
    while not all(run_dir.ready(i).exists() for i in range(1, len(workers) + 1)):
        for i, worker in enumerate(workers, start=1):
            if not worker.running():
                raise WorkerDied(
                    f"worker w{i} exited with code {worker.exit_code()} "
                    f"{CLIENTS_NOT_READY}: {worker.log_tail(3)}"
                )
        waited = time.monotonic() - waiting_since
        if waited > _READY_TIMEOUT_S:
            raise WorkerDied(f"the workers' clients were not ready within {_READY_TIMEOUT_S:.0f}s")
        if waited > 2.0 and not said:  # slow starters (client programs) are worth a word
            console.print("starting the clients...", highlight=False)
            said = True
        time.sleep(_POLL_S)
    log.info("clients ready after %.2fs", time.monotonic() - waiting_since)


def _go(run_dir: RunDir, t0_ns: int) -> None:
    """Start the workers' clients: the run's t0, which every worker reads from the go file
    (written once every worker's clients are built)."""
    partial = run_dir.go_partial
    partial.write_text(f"{t0_ns}\n")
    partial.replace(run_dir.go)  # whole or not at all, as the workers read it


@dataclass
class Watch:
    """What the runner follows while the run goes."""

    workers: list[ManagedProcess]
    live: LiveHistory
    progress: ProgressLine
    t0_ns: int
    total_s: float
    killed: Collection[int] = ()  # workers whose death a fault intended (and has not mourned)
    deaths: WorkerDeaths = field(default_factory=lambda: WorkerDeaths(None, None))


def _watch(watch: Watch, deadline_s: float) -> None:
    """Follow the run until ``deadline_s`` (since t0) or until every worker is done.

    Every worker seen gone with a failure is recorded dead in the history (faults.deaths),
    then raises WorkerDied, unless a fault meant it (``killed``: a client kill, an armed
    crash point).
    """
    while True:
        running = any(worker.running() for worker in watch.workers)  # before the exit codes
        watch.live.refresh()
        elapsed_s = (time.monotonic_ns() - watch.t0_ns) / 1e9
        watch.progress.update(
            min(elapsed_s, watch.total_s), watch.total_s, watch.live.ops, watch.live.cycles
        )
        for i, worker in enumerate(watch.workers, start=1):
            code = worker.exit_code()
            if code in (None, 0):
                continue  # running, or done: its clients finished their cycles
            watch.deaths.died(i, code, _cause(i, code, watch.killed))
            if code == HISTORY_FAILED_EXIT_CODE:
                raise WorkerDied(
                    f"worker w{i} could not write its history at {elapsed_s:.2f}s "
                    f"(disk full?): {worker.log_tail(1)}"
                )
            if i not in watch.killed:
                raise WorkerDied(f"worker w{i} exited with code {code} at {elapsed_s:.2f}s")
        if not running or elapsed_s >= deadline_s:
            return
        time.sleep(_POLL_S)


def _cause(worker: int, code: int, killed: Collection[int]) -> Cause:
    """Why a worker seen gone died (a client kill records its own, at the kill)."""
    if worker in killed and code == CRASH_EXIT_CODE:
        return "crash-point"
    if worker in killed and code == -signal.SIGKILL:
        return "client-kill"
    return "exited"


def _stop_workers(workers: list[ManagedProcess], grace_s: float) -> dict[int, int | None]:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait_or_kill(grace_s)
    return {i: worker.exit_code() for i, worker in enumerate(workers, start=1)}


def _nothing() -> None:
    pass


def _record_hooks(node_record: NodeRecord | None) -> dict[str, Any]:
    """What the faults tell the node record (faults.base.FaultContext): none without one."""
    if node_record is None:
        return {}
    return {"promoted": node_record.snapshot, "restarting": node_record.restarting}


def _watch_failovers(
    cluster: Cluster, recorder: Recorder, t0_ns: int, node_record: NodeRecord | None
) -> Callable[[], None]:
    """Record every failover Sentinel announces, so witnesses can name it; and what the
    promoted replica held then."""
    if not isinstance(cluster, Replicated):
        return _nothing

    def switched(old: str, new: str, began_ns: int | None) -> None:
        began = began_ns - t0_ns if began_ns is not None else None
        value = {"from": old, "to": new, "by": "sentinel", "began": began}
        recorder.record(NEMESIS, INFO, "failover", value=value)
        if node_record is not None:
            node_record.snapshot(new)

    return cluster.watch_failovers(switched)


def _client_clocks(
    scenario: Scenario, tasks: list[WorkerTask], run_dir: RunDir
) -> dict[int, ClockControl]:
    """A wall-clock control per worker, when a client-clock fault is planned."""
    if not any(registry.KINDS[fault.kind].needs_client_clocks for fault in scenario.faults.faults):
        return {}
    return {c.worker: ClockControl(run_dir.client_clock(c.worker)) for c in tasks}


@dataclass
class Execution:
    """What happened while the run went, beside its history."""

    problems: list[str] = field(default_factory=list)
    interrupted: bool = False
    exits: dict[int, int | None] = field(default_factory=dict)
    logs_cut: list[LogCut] = field(default_factory=list)  # set once every writer is gone
    cluster: Cluster | None = None  # the one started (or the last tried), for results.json
    notes: list[str] = field(default_factory=list)  # said with the verdict, never changing it


def _execute(
    scenario: Scenario, build: Callable[[], Cluster], run_dir: RunDir, console: Console
) -> Execution:
    """Cluster up, workers and nemesis go, faults healed, everything down: always."""
    w, seed = scenario.workload, scenario.seed
    assert seed is not None
    total_s = scenario.duration_ns / 1e9
    grace_s = w.hold_max_ns / 1e9 + _WORKER_STOP_GRACE_S
    execution = Execution()
    workers: list[ManagedProcess] = []
    nemesis: Nemesis | None = None
    stop_watching: Callable[[], None] = _nothing
    client_clocks: dict[int, ClockControl] = {}
    recorder: Recorder | None = None
    node_record: NodeRecord | None = None
    gate: AnchorGate | None = None
    live: LiveHistory | None = None
    cluster: Cluster | None = None
    try:
        cluster = start_cluster(build, partial(setattr, execution, "cluster"), console)
        # A fault anchored to a lease: the workers reach the nemesis through this gate.
        gate = AnchorGate.for_plan(scenario.faults)
        gate_task = None if gate is None else gate.task
        tasks = _worker_tasks(scenario, cluster, run_dir, 0, gate_task)  # t0: at the go, below
        client_clocks = _client_clocks(scenario, tasks, run_dir)  # before workers map them
        workers = _start_workers(tasks, run_dir, _worker_env(scenario), cluster.ledger)
        _await_ready(workers, run_dir, console)
        t0_ns = time.monotonic_ns()
        live = LiveHistory([Path(c.history_path) for c in tasks], w.threads)

        def clock() -> int:  # the history's time base
            return time.monotonic_ns() - t0_ns

        recorder = Recorder(run_dir.nemesis_shard, clock)
        if scenario.cluster.node_record:  # before the go: it begins before any client acts
            node_record = NodeRecord.start(cluster, w.key_names, run_dir, clock)
        deaths = WorkerDeaths(recorder, w.threads)
        ctx = FaultContext(
            cluster,
            workers,
            live,
            random.Random(f"{seed}:nemesis-targets"),
            restart_delay_ns=scenario.cluster.restart_delay_ns,
            crash_point=run_dir.crash_point,
            client_clocks=client_clocks,
            threads_per_worker=w.threads,
            deaths=deaths,
            **_record_hooks(node_record),
        )
        stop_watching = _watch_failovers(cluster, recorder, t0_ns, node_record)
        nemesis = Nemesis(scenario.faults, ctx, recorder, clock, seed, scenario.duration_ns)
        if gate is not None:
            gate.serve(nemesis)
        nemesis.start()  # what is due at 0 s is in effect before any client acts
        _go(run_dir, t0_ns)
        with ProgressLine(console, scenario.name) as progress:
            watch = Watch(workers, live, progress, t0_ns, total_s, ctx.killed_workers, deaths)
            _watch(watch, deadline_s=total_s)
            # Heal now: a paused worker must be resumed to finish its last cycle and stop.
            finishing, nemesis = nemesis, None
            execution.problems += finishing.finish()
            _watch(watch, deadline_s=total_s + grace_s)
        if any(worker.running() for worker in workers):
            raise WorkerDied(f"workers still running {grace_s:.1f}s after the end")
    except KeyboardInterrupt as e:  # Ctrl-C, or a stop signal (core.interrupts)
        execution.interrupted = True
        signal_name = str(e) or "SIGINT"
        execution.problems.append(
            f"interrupted ({signal_name}): the history covers only part of the run"
        )
        log.warning("interrupted")
    except WorkerDied as e:
        execution.problems.append(str(e))
        log.error("%s", e)
    except ClusterNotStarted as e:  # torn down already: no client ran, nothing was tested
        execution.problems.append(str(e))
    except OSError as e:  # e.g. a full disk: the run stops here, what it recorded is checked
        execution.problems.append(f"the run stopped: {e}")
        log.error("the run stopped: %s", e)
    except BadInput:  # the user's to fix (exit 254), not a result of this run
        raise
    except Exception as e:  # a control call that raised, or our bug: unknown, the night goes on
        execution.problems.append(harness_failed(e))
        log.exception("the harness failed")
    finally:
        with shielded() as shield:  # no signal cuts a teardown short
            if nemesis is not None:  # aborted mid-run: heal first (a paused worker must go on)
                execution.problems += nemesis.finish()
            stop_watching()
            execution.exits = _stop_workers(workers, grace_s)
            if gate is not None:
                gate.close()
            for control in client_clocks.values():
                control.close()
            if node_record is not None:  # after the last worker: the record ends complete
                node_record.stop(run_dir, clock(), live)  # it logs why, if it writes none
                if node_record.problems:  # the history's verdict stands; claims go unjudged
                    why = "; ".join(node_record.problems)
                    execution.notes.append(f"no {RunDir.NODE_RECORD}, no claims judged: {why}")
            if cluster is not None:
                try:
                    cluster.stop()
                except ClusterError as e:  # said; `lockharness gc` stops what it left
                    execution.problems.append(f"{HARNESS_FAILED} to stop the cluster: {e}")
                    log.error("stopping the cluster: %s", e)
        if recorder is not None and recorder.failed is not None:
            execution.problems.append(
                f"the nemesis's events were not all written: {recorder.failed}"
            )
        if shield.received:  # the history is whole: stop after this run, keep the verdict
            execution.interrupted = True
            log.warning("%s during teardown: finished it first", shield.names)
    return execution


def run_scenario(
    scenario: Scenario,
    *,
    store: Path,
    binaries: Binaries,
    console: Console,
    run_dir: RunDir | None = None,
) -> RunOutcome:
    """``run_dir``: one made already (a parallel job's, harness/parallel/jobs.py); else new."""
    # A caller that skipped with_overrides (a replay, a shrink step): a plug-in is imported
    # here, still before anything is made.
    scenario = resolve_seed(resolve_scenario(scenario))
    run_dir = run_dir or create_run_dir(store, scenario.name)
    run_dir.scenario.write_text(to_yaml(scenario))
    update_latest(store, run_dir)
    client = scenario.client.label  # a plug-in's is its class, "module:ClassName"
    console.print(
        f"[bold]{scenario.name}[/] client {client} seed {scenario.seed} → {run_dir.path}",
        highlight=False,
    )
    with run_log(run_dir) as logs:
        log.info(
            "run %s client %s seed %s in %s", scenario.name, client, scenario.seed, run_dir.path
        )

        def build() -> Cluster:
            return make_cluster(scenario.backend, scenario, binaries, run_dir.path)

        execution = _execute(scenario, build, run_dir, console)
        # The cluster started, or the last tried; none only if interrupted while building one.
        cluster = {} if execution.cluster is None else execution.cluster.describe()
        execution.logs_cut = logs.cuts()  # the cluster and workers are down: logs are whole
        if note := concluding_note(run_dir.path):
            console.print(note, highlight=False)
        with shielded() as shield:  # checking what was recorded is not cut short either
            outcome = conclude(scenario, run_dir.path, execution, cluster)
        if shield.received:  # the check is whole: stop after this run, keep the verdict
            outcome = dataclasses.replace(outcome, interrupted=True)
        log.info("verdict %s (expected %s)", outcome.result.verdict, scenario.expectation)
    return outcome


_LONG_HISTORY_BYTES = 256 << 20  # about 1.7M events: concluding takes half a minute or more


def concluding_note(run_dir: Path) -> str | None:
    """What to say before concluding a long run: the conclusion prints nothing until the
    verdict, and a Ctrl-C meanwhile waits for it. None for a history of ordinary size."""
    size = sum(path.stat().st_size for path in RunDir(run_dir).shards() if path.exists())
    if size < _LONG_HISTORY_BYTES:
        return None
    return (
        f"concluding: merging, checking and drawing {size / 2**20:,.0f} MB of history; this "
        "takes a while (about a minute per 600 MB here), and Ctrl-C waits for it"
    )


def conclude(
    scenario: Scenario, run_dir: Path, execution: Execution, cluster: dict[str, Any]
) -> RunOutcome:
    """Merge the shards, check, keep results.json, the reports and replay.yaml. A file that
    cannot be written (a full disk) costs that file and becomes a reason, never the
    verdict."""
    w = scenario.workload
    notes: list[str] = []  # torn last lines dropped from shards
    # Streamed, never held whole: a soak of millions of events is merged, checked and
    # drawn in memory bounded by its lock cycles.
    files = RunDir(run_dir)
    history, error = merge_into(files.history, files.shards(), notes)
    problems = list(execution.problems)
    if error is not None:
        notes.append(
            f"{RunDir.HISTORY} not written ({error.strerror or error}); `check` merges the shards"
        )
    truth = node_truth(scenario, files)
    checked = check_history(history, expected_processes=range(w.workers * w.threads), truth=truth)
    facts = RunFacts(
        expectation=scenario.expectation,
        problems=tuple(problems),
        min_cycles=scenario.min_cycles,
        restarts=program_restarts(run_dir),
        hangs=program_hangs(run_dir),
        notes=(*(cut.describe() for cut in execution.logs_cut), *execution.notes, *notes),
    )
    result = judge(checked, facts)
    outcome = RunOutcome(
        run_dir,
        scenario,
        result,
        execution.interrupted,
        execution.exits,
        problems,
        execution.logs_cut,
    )
    outcome = _write_replay(_write_reports(outcome, history))
    outcome = _save_results(outcome, cluster)
    if error is None and files.history.is_file():
        # history.jsonl holds every event: the workers' shards would store them twice.
        for shard in files.worker_shards():
            shard.unlink(missing_ok=True)
    return outcome


def _with_reason(outcome: RunOutcome, reason: str) -> RunOutcome:
    result = dataclasses.replace(outcome.result, reasons=[*outcome.result.reasons, reason])
    return dataclasses.replace(outcome, result=result)


def _save_results(outcome: RunOutcome, cluster: dict[str, Any]) -> RunOutcome:
    try:
        write_results(outcome, cluster)
    except OSError as e:
        log.error("%s not written: %s", RunDir.RESULTS, e)
        RunDir(outcome.run_dir).results.unlink(missing_ok=True)  # half a file misleads a re-check
        return _with_reason(outcome, f"{RunDir.RESULTS} not written ({e.strerror or e})")
    return outcome


def _write_reports(outcome: RunOutcome, history: Iterable[Event]) -> RunOutcome:
    """Draw the reports; a failure costs the reports, never the run: it becomes a reason."""
    try:
        write_reports(outcome.run_dir, history, outcome.result, outcome.scenario)
    except Exception as e:
        log.exception("reports not written")
        return _with_reason(outcome, f"reports not written: {type(e).__name__}: {e}")
    return outcome


def _write_replay(outcome: RunOutcome) -> RunOutcome:
    """The scenario that replays the faults as they ran; a failure becomes a reason."""
    try:
        replay = write_replay(outcome.scenario, outcome.run_dir)
    except Exception as e:  # the schedule unreadable, a full disk: never the verdict
        log.exception("%s not written", RunDir.REPLAY)
        RunDir(outcome.run_dir).replay.unlink(missing_ok=True)  # half a scenario misleads
        return _with_reason(outcome, f"{RunDir.REPLAY} not written: {type(e).__name__}: {e}")
    return dataclasses.replace(outcome, replay=replay)


def write_results(outcome: RunOutcome, cluster: dict[str, Any]) -> None:
    scenario = outcome.scenario
    results = {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "client": scenario.client.label,
        **outcome.result.to_dict(),
        "expect": scenario.expect,
        "expect_liveness": scenario.expect_liveness,
        "expect_resource": scenario.expectation.resource,
        "expect_tokens": scenario.expectation.tokens,
        "as_expected": outcome.as_expected,
        "interrupted": outcome.interrupted,
        "run_problems": outcome.problems,  # `check RUN_DIR` applies them again
        "worker_exit_codes": {f"w{i}": code for i, code in outcome.worker_exits.items()},
        "client_restarts": program_restarts(outcome.run_dir),
        "client_hangs": program_hangs(outcome.run_dir),
        "logs_cut": [cut.to_dict() for cut in outcome.logs_cut],
        "node_quorum": node_quorum(scenario),  # `check RUN_DIR` judges the claims by it
        "cluster": cluster,
    }
    RunDir(outcome.run_dir).results.write_text(json.dumps(results, indent=2) + "\n")
