"""A trial leaves its lock room to work (harness/explore/generate/outage.py): the faults that
take the nodes a lease needs away from every client are planned for at most a third of the
run, shortened within their entries, and the rest of the trial is as drawn."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import msgspec
import pytest

from lockharness.faults.registry import options_type
from lockharness.faults.spec import Anchor, FaultSpec
from lockharness.harness.explore.generate import draw as draw_module
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.model import FaultModel, load_model
from lockharness.harness.explore.generate.mutate import mutate
from lockharness.harness.explore.generate.outage import BUDGET, cuts_off, planned_share
from lockharness.harness.scenario import Scenario, load_scenario
from tests.test_explore_trials import assert_good_trial, client

pytestmark = pytest.mark.unit  # no server

MS, S = 1_000_000, 1_000_000_000


def _spec(kind: str, targets: str = "one", **options: str) -> FaultSpec:
    return FaultSpec(kind, kind, targets, options=options_type(kind)(**options))


def test_which_faults_cut_the_lock_off() -> None:
    # On one node, any kill, pause or isolation takes the only node; on five, a majority.
    assert cuts_off(_spec("kill"), 1) and cuts_off(_spec("pause"), 1)
    assert not cuts_off(_spec("kill"), 5) and not cuts_off(_spec("kill", "minority"), 5)
    assert cuts_off(_spec("kill", "majority"), 5) and cuts_off(_spec("kill", "holders"), 5)
    assert cuts_off(_spec("partition"), 1)  # isolate
    assert cuts_off(_spec("partition", mode="cut-worker", workers="all"), 1)
    assert not cuts_off(_spec("partition", mode="cut-worker", workers="some"), 1)
    assert not cuts_off(_spec("latency"), 1) and not cuts_off(_spec("client-pause"), 1)


def _scenario(tmp_path: Path) -> Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(
        "description: d\nexpect: valid\nduration: 10s\nclient: single\ncluster: {nodes: 1}\n"
        "workload: {ttl: 1s, hold_min: 1s, hold_max: 1s}\n",
        encoding="utf-8",
    )
    return load_scenario(path)


def test_the_planned_share_of_timed_and_anchored_faults(tmp_path: Path) -> None:
    s = _scenario(tmp_path)
    kill = _spec("kill")
    every = FaultSpec("kill", "k", "one", duration_ns=S, start_after_ns=S, every_ns=2 * S)
    assert planned_share(s, [every]) == pytest.approx(0.5)  # at 1, 3, 5, 7, 9 s for 1 s
    once = FaultSpec("kill", "k", "one", duration_ns=3 * S, start_after_ns=8 * S)
    assert planned_share(s, [once]) == pytest.approx(0.2)  # cut off by the run's end
    late = FaultSpec("kill", "k", "one", duration_ns=S, start_after_ns=10 * S)
    assert planned_share(s, [late]) == 0
    anchored = FaultSpec(
        "kill", "a", "one", duration_ns=S // 2, anchor=Anchor(validity=0.9), options=kill.options
    )
    # Each lease held 1 s, then the node gone 0.5 s: a third of the time.
    assert planned_share(s, [anchored]) == pytest.approx(1 / 3)
    assert planned_share(s, [every, anchored]) == pytest.approx(0.5 + 1 / 3)
    # A kill keeps its node down for the cluster's restart delay, if longer; a pause not.
    delayed = dataclasses.replace(
        s, cluster=msgspec.structs.replace(s.cluster, restart_delay_ns=2 * S)
    )
    brief = FaultSpec("kill", "k", "one", duration_ns=100 * MS, start_after_ns=S, every_ns=4 * S)
    assert planned_share(s, [brief]) == pytest.approx(0.03)  # at 1, 5, 9 s for 100 ms
    assert planned_share(delayed, [brief]) == pytest.approx(0.6)  # for 2 s each
    paused = dataclasses.replace(brief, kind="pause")
    assert planned_share(delayed, [paused]) == pytest.approx(0.03)


def _least(model: FaultModel, s: Scenario) -> dict[str, Fraction]:
    return {c.kind: c.duration.span(s.workload.ttl_ns)[0] for c in model.faults}


@pytest.mark.parametrize(
    ("which", "model_name"), [("single", "single-instance"), ("redlock", "redlock")]
)
def test_fresh_trials_leave_the_lock_room_inside_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str, model_name: str
) -> None:
    model, spec = load_model(model_name), client(which)
    trials = [draw(model, spec, seed, 1) for seed in range(120)]
    monkeypatch.setattr(draw_module, "leave_room", lambda s, faults, drawn, kept: list(faults))
    raw = [draw(model, spec, seed, 1) for seed in range(120)]
    shortened = 0
    for seed, (trial, as_drawn) in enumerate(zip(trials, raw, strict=True)):
        assert_good_trial(model, trial, tmp_path if seed % 40 == 0 else None)
        s, r = trial.scenario, as_drawn.scenario
        cutting = [f for f in s.faults.faults if cuts_off(f, s.cluster.nodes)]
        if planned_share(r, [f for f in r.faults.faults if cuts_off(f, r.cluster.nodes)]) <= BUDGET:
            assert s == r  # within the budget as drawn: left as drawn
            continue
        for f, g in zip(s.faults.faults, r.faults.faults, strict=True):
            assert f.duration_ns <= g.duration_ns
            assert f == g or (
                f in cutting and dataclasses.replace(f, duration_ns=g.duration_ns) == g
            )
        shortened += s != r
        if planned_share(s, cutting) > BUDGET + 1e-9:  # only where nothing can be shorter
            least = _least(model, s)
            aimed = "aimed at" in s.description
            assert aimed or all(f.duration_ns <= least[f.kind] + MS for f in cutting), s
    assert shortened >= (10 if model_name == "single-instance" else 0)


def test_mutated_trials_leave_the_lock_room_too(tmp_path: Path) -> None:
    model, spec = load_model("single-instance"), client("single")
    for seed in range(60):
        child = mutate(draw(model, spec, seed, 1), model, spec, seed + 1000, 2, None)
        assert_good_trial(model, child, None)
        s = child.scenario
        cutting = [f for f in s.faults.faults if cuts_off(f, s.cluster.nodes)]
        least = _least(model, s)
        assert planned_share(s, cutting) <= BUDGET + 1e-9 or all(
            f.duration_ns <= least[f.kind] + MS for f in cutting
        )
