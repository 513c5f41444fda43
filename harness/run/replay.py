"""A run's replay.yaml: its resolved scenario with the fault schedule that ran, so that
`lockharness run RUN_DIR/replay.yaml` injects the same faults at the same moments on the
same nodes and workers (faults.replay reads the schedule from the nemesis's events).

Above the YAML, a comment lists each occurrence as it ran, for a reader.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lockharness.core.history import stream_history
from lockharness.core.run_dir import RunDir
from lockharness.faults.replay import Schedule, read_schedule, replay_plan, schedule_lines
from lockharness.harness.scenario import Scenario, to_yaml


def run_schedule(run_dir: Path) -> Schedule:
    """The schedule that ran, streamed from the nemesis's shard (none: nothing ran)."""
    shard = RunDir(run_dir).nemesis_shard
    if not shard.exists():
        return Schedule()
    return read_schedule(stream_history(shard, notes=[]))  # a torn last line: not an event


def replay_scenario(scenario: Scenario, run_dir: Path, schedule: Schedule) -> Scenario:
    """``scenario`` (as it ran: seed, cluster, client, workload, expectations) with the
    plan that replays ``schedule``."""
    description = (
        f"Replays the fault schedule of the run in {run_dir} (seed {scenario.seed}): the "
        "same faults at the same moments on the same nodes and workers.\n\n"
        f"{scenario.description}"
    )
    return dataclasses.replace(
        scenario,
        description=description,
        faults=replay_plan(scenario.faults, schedule.ran),
        source="",
    )


def replay_yaml(scenario: Scenario, run_dir: Path, schedule: Schedule) -> str:
    return _replay_text(replay_scenario(scenario, run_dir, schedule), run_dir, schedule)


def _replay_text(replay: Scenario, run_dir: Path, schedule: Schedule) -> str:
    header = [
        "Replays the faults of the run in",
        f"  {run_dir}",
        "each occurrence as it ran: in effect - taken out (since the run's start), the fault,",
        "its targets. Who holds the lock when a fault lands depends on timing, which a replay",
        'does not repeat (docs/scenarios.md, "Replays").',
    ]
    lines = schedule_lines(schedule) or ["(no fault occurrence ran)"]
    comment = "".join(f"# {line}\n" for line in header) + "".join(f"#   {x}\n" for x in lines)
    return comment + to_yaml(replay)


def write_replay(scenario: Scenario, run_dir: Path) -> Scenario:
    """Write RUN_DIR/replay.yaml and hand back the scenario it holds; raises what reading
    the shard or writing the file raises (OSError, HistoryError, ScheduleError), for the
    caller to make a reason of."""
    schedule = run_schedule(run_dir)
    replay = replay_scenario(scenario, run_dir, schedule)
    RunDir(run_dir).replay.write_text(_replay_text(replay, run_dir, schedule), encoding="utf-8")
    return replay
