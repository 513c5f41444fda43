"""Faults anchored to a lease, without servers: reading and refusing `anchor`, the clock
schedule left as it was, the nemesis's decisions (free to fire, targets that follow the
anchoring lease, what the events record), replay plans and the gate's round trip."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import pytest

from lockharness.cluster.base import Cluster
from lockharness.core.history import NEMESIS, Event, nemesis_event, read_history
from lockharness.core.live import HeldLease
from lockharness.core.occurrences import Occurrence
from lockharness.faults.anchor import AnchorGate, gate_task
from lockharness.faults.base import Fault, FaultContext
from lockharness.faults.nemesis import Nemesis
from lockharness.faults.plan_doc import plan_to_plain
from lockharness.faults.registry import KINDS
from lockharness.faults.replay import replay_plan
from lockharness.faults.schedule import build_schedule
from lockharness.faults.spec import Anchor, FaultPlan, FaultSpec
from lockharness.faults.workers import WorkerFault
from lockharness.harness.scenario import load_scenario
from lockharness.workloads.anchor_gate import GateClient
from lockharness.workloads.recorder import Recorder
from tests.conftest import lockharness

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
S = 1_000 * MS
HEAD = "description: d\nexpect: valid\nduration: 2s\nclient: single\ncluster: {nodes: 3}\n"


# ---- reading and refusing -------------------------------------------------------------


def _scenario(tmp_path: Path, faults: str, rest: str = "") -> Path:
    path = tmp_path / "anchored.yaml"
    path.write_text(HEAD + "faults:\n" + faults + rest)
    return path


def test_an_anchor_is_read_and_written_back_as_given(tmp_path: Path) -> None:
    path = _scenario(
        tmp_path,
        "  - {kind: pause, targets: holders, anchor: {validity: 0.9}, every: 1s}\n"
        "  - {kind: client-pause, targets: holders, anchor: {call: extend}}\n"
        "  - {kind: kill, targets: one, every: 1s}\n",
    )
    plan = load_scenario(str(path)).faults
    assert [f.anchor for f in plan.faults] == [Anchor(validity=0.9), Anchor(call="extend"), None]
    faults = plan_to_plain(plan)["faults"]
    assert faults[0]["anchor"] == {"validity": 0.9}
    assert faults[1]["anchor"] == {"call": "extend"}
    assert "anchor" not in faults[2]  # a timed fault's entry is written as before


@pytest.mark.parametrize(
    ("fault", "rest", "mentions"),
    [
        (
            "{kind: pause, targets: holders, anchor: {validity: 0}}",
            "",
            ["faults[0].anchor.validity", "a fraction above 0, at most 1"],
        ),
        (
            "{kind: pause, targets: holders, anchor: {validity: 1.5}}",
            "",
            ["faults[0].anchor.validity", "1.5", "a fraction above 0, at most 1"],
        ),
        (
            "{kind: pause, targets: holders, anchor: {call: renew}}",
            "",
            ["faults[0].anchor.call", "'renew'", "acquire, extend, release"],
        ),
        (
            "{kind: pause, targets: holders, anchor: {when: 1}}",
            "",
            ["faults[0].anchor.when", "validity, call"],
        ),
        (
            "{kind: pause, targets: holders, anchor: {}}",
            "",
            ["faults[0].anchor", "names no moment", "validity", "call"],
        ),
        (
            "{kind: pause, targets: holders, anchor: {validity: 0.5, call: extend}}",
            "",
            ["faults[0].anchor", "not both"],
        ),
        (
            "{kind: pause, targets: holders, anchor: 0.9}",
            "",
            ["faults[0].anchor", "a mapping with one key"],
        ),
        (
            "{kind: pause, targets: holder, anchor: {call: acquire}}",
            "",
            ["faults[0].targets", "no lease is held", "allowed: one, minority"],
        ),
        (
            "{kind: pause, name: edge, targets: holders, anchor: {call: release}}",
            "timeline:\n  - [1s, edge]\n",
            ["timeline[0].fault", "edge is anchored", "faults[0].anchor"],
        ),
    ],
)
def test_a_bad_anchor_is_refused_naming_the_key(
    tmp_path: Path, fault: str, rest: str, mentions: list[str]
) -> None:
    path = _scenario(tmp_path, f"  - {fault}\n", rest)
    store = tmp_path / "store"
    done = lockharness("run", str(path), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())  # rich wraps long lines
    for text in ["anchored.yaml", *mentions]:
        assert text in message, (text, message)
    assert not store.exists(), "a run directory was created for bad input"


def test_an_acquire_anchor_may_aim_at_the_holders_worker(tmp_path: Path) -> None:
    path = _scenario(
        tmp_path, "  - {kind: client-pause, targets: holders, anchor: {call: acquire}}\n"
    )
    assert load_scenario(str(path)).faults.faults[0].anchor == Anchor(call="acquire")


# ---- the clock's schedule -------------------------------------------------------------


def test_anchored_entries_take_no_clock_slot_and_leave_the_others_draws_alone() -> None:
    timed = FaultSpec("pause", "p", every_ns=300 * MS, probability=0.5)
    kill = FaultSpec("kill", "k", every_ns=700 * MS, probability=0.5)
    anchored = FaultSpec("pause", "a", every_ns=100 * MS, anchor=Anchor(validity=0.5))
    alone = build_schedule(FaultPlan((timed, kill)), 11, 10 * S)
    beside = build_schedule(FaultPlan((timed, anchored, kill)), 11, 10 * S)
    assert alone and [o for o in beside] == alone
    assert gate_task(FaultPlan((timed, kill)), "x") is None  # workers are told nothing


def test_a_replay_plan_drops_the_anchor_and_pins_each_occurrence() -> None:
    spec = FaultSpec("pause", "edge", targets="holders", anchor=Anchor(call="extend"))
    ran = Occurrence(
        number=3,
        fault="edge",
        kind="pause",
        category="pause-of-grant-node",
        targets=("n2",),
        index=0,
        due_ns=912 * MS,
        decided_ns=913 * MS,
        duration_ns=50 * MS,
    )
    plan = replay_plan(FaultPlan((spec,)), [ran])
    assert [f.anchor for f in plan.faults] == [None]
    assert [(e.at_ns, e.fault, e.targets) for e in plan.timeline] == [(913 * MS, "edge", ("n2",))]


# ---- the nemesis's decisions ----------------------------------------------------------


class Marker(Fault):
    """Touches nothing: the tests read what the nemesis decided."""

    kind = "test-anchor-marker"
    exposure = "fault-during-lease"
    summary = legend = "a marker"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        return {}

    def stop(self) -> dict[str, Any]:
        return {}


class WorkerMarker(WorkerFault, Marker):
    kind = "test-anchor-worker-marker"


class Newest:
    """The live history as the clock's targets see it: another lease than the anchor's."""

    def newest_lease(self) -> HeldLease:
        return HeldLease("k9", 7, "other", ("n5",), 0)

    def holder_workers(self) -> list[int]:
        return [4]


@pytest.fixture
def marker_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KINDS, Marker.kind, Marker)
    monkeypatch.setitem(KINDS, WorkerMarker.kind, WorkerMarker)


Build = Callable[..., tuple[Nemesis, list[int]]]


@pytest.fixture
def build(tmp_path: Path, marker_kinds: None) -> Iterator[Build]:
    """A nemesis over marker faults on a 5-node stand-in cluster; the clock is ``now[0]``
    unless ``real``."""
    made: list[Nemesis] = []

    def make(
        *specs: FaultSpec, run_ns: int = 10 * S, real: bool = False
    ) -> tuple[Nemesis, list[int]]:
        now = [0]
        t0 = time.monotonic_ns()

        def clock() -> int:
            return time.monotonic_ns() - t0 if real else now[0]

        nodes = [SimpleNamespace(name=f"n{i}") for i in range(1, 6)]
        cluster = cast("Cluster", SimpleNamespace(nodes=nodes, worker_count=4))
        ctx = FaultContext(cluster, [], Newest(), random.Random(1), threads_per_worker=1)
        recorder = Recorder(tmp_path / "nemesis.jsonl", clock)
        nemesis = Nemesis(FaultPlan(specs), ctx, recorder, clock, 7, run_ns)
        made.append(nemesis)
        return nemesis, now

    yield make
    for nemesis in made:
        nemesis._done.set()  # no heal: the markers touched nothing
        with nemesis._wake:
            nemesis._wake.notify()


def starts(tmp_path: Path) -> list[Event]:
    events = read_history(tmp_path / "nemesis.jsonl")
    return [e for e in events if e.process == NEMESIS and e.type == "info" and _phase(e) == "start"]


def _phase(e: Event) -> str:
    record = nemesis_event(e)
    return record.phase if record else ""


def call(
    name: str = "extend", process: int = 2, token: str | None = "t1", invoked: int = 0
) -> dict:
    return {
        "op": "call",
        "call": name,
        "worker": process + 1,
        "process": process,
        "key": "k0",
        "token": token,
        "grants": ["n1", "n3"],
        "invoked": invoked,
    }


def marker(**given: Any) -> FaultSpec:
    return FaultSpec(Marker.kind, **{"name": "m", "targets": "holders", **given})


def test_a_call_anchor_fires_at_most_once_per_every_and_never_while_in_effect(
    build: Build,
) -> None:
    spec = marker(anchor=Anchor(call="extend"), every_ns=500 * MS, duration_ns=200 * MS)
    nemesis, now = build(spec)
    assert nemesis.at_call(call()) == [1]
    now[0] = 100 * MS
    assert nemesis.at_call(call()) == []  # in effect (and within every)
    nemesis.end(1)
    now[0] = 400 * MS
    assert nemesis.at_call(call()) == []  # taken out, but every has not passed
    now[0] = 500 * MS
    assert nemesis.at_call(call("release")) == []  # another call
    assert nemesis.at_call(call()) == [2]
    now[0] = 600 * MS
    assert nemesis.at_call(call()) == []  # in effect again


def test_without_every_it_fires_again_once_out_of_effect(build: Build) -> None:
    nemesis, _ = build(marker(anchor=Anchor(call="release")))
    assert nemesis.at_call(call("release")) == [1]
    assert nemesis.at_call(call("release")) == []
    nemesis.end(1)
    assert nemesis.at_call(call("release")) == [2]


def test_start_after_delays_the_first_and_nothing_fires_at_the_runs_end(build: Build) -> None:
    spec = marker(anchor=Anchor(call="extend"), start_after_ns=1 * S)
    nemesis, now = build(spec, run_ns=3 * S)
    now[0] = 999 * MS
    assert nemesis.at_call(call()) == []
    now[0] = 1 * S
    assert nemesis.at_call(call()) == [1]
    nemesis.end(1)
    now[0] = 3 * S
    assert nemesis.at_call(call()) == []  # the run is over
    now[0] = 2 * S
    nemesis._done.set()  # ending: finish() has begun
    assert nemesis.at_call(call()) == []


def test_an_anchored_occurrence_targets_the_anchoring_lease_and_records_it(
    build: Build, tmp_path: Path
) -> None:
    nodes = marker(anchor=Anchor(call="extend"))
    workers = FaultSpec(WorkerMarker.kind, "w", targets="holders", anchor=Anchor(call="extend"))
    nemesis, _ = build(nodes, workers)
    assert nemesis.at_call(call(process=2, token="t1", invoked=123)) == [1, 2]
    nemesis.end(1)
    first, second = starts(tmp_path)
    # The anchoring lease's grants and its holder's worker, not the newest lease's (n5, w4).
    assert first.value and first.value["targets"] == ["n1", "n3"]
    assert second.value and second.value["targets"] == ["w3"]
    anchor = {"call": "extend", "process": 2, "key": "k0", "token": "t1", "invoked": 123}
    assert nemesis_event(first) == msgspec.structs.replace(
        cast("Any", nemesis_event(first)), anchor=anchor
    )
    records = [nemesis_event(e) for e in read_history(tmp_path / "nemesis.jsonl")]
    assert all(r is not None and r.anchor == anchor for r in records)  # the stop's too
    assert [r.phase for r in records if r] == ["start", "start", "start", "start", "stop", "stop"]


def test_a_timed_occurrence_records_no_anchor(build: Build, tmp_path: Path) -> None:
    nemesis, _ = build(marker(every_ns=1 * S))
    nemesis.begin(nemesis.schedule[0])
    (start,) = starts(tmp_path)
    assert start.value is not None and "anchor" not in start.value
    assert cast("Any", nemesis_event(start)).anchor is None


def _wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def granted(nemesis: Nemesis, token: str, since: int, deadline: int | None, **more: Any) -> None:
    message = {"worker": 1, "process": 0, "key": "k0", "token": token, "grants": ["n2"]}
    message |= {"invoked": since, "since": since, "deadline": deadline, "ttl_ms": 1000}
    nemesis.granted(message | more)


def test_a_validity_anchor_fires_at_its_fraction_of_a_held_lease_only(
    build: Build, tmp_path: Path
) -> None:
    nemesis, _ = build(marker(anchor=Anchor(validity=0.5), duration_ns=10 * MS), real=True)
    nemesis.start()
    now = nemesis.clock()
    # Released before its moment: never fires. The second, held, is due later: once it
    # has fired, the first's moment has passed.
    granted(nemesis, "gone", now, now + 100 * MS)
    nemesis.released({"process": 0, "token": "gone"})
    granted(nemesis, "held", now, now + 300 * MS)
    _wait_for(lambda: len(starts(tmp_path)) == 1)
    (start,) = starts(tmp_path)
    record = cast("Any", nemesis_event(start))
    assert record.anchor["token"] == "held" and record.anchor["validity"] == 0.5
    due = now + 150 * MS
    assert record.anchor["at_ns"] == record.details["at_ns"] == due
    assert due <= start.time, "early"
    assert record.targets == ("n2",)


def test_a_lease_without_a_deadline_counts_its_ttl_from_the_invoke(build: Build) -> None:
    nemesis, _ = build(marker(anchor=Anchor(validity=0.5)))
    granted(nemesis, "t", 40 * MS, None, invoked=20 * MS, ttl_ms=1000)
    (action,) = nemesis._actions
    assert action.at_ns == 40 * MS + (1020 * MS - 40 * MS) // 2


def test_a_moment_past_the_runs_end_is_not_scheduled(build: Build) -> None:
    nemesis, _ = build(marker(anchor=Anchor(validity=0.9)), run_ns=1 * S)
    granted(nemesis, "t", 500 * MS, 1500 * MS)
    assert nemesis._actions == []


# ---- the gate ------------------------------------------------------------------------


def test_a_worker_asks_through_the_gate_and_the_fault_is_in_effect_when_it_answers(
    build: Build, tmp_path: Path
) -> None:
    spec = marker(anchor=Anchor(call="extend"))
    nemesis, _ = build(spec, FaultSpec(Marker.kind, "v", anchor=Anchor(validity=1.0)))
    gate = AnchorGate(FaultPlan(tuple(nemesis.specs.values())))
    assert gate.task.calls == ("extend",) and gate.task.grants
    gate.serve(nemesis)
    client = GateClient(gate.task, worker=3, process=2)
    try:
        client.ask("release", "k0", "t1", 5, ["n1"])  # not anchored on: never asked
        assert starts(tmp_path) == []
        client.ask("extend", "k0", "t1", 5, ["n4"])
        # Answered only once in effect: the start is recorded by now.
        (start,) = starts(tmp_path)
        assert start.value and start.value["targets"] == ["n4"]
        assert start.value["anchor"]["process"] == 2
        client.granted("k0", "t2", ["n2"], 6, 7, 8, 1000)
        client.released("k0", "t2")
        client.ask("extend", "k0", "t1", 9, ["n4"])  # in effect still: nothing new
        assert len(starts(tmp_path)) == 1
        # Told in order on one connection: the granted lease's moment is due by now.
        assert 8 in [a.at_ns for a in nemesis._actions]
    finally:
        client.close()
        gate.close()


def test_a_gate_that_does_not_answer_holds_a_call_up_at_most_a_second(
    build: Build, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    nemesis, _ = build(marker(anchor=Anchor(call="extend")))
    gate = AnchorGate(FaultPlan(tuple(nemesis.specs.values())))
    gate.serve(nemesis)
    monkeypatch.setattr("lockharness.workloads.anchor_gate.GATE_WAIT_S", 0.2)
    client = GateClient(gate.task, worker=1, process=0)
    try:
        with nemesis._lock:  # the nemesis busy (a slow stop): it cannot answer
            began = time.monotonic()
            client.ask("extend", "k0", "t1", 5, ["n1"])
            waited = time.monotonic() - began
        assert 0.2 <= waited < 1.0
        assert "no word from the nemesis on extend" in caplog.text
    finally:
        client.close()
        gate.close()


def test_a_holder_waits_for_the_gate_no_later_than_it_must_leave(build: Build) -> None:
    nemesis, _ = build(marker(anchor=Anchor(call="extend")))
    gate = AnchorGate(FaultPlan(tuple(nemesis.specs.values())))
    gate.serve(nemesis)
    client = GateClient(gate.task, worker=1, process=0)
    try:
        assert client.ask("release", "k0", "t1", 5, ["n1"]) is False  # not anchored on
        with nemesis._lock:  # the nemesis busy: it cannot answer
            began = time.monotonic()
            held = client.ask("extend", "k0", "t1", 5, ["n1"], wait_s=0.05)
            waited = time.monotonic() - began
        assert held is True  # asked and held: the worker records when its call began
        assert 0.05 <= waited < 0.9, "held past the lease's leave-by, toward the gate's 1 s"
    finally:
        client.close()
        gate.close()


def test_an_acquire_anchor_aims_at_the_acquiring_worker(build: Build, tmp_path: Path) -> None:
    """An acquire in flight has no lease: a worker kind's holders is its worker; the
    anchor records no grants to follow, and a node kind takes other targets (one)."""
    workers = FaultSpec(WorkerMarker.kind, "w", targets="holders", anchor=Anchor(call="acquire"))
    nodes = marker(targets="one", anchor=Anchor(call="acquire"))
    nemesis, _ = build(workers, nodes)
    message = call("acquire", process=1, token=None) | {"grants": []}
    assert nemesis.at_call(message) == [1, 2]
    first, second = starts(tmp_path)
    assert first.value and first.value["targets"] == ["w2"]
    assert first.value["anchor"]["call"] == "acquire" and first.value["anchor"]["token"] is None
    assert second.value and len(second.value["targets"]) == 1
