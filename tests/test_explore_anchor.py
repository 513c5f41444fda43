"""Explore's anchored draws: a model entry's `anchored` share of its faults start at a
moment of a lease instead of a clock time; the rest of the trial draws as it would without
it, and a model without it draws as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lockharness.core.errors import BadInput
from lockharness.faults.spec import FaultPlan
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.explore.generate.mutate import mutate
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.scenario import Scenario
from tests.test_explore_trials import assert_good_trial, client

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MODEL = """\
description: anchored latency beside timed kills
cluster: {{nodes: 3, persistence: aof-always}}
run: {{faults: 1..4}}
workload: {{extend: true}}
faults:
  - {{kind: latency, targets: [holders, one], duration: 10ms..200ms{anchored}}}
  - {{kind: kill, targets: [holder, one], duration: 50ms..300ms}}
"""


def _model(tmp_path: Path, anchored: str) -> Path:
    path = tmp_path / f"model{len(anchored)}.yaml"
    path.write_text(MODEL.format(anchored=anchored))
    return path


def _unanchored(trial: Trial) -> Scenario:
    """The trial's scenario but for its anchors and description (which names the model)."""
    plan = trial.scenario.faults
    faults = tuple(dataclasses.replace(f, anchor=None) for f in plan.faults)
    return dataclasses.replace(
        trial.scenario, faults=FaultPlan(faults, plan.timeline), description=""
    )


def test_an_entry_anchored_every_time_changes_only_the_anchor(tmp_path: Path) -> None:
    anchored = load_model(str(_model(tmp_path, ", anchored: 1")))
    timed = load_model(str(_model(tmp_path, "")))
    spec = client("redlock-extend")
    seen = set()
    for seed in range(120):
        trial = draw(anchored, spec, seed, 1)
        mutant = mutate(trial, anchored, spec, seed + 1000, 2, trial)
        check = tmp_path if seed % 30 == 0 else None
        assert_good_trial(anchored, trial, check)
        assert_good_trial(anchored, mutant, check)
        extend = trial.scenario.workload.extend
        for f in trial.scenario.faults.faults:
            if f.kind == "kill":
                assert f.anchor is None
                continue
            assert f.anchor is not None, (seed, f)
            if f.anchor.validity is not None:
                assert 0.5 <= f.anchor.validity <= 1.0
                seen.add("validity")
            else:
                assert f.anchor.call in (("extend", "release") if extend else ("release",))
                seen.add(str(f.anchor.call))
        # The model without `anchored` draws the same trial, but for the anchors (and for
        # a trial aimed at a lease's edge, which only anchored entries make: test_explore_aim).
        if "aimed at" not in trial.scenario.description:
            assert _unanchored(trial) == _unanchored(draw(timed, spec, seed, 1))
    assert seen == {"validity", "extend", "release"}


def test_an_anchored_fault_is_outside_an_entry_that_draws_none(tmp_path: Path) -> None:
    anchored = load_model(str(_model(tmp_path, ", anchored: 1")))
    timed = load_model(str(_model(tmp_path, "")))
    spec = client("redlock-extend")
    trial = next(
        t
        for t in (draw(anchored, spec, seed, 1) for seed in range(50))
        if any(f.kind == "latency" for f in t.scenario.faults.faults)
    )
    assert outside(anchored, trial.scenario) == []
    problems = outside(timed, trial.scenario)
    assert problems and all("anchored to a lease" in p for p in problems), problems
    assert outside(timed, _unanchored(trial)) == []


def test_a_share_anchors_about_that_share(tmp_path: Path) -> None:
    model = load_model(str(_model(tmp_path, ", anchored: 0.3")))
    latency = [
        f
        for seed in range(300)
        for f in draw(model, client("redlock"), seed, 1).scenario.faults.faults
        if f.kind == "latency"
    ]
    share = sum(f.anchor is not None for f in latency) / len(latency)
    assert 0.2 < share < 0.4, share


def test_a_share_outside_0_to_1_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"faults\[0\]\.anchored.*from 0 to 1"):
        load_model(str(_model(tmp_path, ", anchored: 1.5")))
