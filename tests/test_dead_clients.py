"""A dead client leaves the resource: a worker's death is recorded in the history (the
nemesis's ``died`` event, faults.deaths), and the checker counts a dead client neither
among the resource's occupants nor as holding or trying after it (checker.digest)."""

from __future__ import annotations

import io
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from lockharness.checker import (
    BadValue,
    Impossible,
    ResourceWitness,
    Verdict,
    check_history,
    critical_sections,
)
from lockharness.cluster.process import ManagedProcess
from lockharness.core.history import DIED, Event, HistoryError, read_history
from lockharness.core.live import LiveHistory
from lockharness.faults.base import FaultContext
from lockharness.faults.deaths import WorkerDeaths
from lockharness.faults.kinds.client_kill import ClientKill
from lockharness.faults.spec import FaultSpec
from lockharness.harness.run.progress import ProgressLine
from lockharness.harness.run.runner import Watch, WorkerDied, _watch
from lockharness.workloads.recorder import Recorder
from lockharness.workloads.worker import CRASH_EXIT_CODE
from tests.test_checker import MS, History

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

TTL_MS = 100


def died(h: History, time: int, *processes: int, worker: str = "w1") -> History:
    value = {"worker": worker, "processes": {worker: list(processes)}, "cause": "client-kill"}
    return h.add("nemesis", "info", DIED, time, value=value, key=None)


def holder_then_successor(death_ms: int | None, late_sign_ms: int | None = None) -> History:
    """p0 takes the lock (a 100 ms TTL), enters and never comes back; died at
    ``death_ms`` (None: no death recorded). Its lease expires; p1 takes the lock at 150 ms
    and enters: the resource still lists p0's token. ``late_sign_ms``: p0 shows a sign of
    life then (a call that errs), after its death was recorded."""
    h = History()
    h.add(0, "invoke", "acquire", 0, value={"ttl_ms": TTL_MS})
    h.add(0, "ok", "acquire", 1 * MS, "a", {"deadline": 100 * MS, "grants": ["n1"]})
    h.add(0, "invoke", "enter", 2 * MS, "a")
    h.add(0, "ok", "enter", 3 * MS, "a", {"occupancy": 1, "others": []})
    if death_ms is not None:
        died(h, death_ms * MS, 0)
    h.add(1, "invoke", "acquire", 149 * MS, value={"ttl_ms": TTL_MS})
    h.add(1, "ok", "acquire", 150 * MS, "b", {"deadline": 250 * MS, "grants": ["n1"]})
    h.add(1, "invoke", "enter", 151 * MS, "b")
    h.add(1, "ok", "enter", 152 * MS, "b", {"occupancy": 2, "others": ["a"]})
    if late_sign_ms is not None:
        h.add(0, "info", "extend", late_sign_ms * MS, "a", {"error": "x"})
    h.add(1, "invoke", "exit", 180 * MS, "b")
    h.add(1, "ok", "exit", 181 * MS, "b")
    h.add(1, "invoke", "release", 182 * MS, "b")
    h.add(1, "ok", "release", 183 * MS, "b")
    return h


def test_a_killed_holder_whose_lease_expired_is_not_inside_when_the_next_one_enters() -> None:
    result = check_history(holder_then_successor(death_ms=20).events)
    assert result.verdict is Verdict.VALID, result.reasons
    assert result.stats.resource_violations == 0 and result.fencing.resource_consistent
    # Its section ends at its death, not at its last event (the enter ok at 3 ms).
    dead = next(s for s in critical_sections(holder_then_successor(20).events) if s.process == 0)
    assert (dead.end, dead.closed) == (20 * MS, False)


def test_without_the_death_the_same_history_is_invalid() -> None:
    # The rule is what decides: the resource's answers are the same in both histories.
    result = check_history(holder_then_successor(death_ms=None).events)
    assert result.verdict is Verdict.INVALID
    assert result.stats.resource_violations == 1 and result.stats.mutex_violations == 0
    dead = next(s for s in critical_sections(holder_then_successor(None).events) if s.process == 0)
    assert dead.end == 3 * MS  # to its last event, as before


def test_a_client_that_died_after_the_next_one_entered_still_counts() -> None:
    # Alive when the resource answered: the witness stands, and its section, running to
    # its death, overlaps the newcomer's: both views say so.
    result = check_history(holder_then_successor(death_ms=160).events)
    assert result.verdict is Verdict.INVALID
    assert result.stats.resource_violations == 1 and result.stats.mutex_violations == 1


def test_a_sign_of_life_after_a_recorded_death_cannot_be_true() -> None:
    # The controller records a death once it has reaped the worker, on the same clock as
    # the worker's events: nothing of the worker can come later (checker.rules).
    events = holder_then_successor(death_ms=20, late_sign_ms=160).events
    with pytest.raises(Impossible, match=r"event \d+ \(extend invoke of process 0\).*after-death"):
        check_history(events)
    assert check_history(holder_then_successor(death_ms=160, late_sign_ms=160).events)


def test_a_client_killed_outside_the_resource_changes_nothing() -> None:
    def history(with_death: bool) -> History:
        h = History().lease(0, "a", 1 * MS, 50 * MS, deadline=100 * MS, ttl_ms=TTL_MS)
        h.add(0, "ok", "enter", 2 * MS, "a", {"occupancy": 1, "others": []})
        if with_death:
            died(h, 60 * MS, 0)
        h.lease(1, "b", 70 * MS, 120 * MS, deadline=170 * MS, ttl_ms=TTL_MS)
        h.add(1, "ok", "enter", 71 * MS, "b", {"occupancy": 1, "others": []})
        return h

    with_death, without = check_history(history(True).events), check_history(history(False).events)
    assert with_death.verdict is without.verdict is Verdict.VALID

    def spans(h: History) -> list[tuple[int | str, int, int, bool]]:
        return [(s.process, s.start, s.end, s.closed) for s in critical_sections(h.events)]

    assert (
        spans(history(True))
        == spans(history(False))
        == [
            (0, 1 * MS, 50 * MS, True),
            (1, 70 * MS, 120 * MS, True),
        ]
    )
    assert with_death.stats.resource_violations == without.stats.resource_violations == 0


def test_a_live_client_beside_a_dead_one_is_still_counted() -> None:
    h = History()
    h.add(0, "ok", "acquire", 1 * MS, "a", {"deadline": 100 * MS, "grants": ["n1"]})
    h.add(0, "ok", "enter", 3 * MS, "a", {"occupancy": 1, "others": []})
    died(h, 20 * MS, 0)
    h.add(2, "ok", "acquire", 140 * MS, "c", {"deadline": 240 * MS, "grants": ["n1"]})
    h.add(2, "ok", "enter", 141 * MS, "c", {"occupancy": 2, "others": ["a"]})  # a: dead
    h.add(1, "ok", "acquire", 150 * MS, "b", {"deadline": 250 * MS, "grants": ["n1"]})
    h.add(1, "ok", "enter", 152 * MS, "b", {"occupancy": 3, "others": ["a", "c"]})
    result = check_history(h.events)
    assert result.verdict is Verdict.INVALID
    (seen,) = [w for w in result.witnesses if isinstance(w, ResourceWitness)]
    assert (seen.process, seen.occupancy, seen.others) == (1, 2, ["c"])  # of the living


def test_a_dead_clients_unanswered_acquire_stops_trying_at_its_death() -> None:
    def history(with_death: bool) -> History:
        h = History().lease(0, "a", 1 * MS, 10 * MS, ttl_ms=TTL_MS)
        h.add(1, "invoke", "acquire", 20 * MS, value={"ttl_ms": TTL_MS})
        if with_death:
            died(h, 30 * MS, 1)
        return h.add("nemesis", "info", "heal", 2000 * MS, value={"phase": "heal"}, key=None)

    assert check_history(history(False).events).liveness.verdict == "stuck"  # to the end
    assert check_history(history(True).events).liveness.verdict == "ok"  # stopped at its death


def test_a_death_of_the_wrong_shape_is_refused() -> None:
    h = holder_then_successor(death_ms=None)
    h.add("nemesis", "info", DIED, 200 * MS, value={"processes": [0]}, key=None)
    with pytest.raises(BadValue, match=r"value\.processes"):
        check_history(h.events)
    assert issubclass(BadValue, HistoryError)


# The controller's side: every death recorded once, when it is known.


def shard_events(path: Path) -> list[Event]:
    return [e for e in read_history(path) if e.f == DIED]


def test_worker_deaths_are_recorded_once_with_their_processes(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "history.nemesis.jsonl", time.monotonic_ns)
    deaths = WorkerDeaths(recorder, threads_per_worker=3)
    assert deaths.died(2, -9, "client-kill")
    assert not deaths.died(2, -9, "exited")  # the runner seeing it gone later: no second
    assert deaths.died(1, 86, "crash-point")
    recorder.close()
    found = shard_events(tmp_path / "history.nemesis.jsonl")
    assert [(e.process, e.type, e.value) for e in found] == [
        ("nemesis", "info", {"worker": "w2", "exit_code": -9, "cause": "client-kill",
                             "processes": {"w2": [3, 4, 5]}}),
        ("nemesis", "info", {"worker": "w1", "exit_code": 86, "cause": "crash-point",
                             "processes": {"w1": [0, 1, 2]}}),
    ]  # fmt: skip


def sleeper(tmp_path: Path, name: str, code: str = "import time; time.sleep(60)") -> ManagedProcess:
    worker = ManagedProcess(name, [sys.executable, "-c", code], tmp_path / f"{name}.log")
    worker.start()
    return worker


def test_a_client_kill_records_the_death_after_the_worker_is_gone(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "nemesis.jsonl", time.monotonic_ns)
    workers = [sleeper(tmp_path, "worker-w1"), sleeper(tmp_path, "worker-w2")]
    try:
        ctx = FaultContext(
            cast(Any, None),  # a client kill touches no node
            workers,
            LiveHistory([], 2),
            random.Random(1),
            threads_per_worker=2,
            deaths=WorkerDeaths(recorder, 2),
        )
        kill = ClientKill(FaultSpec("client-kill", "client-kill"), ctx, 1)
        details = kill.start(["w2"])
        assert details["processes"] == {"w2": [2, 3]}
        assert not workers[1].running() and workers[0].running()
        kill.start(["w2"])  # a later shot at the dead worker: no second death
    finally:
        for worker in workers:
            worker.kill()
    recorder.close()
    (death,) = shard_events(tmp_path / "nemesis.jsonl")
    assert death.value == {
        "worker": "w2",
        "exit_code": -9,
        "cause": "client-kill",
        "processes": {"w2": [2, 3]},
    }


def watch_of(tmp_path: Path, workers: list[ManagedProcess], killed: set[int]) -> Watch:
    recorder = Recorder(tmp_path / "nemesis.jsonl", time.monotonic_ns)
    progress = ProgressLine(Console(file=io.StringIO()), "test")
    deaths = WorkerDeaths(recorder, 1)
    return Watch(workers, LiveHistory([], 1), progress, time.monotonic_ns(), 30.0, killed, deaths)


def test_the_runner_records_a_crash_point_death_and_goes_on(tmp_path: Path) -> None:
    crashed = sleeper(tmp_path, "worker-w1", f"import os; os._exit({CRASH_EXIT_CODE})")
    done = sleeper(tmp_path, "worker-w2", "pass")  # exits 0: finished, not dead
    watch = watch_of(tmp_path, [crashed, done], killed={1})  # w1's crash point was armed
    _watch(watch, deadline_s=30.0)  # returns once none runs, without WorkerDied
    (death,) = shard_events(tmp_path / "nemesis.jsonl")
    assert death.value is not None
    assert (death.value["worker"], death.value["cause"]) == ("w1", "crash-point")
    assert death.value["processes"] == {"w1": [0]}


def test_the_runner_records_a_worker_that_died_unbidden_then_stops_the_run(
    tmp_path: Path,
) -> None:
    gone = sleeper(tmp_path, "worker-w1", "raise SystemExit(3)")
    alive = sleeper(tmp_path, "worker-w2")
    try:
        watch = watch_of(tmp_path, [gone, alive], killed=set())
        with pytest.raises(WorkerDied, match="worker w1 exited with code 3"):
            _watch(watch, deadline_s=30.0)
    finally:
        alive.kill()
    (death,) = shard_events(tmp_path / "nemesis.jsonl")
    assert death.value is not None
    assert (death.value["worker"], death.value["exit_code"], death.value["cause"]) == (
        "w1",
        3,
        "exited",
    )
    assert json.loads(death.to_json())["f"] == "died"
