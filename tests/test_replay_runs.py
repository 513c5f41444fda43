"""Whole runs on real servers and their replays: a run whose targets are chosen while it runs
(holder-minority, holders) writes replay.yaml, and running that injects the same faults on
the same targets, each due at the moment the original decided it."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED, EXIT_NOT_AS_EXPECTED, EXIT_UNKNOWN
from lockharness.core.history import INVOKE, NEMESIS, Event, stream_history
from lockharness.core.run_dir import RunDir
from lockharness.faults.spec import Anchor
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.run.runner import run_scenario
from lockharness.harness.scenario import load_scenario, with_overrides
from tests.conftest import lockharness


def starts(run_dir: Path) -> list[Event]:
    """The nemesis's start decisions (a skipped occurrence has none: nothing was injected)."""
    return [
        e
        for e in stream_history(RunDir(run_dir).nemesis_shard)
        if e.process == NEMESIS and e.type == INVOKE and (e.value or {}).get("phase") == "start"
    ]


def shape(e: Event) -> tuple[str, str, list[str], int]:
    value = e.value or {}
    return e.f, value["kind"], value["targets"], value["duration_ns"]


@pytest.mark.parametrize(
    "name",
    [
        "redlock-restart-no-persistence",  # a ring from 0 s, kills of holder-minority nodes
        "client-gc-pause",  # pauses of the holders' workers
    ],
)
def test_a_replay_injects_the_same_faults_on_the_same_targets(
    tmp_path: Path, binaries: tuple[Path, Path], name: str
) -> None:
    # client-gc-pause for 8 s, its pauses anchored to a fifth of a lease's validity: a
    # pause of the holders at a clock time finds none when it lands between two leases,
    # which a loaded machine makes likelier. Anchored, each lands on a holder, and the
    # replay names each at the time it was decided, as for a timed one.
    seconds = 8 if name == "client-gc-pause" else 6
    scenario = with_overrides(load_scenario(name), duration_ns=seconds * 10**9, seed=3)
    if name == "client-gc-pause":
        plan = scenario.faults
        anchored = tuple(replace(f, anchor=Anchor(validity=0.2)) for f in plan.faults)
        scenario = replace(scenario, faults=replace(plan, faults=anchored))
    store = tmp_path / "store"
    original = run_scenario(
        scenario, store=store, binaries=Binaries(*binaries), console=Console(file=io.StringIO())
    )
    decided = starts(original.run_dir)
    assert decided, "the original run injected nothing: no schedule to replay"
    replay = RunDir(original.run_dir).replay
    assert f"#   {original.run_dir}\n" in replay.read_text()

    # Through the CLI, as a user would: it exits as a run does, by its verdict.
    done = lockharness("run", str(replay), "--store", str(store), cwd=tmp_path)
    again = (store / "latest").resolve()
    assert again != original.run_dir
    results = json.loads(RunDir(again).results.read_text())
    expected_exit = (
        EXIT_AS_EXPECTED
        if results["as_expected"]
        else EXIT_UNKNOWN
        if results["verdict"] == "unknown"
        else EXIT_NOT_AS_EXPECTED
    )
    assert done.returncode == expected_exit, done.stdout + done.stderr
    assert results["seed"] == 3 and results["scenario"] == name

    replayed = starts(again)
    assert [shape(e) for e in replayed] == [shape(e) for e in decided]
    # Each due when the original decided it (one due at the start stays at 0 s): exact,
    # since the replay's schedule is written down, not drawn.
    due = [(e.value or {})["at_ns"] for e in replayed]
    assert due == [e.time if (e.value or {})["at_ns"] else 0 for e in decided]
