"""A trial of `lockharness explore` on real servers replays its schedule: run as an ordinary
scenario, its replay.yaml puts the same faults in effect on the same concrete targets at
about the same moments (the issue's "a trial replays its schedule")."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from lockharness.core.history import INFO, INVOKE, NEMESIS, stream_history
from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.run.runner import run_scenario
from lockharness.harness.scenario import ClientDoc, load_scenario
from lockharness.workloads.client_doc import read_client

MS = 1_000_000
S = 1_000_000_000
CLOSE_NS = 50 * MS  # "about the same moment": the nemesis's own lateness is a few ms


def short_trial() -> Trial:
    """The first single-instance trial for `single` from seed 1 on that runs at most 6 s and
    has faults of two kinds or more: a fixed seed, whatever the drawing code becomes."""
    model, client = load_model("single-instance"), read_client(ClientDoc(name="single"), None)
    for seed in range(1, 500):
        trial = draw(model, client, seed, 1)
        s = trial.scenario
        if s.duration_ns <= 6 * S and len({f.kind for f in s.faults.faults}) >= 2:
            assert outside(model, s) == []
            return trial
    raise AssertionError("no short single-instance trial with two kinds of faults")


def in_effect(run_dir: Path) -> list[tuple[str, str, tuple[str, ...], int]]:
    """(fault, kind, concrete targets, when decided) of each occurrence the nemesis put in
    effect, from the run's history, in order. The decision is what a replay repeats (at
    the moment the run decided it); how long a kill then takes to be in effect is the
    machine's (a CI run: 86 ms once, 10 ms on its replay)."""
    decided: dict[int, tuple[dict[str, Any], int]] = {}
    effects = []
    for e in stream_history(RunDir(run_dir).history):
        value = e.value or {}
        if e.process != NEMESIS or value.get("phase") != "start":
            continue
        if e.type == INVOKE:
            decided[value["occurrence"]] = (value, e.time)
        elif e.type == INFO and "skipped" not in value and "error" not in value:
            start, at = decided[value["occurrence"]]
            effects.append((e.f, start["kind"], tuple(sorted(start["targets"])), at))
    return sorted(effects, key=lambda x: x[3])


def test_a_trial_replays_its_schedule(tmp_path: Path, binaries: tuple[Path, Path]) -> None:
    trial = short_trial()
    store, quiet = tmp_path / "store", Console(file=io.StringIO())
    original = run_scenario(
        trial.scenario, store=store, binaries=Binaries(*binaries), console=quiet
    )
    assert not original.interrupted
    first = in_effect(original.run_dir)
    assert first, "the trial put no fault in effect: nothing to replay"
    assert {kind for _, kind, _, _ in first} <= {f.kind for f in trial.scenario.faults.faults}

    replay = load_scenario(RunDir(original.run_dir).replay)
    assert replay.seed == trial.scenario.seed and replay.client == trial.scenario.client
    assert outside(load_model("single-instance"), replay) == []  # a replay stays inside too
    again = run_scenario(replay, store=store, binaries=Binaries(*binaries), console=quiet)
    second = in_effect(again.run_dir)

    assert [x[:3] for x in second] == [x[:3] for x in first]
    late = [abs(b[3] - a[3]) for a, b in zip(first, second, strict=True)]
    assert max(late) <= CLOSE_NS, (late, first, second)
