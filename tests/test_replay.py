"""The schedule that ran, read from constructed nemesis events, and the scenario that replays
it (faults/replay.py, harness/run/replay.py); whole runs and their replays: test_replay_runs.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from lockharness.core.history import Event
from lockharness.core.occurrences import Occurrence, Said, Skipped
from lockharness.core.run_dir import RunDir
from lockharness.faults.replay import (
    ScheduleError,
    read_schedule,
    replay_plan,
    schedule_lines,
)
from lockharness.faults.schedule import build_schedule
from lockharness.faults.spec import TimelineEntry
from lockharness.harness.run.replay import replay_scenario, replay_yaml, run_schedule, write_replay
from lockharness.harness.run.runner import Execution, conclude
from lockharness.harness.scenario import Scenario, load_scenario, to_yaml

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
S = 1_000_000_000

SCENARIO = """\
description: faults of every sort whose targets are chosen at run time
expect: invalid
duration: 10s
seed: 42
cluster: {nodes: 5}
client: redlock
workload: {workers: 4, threads: 2, ttl: 3s}
faults:
  - kind: partition
    name: ring
    duration: 30s
    options: {mode: ring}
  - kind: kill
    name: restart-holder-node
    targets: holder-minority
    every: 1500ms
    start_after: 1s
    duration: 100ms
    probability: 0.9
  - kind: client-pause
    targets: holders
    every: 3s
    start_after: 2s
    duration: 2s
  - kind: latency
    targets: one
    every: 4s
    options: {latency: 50ms, workers: [w1]}
  - kind: pause
    targets: minority
    start_after: 5s
"""


class Events:
    """The nemesis's events of a run, written as faults/nemesis.py writes them."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, time: int, type_: str, f: str, value: dict[str, Any]) -> int:
        self.events.append(Event(len(self.events), "nemesis", type_, f, time, value=value))  # type: ignore[arg-type]
        return time

    def start(
        self,
        number: int,
        f: str,
        kind: str,
        targets: list[str],
        due: int,
        decided: int,
        in_effect: int,
        duration: int,
        **details: Any,
    ) -> None:
        base = {
            "phase": "start",
            "kind": kind,
            "targets": targets,
            "options": {},
            "occurrence": number,
            "at_ns": due,
            "duration_ns": duration,
        }
        self.add(decided, "invoke", f, base)
        self.add(in_effect, "info", f, {**base, **details, "decided_at": decided})

    def skip(self, number: int, f: str, kind: str, due: int, at: int, duration: int) -> None:
        value = {
            "phase": "start",
            "kind": kind,
            "targets": [],
            "options": {},
            "occurrence": number,
            "at_ns": due,
            "duration_ns": duration,
            "skipped": "no target (no lease held now)",
        }
        self.add(at, "info", f, value)

    def stop(self, number: int, f: str, kind: str, targets: list[str], at: int) -> None:
        base = {"phase": "stop", "kind": kind, "targets": targets, "occurrence": number}
        self.add(at, "invoke", f, base)
        self.add(at + MS, "info", f, {**base, "restarted": targets})


def a_run() -> Events:
    """A run of SCENARIO: the ring from 0 s, holder-minority kills (one skipped, one failed,
    two overlapping), a client pause of w2, a latency on n3, a failover and the heal."""
    e = Events()
    e.start(1, "ring", "partition", ["n1", "n2", "n3", "n4", "n5"], 0, 40_000, 90_000, 30 * S)
    e.skip(2, "restart-holder-node", "kill", 1 * S, 1 * S + 300_000, 100 * MS)
    e.start(3, "restart-holder-node", "kill", ["n2", "n3"], 2_500 * MS, 2_500_400_000,
            2_504_000_000, 100 * MS)  # fmt: skip
    e.start(4, "client-pause", "client-pause", ["w2"], 2 * S, 2_600_000_000, 2_601_000_000,
            2 * S)  # fmt: skip
    e.stop(3, "restart-holder-node", "kill", ["n2", "n3"], 2_700_000_000)
    e.add(3_100_000_000, "info", "failover", {"from": "n1", "to": "n2", "by": "sentinel"})
    e.start(5, "restart-holder-node", "kill", ["n3", "n4"], 4 * S, 4_000_300_000,
            4_002_000_000, 100 * MS, error="ClusterError: n4 would not die")  # fmt: skip
    e.start(6, "latency", "latency", ["n3"], 4 * S, 4_000_500_000, 4_001_000_000, 1 * S)
    e.stop(4, "client-pause", "client-pause", ["w2"], 4_600_000_000)
    # Overlapping occurrences of one fault: 7 starts before 5 is taken out.
    e.start(7, "restart-holder-node", "kill", ["n1", "n5"], 5_500 * MS, 5_500_200_000,
            5_503_000_000, 100 * MS)  # fmt: skip
    e.stop(5, "restart-holder-node", "kill", ["n3", "n4"], 5_600_000_000)
    e.stop(7, "restart-holder-node", "kill", ["n1", "n5"], 5_700_000_000)
    e.stop(6, "latency", "latency", ["n3"], 5_000_600_000)
    e.add(10 * S, "invoke", "heal", {"phase": "heal"})
    e.stop(1, "ring", "partition", ["n1", "n2", "n3", "n4", "n5"], 10_100_000_000)
    e.add(10_200_000_000, "info", "heal", {"phase": "heal", "problems": []})
    ordered = sorted(e.events, key=lambda event: event.time)
    e.events = [msgspec.structs.replace(event, index=i) for i, event in enumerate(ordered)]
    return e


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    path = tmp_path / "several.yaml"
    path.write_text(SCENARIO)
    return load_scenario(path)


def test_the_schedule_is_each_occurrence_that_ran_in_the_order_decided() -> None:
    schedule = read_schedule(a_run().events)
    shown = [(o.number, o.fault, o.targets, o.decided_ns) for o in schedule.ran]
    assert shown == [
        (1, "ring", ("n1", "n2", "n3", "n4", "n5"), 40_000),
        (3, "restart-holder-node", ("n2", "n3"), 2_500_400_000),
        (4, "client-pause", ("w2",), 2_600_000_000),
        (5, "restart-holder-node", ("n3", "n4"), 4_000_300_000),
        (6, "latency", ("n3",), 4_000_500_000),
        (7, "restart-holder-node", ("n1", "n5"), 5_500_200_000),
    ]
    kill = schedule.ran[1]
    assert kill == Occurrence(
        number=3,
        fault="restart-holder-node",
        kind="kill",
        category="kill-of-grant-node",
        targets=("n2", "n3"),
        index=4,  # its start's info
        due_ns=2_500 * MS,
        decided_ns=2_500_400_000,
        duration_ns=100 * MS,
        in_effect_ns=2_504_000_000,
        stop_decided_ns=2_700_000_000,
        stopped_ns=2_701_000_000,  # the stop's info: taken out
        started=Said(decided_at=2_500_400_000),
        ended=Said(restarted=("n2", "n3")),
    )
    failed = schedule.ran[3]
    assert failed.error == "ClusterError: n4 would not die" and failed.stopped_ns == 5_601_000_000
    # Overlapping: 7 was in effect before 5 was taken out; each keeps its own times.
    assert schedule.ran[5].in_effect_ns < schedule.ran[3].stopped_ns  # type: ignore[operator]
    assert schedule.ran[5].stopped_ns == 5_701_000_000
    assert schedule.skipped == (Skipped(2, "restart-holder-node", 1 * S, 1 * S + 300_000),)


def test_an_occurrence_the_run_ended_before_it_took_effect_has_no_times() -> None:
    e = Events()
    value = {"phase": "start", "kind": "kill", "targets": ["n1"], "options": {}}
    e.add(7, "invoke", "kill", {**value, "occurrence": 1, "at_ns": 5, "duration_ns": S})
    (only,) = read_schedule(e.events).ran
    assert (only.decided_ns, only.in_effect_ns, only.stopped_ns) == (7, None, None)


def test_the_replay_plan_names_each_occurrence_on_its_targets_when_it_was_decided(
    scenario: Scenario,
) -> None:
    schedule = read_schedule(a_run().events)
    plan = replay_plan(scenario.faults, schedule.ran)
    # The faults that ran, with their options; `pause` never ran, so it is left out.
    original = {f.name: f for f in scenario.faults.faults}
    assert [f.name for f in plan.faults] == [
        "ring",
        "restart-holder-node",
        "client-pause",
        "latency",
    ]
    for f in plan.faults:
        assert (f.every_ns, f.start_after_ns, f.probability) == (None, 0, 1.0)
        assert f.options == original[f.name].options and f.kind == original[f.name].kind
        assert (
            f.targets == original[f.name].targets and f.duration_ns == original[f.name].duration_ns
        )
    assert plan.timeline == (
        TimelineEntry(0, "ring", ("n1", "n2", "n3", "n4", "n5"), 30 * S),  # due at 0: stays 0
        TimelineEntry(2_500_400_000, "restart-holder-node", ("n2", "n3"), 100 * MS),
        TimelineEntry(2_600_000_000, "client-pause", ("w2",), 2 * S),
        TimelineEntry(4_000_300_000, "restart-holder-node", ("n3", "n4"), 100 * MS),
        TimelineEntry(4_000_500_000, "latency", ("n3",), 1 * S),
        TimelineEntry(5_500_200_000, "restart-holder-node", ("n1", "n5"), 100 * MS),
    )


@pytest.mark.parametrize("seed", [1, 42, 99])
def test_the_replay_plan_schedules_exactly_the_occurrences_whatever_the_seed(
    scenario: Scenario, seed: int
) -> None:
    ran = read_schedule(a_run().events).ran
    schedule = build_schedule(replay_plan(scenario.faults, ran), seed, scenario.duration_ns)
    assert [(o.at_ns, o.fault, o.targets, o.duration_ns) for o in schedule] == [
        (0 if o.due_ns == 0 else o.decided_ns, o.fault, o.targets, o.duration_ns) for o in ran
    ]


def test_a_run_without_occurrences_replays_without_faults(scenario: Scenario) -> None:
    e = Events()
    e.skip(1, "restart-holder-node", "kill", S, S + 10, 100 * MS)
    e.add(2 * S, "invoke", "heal", {"phase": "heal"})
    schedule = read_schedule(e.events)
    assert schedule.ran == () and len(schedule.skipped) == 1
    plan = replay_plan(scenario.faults, schedule.ran)
    assert plan.faults == () and plan.timeline == ()
    assert build_schedule(plan, 1, scenario.duration_ns) == []


def test_events_without_occurrence_numbers_are_refused() -> None:
    e = Events()
    e.add(5, "invoke", "kill", {"phase": "start", "kind": "kill", "targets": ["n1"]})
    with pytest.raises(ScheduleError, match="no occurrence number"):
        read_schedule(e.events)


def test_a_start_that_does_not_say_how_long_it_was_to_last_is_refused() -> None:
    e = Events()
    value = {"phase": "start", "kind": "kill", "targets": ["n1"], "occurrence": 1, "at_ns": 0}
    e.add(5, "invoke", "kill", value)
    with pytest.raises(ScheduleError, match="does not say its duration_ns"):
        read_schedule(e.events)


def test_a_stop_of_an_occurrence_that_never_started_is_refused() -> None:
    e = Events()
    e.stop(3, "kill", "kill", ["n1"], 5)
    with pytest.raises(ScheduleError, match="occurrence 3 never started"):
        read_schedule(e.events)


def test_a_fault_the_plan_does_not_have_is_refused(scenario: Scenario) -> None:
    e = Events()
    e.start(1, "kill-holder", "kill", ["n1"], S, S + 1, S + 2, S)
    with pytest.raises(ScheduleError, match="kill-holder"):
        replay_plan(scenario.faults, read_schedule(e.events).ran)


def test_the_comment_lists_each_occurrence_as_it_ran() -> None:
    lines = schedule_lines(read_schedule(a_run().events))
    assert lines == [
        "0.000 s - 10.101 s  ring (partition)  [n1, n2, n3, n4, n5]",
        "1.000 s  restart-holder-node  skipped: no target then (not replayed)",
        "2.504 s - 2.701 s  restart-holder-node (kill)  [n2, n3]",
        "2.601 s - 4.601 s  client-pause  [w2]",
        "4.002 s - 5.601 s  restart-holder-node (kill)  [n3, n4]  start failed: "
        "ClusterError: n4 would not die",
        "4.001 s - 5.002 s  latency  [n3]",
        "5.503 s - 5.701 s  restart-holder-node (kill)  [n1, n5]",
    ]


def test_replay_yaml_reads_back_as_the_replaying_scenario(
    tmp_path: Path, scenario: Scenario
) -> None:
    schedule = read_schedule(a_run().events)
    text = replay_yaml(scenario, tmp_path / "run", schedule)
    comment = [line for line in text.splitlines() if line.startswith("#")]
    assert comment[:2] == ["# Replays the faults of the run in", f"#   {tmp_path / 'run'}"]
    assert "#   2.504 s - 2.701 s  restart-holder-node (kill)  [n2, n3]" in comment
    path = tmp_path / "replay.yaml"
    path.write_text(text)
    replay = load_scenario(path)
    expected = replay_scenario(scenario, tmp_path / "run", schedule)
    assert replay == expected
    # The same run but for its faults: seed, cluster, client, workload, expectation.
    assert dataclasses.replace(replay, faults=scenario.faults, description="") == (
        dataclasses.replace(scenario, description="")
    )
    assert replay.name == scenario.name and replay.seed == 42
    assert f"Replays the fault schedule of the run in {tmp_path / 'run'}" in replay.description
    # Written again, it is the same file: nothing lost on the way through YAML.
    assert to_yaml(dataclasses.replace(replay, source="")) == to_yaml(expected)
    entries = yaml.safe_load(text)["timeline"]
    assert entries[1] == {
        "at": "2500400us",
        "fault": "restart-holder-node",
        "targets": ["n2", "n3"],
        "duration": "100ms",
    }


def test_write_replay_reads_the_nemesis_shard(tmp_path: Path, scenario: Scenario) -> None:
    files = RunDir(tmp_path)
    files.nemesis_shard.write_bytes(b"".join(e.to_line() for e in a_run().events))
    assert run_schedule(tmp_path) == read_schedule(a_run().events)
    write_replay(scenario, tmp_path)
    assert len(load_scenario(files.replay).faults.timeline) == 6


def test_a_run_without_a_nemesis_shard_replays_nothing(tmp_path: Path, scenario: Scenario) -> None:
    write_replay(scenario, tmp_path)
    text = RunDir(tmp_path).replay.read_text()
    assert "#   (no fault occurrence ran)" in text
    assert load_scenario(RunDir(tmp_path).replay).faults.faults == ()


def test_conclude_writes_replay_yaml(tmp_path: Path, scenario: Scenario) -> None:
    files = RunDir(tmp_path)
    files.nemesis_shard.write_bytes(b"".join(e.to_line() for e in a_run().events))
    outcome = conclude(scenario, tmp_path, Execution(), {})
    assert load_scenario(files.replay).faults == replay_plan(
        scenario.faults, read_schedule(a_run().events).ran
    )
    assert not any("replay" in reason for reason in outcome.result.reasons)


def test_a_replay_that_cannot_be_written_is_a_reason_never_the_verdict(
    tmp_path: Path, scenario: Scenario
) -> None:
    e = Events()
    e.add(5, "invoke", "kill", {"phase": "start", "kind": "kill", "targets": ["n1"]})
    outcomes = []
    for name, events in (("unreadable", e.events), ("readable", [])):
        files = RunDir(tmp_path / name)
        files.path.mkdir()
        files.nemesis_shard.write_bytes(b"".join(event.to_line() for event in events))
        outcomes.append(conclude(scenario, files.path, Execution(), {}))
        assert files.results.exists()  # the rest of the conclusion went on
    unreadable, readable = outcomes
    assert not RunDir(tmp_path / "unreadable").replay.exists()
    (reason,) = [r for r in unreadable.result.reasons if RunDir.REPLAY in r]
    assert "no occurrence number" in reason
    assert unreadable.result.verdict == readable.result.verdict


def test_the_bench_table_shows_the_replay_reproduction_rate() -> None:
    from bench.scenarios import summary_rows

    def runs(verdicts: list[str]) -> list[dict[str, Any]]:
        return [
            {"verdict": v, "as_expected": v == "invalid", "first_violation_s": 1.0,
             "cycles_per_s": 5.0}
            for v in verdicts
        ]  # fmt: skip

    report = {
        "scenarios": {
            "breaks": {
                "expect": "invalid",
                "runs": runs(["invalid", "invalid", "valid"]),
                "replays": [{"seed": 1, "verdict": "invalid"}, {"seed": 2, "verdict": "valid"}],
            },
            "holds": {"expect": "valid", "runs": runs(["valid"]), "replays": []},
        }
    }
    head, breaks, holds = summary_rows(report)
    assert head[-1] == "replay reproduced"
    assert breaks[-1] == "1/2" and holds[-1] == "-"
